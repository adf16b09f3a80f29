package main

import (
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func (c *cli) blobCmd() *cobra.Command {
	return group("blob", "Add, list, get and remove blobs in the node's store",
		c.blobAddCmd(), c.blobLsCmd(), c.blobGetCmd(), c.blobRmCmd())
}

func (c *cli) blobAddCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add FILE",
		Short: "Store FILE as a blob; print its CID and size",
		Long: `Store FILE in the node's blob store as a UnixFS file (CIDv1, BLAKE3, 1 MiB
chunks) and print its CID and size in bytes. A file larger than
blobs.max_blob_bytes, or past blobs.quota_bytes, is refused and nothing is
stored.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			cl, err := c.client()
			if err != nil {
				return err
			}
			bi, err := cl.AddBlob(cmd.Context(), f)
			if err != nil {
				return c.apiError(err)
			}
			if asJSON {
				return c.printJSON(bi)
			}
			fmt.Fprintf(c.stdout, "%s %d\n", bi.CID, bi.Size)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (c *cli) blobLsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the blobs stored here: CID and size",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := c.client()
			if err != nil {
				return err
			}
			list, err := cl.Blobs(cmd.Context())
			if err != nil {
				return c.apiError(err)
			}
			if asJSON {
				return c.printJSON(list)
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "CID\tSIZE")
			for _, b := range list {
				fmt.Fprintf(tw, "%s\t%d\n", b.CID, b.Size)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (c *cli) blobGetCmd() *cobra.Command {
	var (
		size int64
		out  string
	)
	cmd := &cobra.Command{
		Use:   "get CID --size N -o FILE",
		Short: "Write a stored blob to FILE, if it is complete and exactly N bytes",
		Long: `Write the blob CID to FILE. The blob is used only when it is complete and
exactly of the declared size N (ADR 0014); otherwise nothing is written.
Fetching blobs from other nodes comes with the blob exchange.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if size < 0 {
				return usageErrorf("--size N is required: the blob's declared size in bytes")
			}
			if out == "" {
				return usageErrorf("-o FILE is required")
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			// Write to a temporary file beside FILE and rename it at the
			// end, so FILE never holds a partial blob.
			tmp, err := os.CreateTemp(filepath.Dir(out), ".wats-blob-*")
			if err != nil {
				return err
			}
			defer os.Remove(tmp.Name())
			err = cl.GetBlob(cmd.Context(), args[0], uint64(size), tmp)
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return c.apiError(err)
			}
			fi, err := os.Stat(tmp.Name())
			if err != nil {
				return err
			}
			if fi.Size() != size {
				return fmt.Errorf("the daemon sent %d bytes of a %d-byte blob; nothing written", fi.Size(), size)
			}
			return os.Rename(tmp.Name(), out)
		},
	}
	cmd.Flags().Int64Var(&size, "size", -1, "the blob's declared size in bytes (required)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the file to write (required)")
	return cmd
}

func (c *cli) blobRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm CID",
		Short: "Remove a blob from the store (unpin it)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.client()
			if err != nil {
				return err
			}
			if err := cl.RemoveBlob(cmd.Context(), args[0]); err != nil {
				return c.apiError(err)
			}
			fmt.Fprintf(c.stdout, "removed %s\n", args[0])
			return nil
		},
	}
}
