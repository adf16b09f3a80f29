package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/spf13/cobra"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/internal/humanize"
	"github.com/wats-network/wats/store"
)

func (c *cli) blobCmd() *cobra.Command {
	return group("blob", "Add, list, get and remove blobs in the node's store",
		c.blobAddCmd(), c.blobLsCmd(), c.blobGetCmd(), c.blobRmCmd())
}

func (c *cli) blobAddCmd() *cobra.Command {
	var (
		asJSON, upload bool
		name           string
	)
	cmd := &cobra.Command{
		Use:   "add FILE [--name NAME] [--json] [--upload]",
		Short: "Store FILE as a blob named by its file name; print it as CID:SIZE:NAME",
		Long: `Store FILE in the node's blob store as a UnixFS file (CIDv1, BLAKE3, 1 MiB
chunks) and print it as CID:SIZE:NAME (SIZE in bytes, NAME the blob's name):
the form 'events add --blob' takes, and 'replicate' (which ignores NAME). A
file larger than blobs.max_blob_bytes, or past blobs.quota_bytes, is refused
and nothing is stored. FILE must be a regular file: a directory is not
stored (store its files one by one, or an archive of it).

The node keeps the blob under a name, which 'blob ls' shows: FILE's base
name, or NAME with --name. A name follows the rule of a blob's name in an
event: at most 255 bytes of UTF-8, no control characters. A --name that
breaks it is a usage error; a base name that breaks it (a newline in the
file name, bytes that are not UTF-8) is dropped, with a note on stderr,
and the blob is stored without a name (CID:SIZE printed). Adding a blob
the node holds already gives it the new name.

The command opens FILE and passes it open to the daemon over its socket; the
daemon reads it through that descriptor, so it reads only what you could
(ADR 0036). Where the daemon cannot take it (a socket forwarded from another
host) the command sends the file's bytes instead, as --upload does. On a
terminal a progress bar shows the import.`,
		Example: `  ref=$(wats blob add report.pdf)
  wats events add --kind file --blob "$ref"`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			blobName, err := c.addName(cmd.Flags().Changed("name"), name, args[0])
			if err != nil {
				return err
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			bi, err := c.addFile(cmd.Context(), cl, args[0], "blob add", upload, blobName)
			if err != nil {
				return err
			}
			bi.Name = blobName // an older daemon's answer holds none
			if asJSON {
				return c.printJSON(bi)
			}
			if blobName == "" {
				fmt.Fprintf(c.stdout, "%s:%d\n", bi.CID, bi.Size)
				return nil
			}
			fmt.Fprintf(c.stdout, "%s:%d:%s\n", bi.CID, bi.Size, blobName)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the blob's name (default: FILE's base name)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&upload, "upload", false, "send the file's bytes over the socket rather than the open file")
	return cmd
}

// addName is the name `blob add` gives the blob of the file at path: the
// --name flag's value if set (given), else path's base name. A name must
// keep the rule of an event's blob name (eventlog.CheckBlobName, which
// the daemon applies too): a --name that breaks it is a usage error; a
// base name that does is dropped ("", no name) with a note on stderr, as
// a file name is not the operator's to fix.
func (c *cli) addName(given bool, flag, path string) (string, error) {
	if given {
		if reason := nameProblem(flag); reason != "" {
			return "", usageErrorf("--name %q: %s (a blob's name is at most %d bytes of UTF-8, without control characters)",
				flag, reason, eventlog.MaxBlobNameBytes)
		}
		return flag, nil
	}
	base := filepath.Base(path)
	if reason := nameProblem(base); reason != "" {
		fmt.Fprintf(c.stderr, "note: the file name %q is not kept as the blob's name (%s); give one with --name\n", base, reason)
		return "", nil
	}
	return base, nil
}

// nameProblem is what is wrong with a blob's name by
// eventlog.CheckBlobName ("not valid UTF-8", "256 bytes over 255"), ""
// for nothing.
func nameProblem(name string) string {
	err := eventlog.CheckBlobName(name)
	var ve *eventlog.ValidationError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// addFile stores the regular file at path as a blob named name ("" for
// none, checked already), passed open to the daemon or, with upload or
// where it cannot take it, uploaded (api.Client.AddFile), with a progress
// bar on stderr when it is a terminal. cmd names the command for the
// error about a non-file.
func (c *cli) addFile(ctx context.Context, cl *api.Client, path, cmd string, upload bool, name string) (*api.BlobInfo, error) {
	regular := func(fi os.FileInfo, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s: no such file", path)
		case err == nil && !fi.Mode().IsRegular():
			err = fmt.Errorf("%s is a directory or another non-file: %s takes a file", path, cmd)
		}
		return err
	}
	// Stat first: opening a FIFO would block until a writer came.
	if err := regular(os.Stat(path)); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat() // what was opened, whatever path names now
	if err := regular(fi, err); err != nil {
		return nil, err
	}
	opts := &api.AddFileOptions{Upload: upload, Name: name}
	bar := c.byteBar(fi.Size(), "add "+filepath.Base(path))
	if bar != nil {
		opts.Progress = func(n uint64) { _ = bar.Set64(min(int64(n), bar.GetMax64())) }
	}
	bi, err := cl.AddFile(ctx, f, opts)
	endBar(c.stderr, bar, err)
	var ae *api.Error
	if errors.As(err, &ae) && ae.Status == http.StatusRequestEntityTooLarge {
		return nil, &daemonError{msg: strings.TrimPrefix(ae.Message, "blobs: ") + "; " + c.tooLargeHint(), err: err}
	}
	if err != nil {
		return nil, c.apiError(err)
	}
	return bi, nil
}

// tooLargeHint says what to do about a blob refused for its size: the
// bounds are keys of the repo's config, read at the daemon's start.
func (c *cli) tooLargeHint() string {
	set := c.hint(append([]string{"config", "set", "KEY", "VALUE"}, c.repoHint()...)...)
	return fmt.Sprintf("raise the bound it names in %s (%s) and restart the daemon", configPath(c.repoDir), set)
}

func (c *cli) blobLsCmd() *cobra.Command {
	var asJSON, partial, exact bool
	cmd := &cobra.Command{
		Use:   "ls [--partial] [--bytes] [--json]",
		Short: "List the blobs stored here, newest first: when added, size, name, CID",
		Long: `List the complete blobs of the node's store, the most recently added first (as
'peers cache' lists the most recently seen first), a row each: when it was
added (UTC; "-" for a blob stored by a version that did not keep the time,
listed last), its size in KiB, MiB, GiB (--bytes: in bytes, what 'blob get
--size' takes; --json has both the CID and the size in bytes) and its name,
cut to fit in 100 columns; under it, indented, its CID.

A blob's name is the one 'blob add' gave it on this node (the file's base
name, or --name), else the one the first event of the log that names the
blob with a name gives it ("-" for neither): the operator's choice here
comes before the network's (docs/adr/0051).

With --partial it lists the partial blobs instead: what fetches that did not
complete (a provider gone, a restart, a crash) verified and stored, never
served, kept for the next 'blob get' of the blob to go on from, within
blobs.max_partial_bytes and blobs.max_partial_age (docs/adr/0054): when a byte
was last added (UTC), the bytes held of the declared size, the bytes on disk,
whether a fetch of it runs, and, under it, its CID. 'blob rm CID' removes one.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if partial {
				return c.listPartials(cmd, asJSON, exact)
			}
			list, err := askOrRead(c, cmd, (*api.Client).Blobs, func(o *store.Offline) ([]api.BlobInfo, error) { return o.Blobs(), nil })
			if err != nil {
				return err
			}
			if asJSON {
				return c.printJSON(list)
			}
			_, err = io.WriteString(c.stdout, blobsText(list, exact))
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (sizes in bytes)")
	cmd.Flags().BoolVar(&exact, "bytes", false, "show sizes in bytes rather than KiB, MiB, GiB")
	cmd.Flags().BoolVar(&partial, "partial", false, "list the partial blobs kept from fetches that did not complete")
	return cmd
}

// maxBlobNameInRow is the most runes of a blob's name that a row of
// `blob ls` shows, cut with "…" past it (--json has it whole): what is
// left of maxHelpWidth after the time added and the widest size (16
// digits: 2^53 bytes, core.MaxSafeInt).
const maxBlobNameInRow = maxHelpWidth - 16 - 2 - 16 - 2

// blobsText lays out `blob ls`: a row a blob (the time added, to the
// minute in UTC; its size, in binary units or, with exact, in bytes; its
// name, "-" for none, cut to maxBlobNameInRow), then, indented, its full
// CID, which 'blob get' and 'blob rm' take; every line fits in
// maxHelpWidth columns.
func blobsText(list []api.BlobInfo, exact bool) string {
	return rowsAndDetails("ADDED (UTC)\tSIZE\tNAME", len(list), func(i int) string {
		b := list[i]
		return fmt.Sprintf("%s\t%s\t%s", whenMinute(b.Added), sizeText(b.Size, exact), cutRunes(printable(dash(b.Name)), maxBlobNameInRow))
	}, func(i int) []string { return []string{list[i].CID} })
}

// sizeText is n bytes in binary units (humanize.Bytes), or with exact in
// bytes.
func sizeText(n uint64, exact bool) string {
	if exact {
		return strconv.FormatUint(n, 10)
	}
	return humanize.Bytes(n)
}

// listPartials prints the partial blobs (blob ls --partial), sizes in
// bytes with exact.
func (c *cli) listPartials(cmd *cobra.Command, asJSON, exact bool) error {
	list, err := askOrRead(c, cmd, (*api.Client).PartialBlobs, func(o *store.Offline) ([]api.PartialBlob, error) { return o.PartialBlobs(), nil })
	if err != nil {
		return err
	}
	if asJSON {
		return c.printJSON(list)
	}
	_, err = io.WriteString(c.stdout, partialsText(list, exact))
	return err
}

// partialsText lays out `blob ls --partial` as blobsText does `blob ls`:
// a row a partial blob (when a byte was last added, the bytes held of the
// declared size, the bytes on disk, whether a fetch of it runs), its CID
// under it.
func partialsText(list []api.PartialBlob, exact bool) string {
	return rowsAndDetails("PROGRESSED (UTC)\tHELD\tSIZE\tON DISK\tFETCHING", len(list), func(i int) string {
		p := list[i]
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", whenMinute(p.Progressed), sizeText(p.Held, exact), sizeText(p.Size, exact),
			sizeText(p.Bytes, exact), yesNo(p.Fetching))
	}, func(i int) []string { return []string{list[i].CID} })
}

// resuming is what blob get says of a fetch that goes on from held bytes
// (docs/adr/0054): "resuming: 256.0 MiB of 512.0 MiB already held".
func resuming(held, size uint64) string {
	return fmt.Sprintf("resuming: %s of %s already held", humanize.Bytes(held), humanize.Bytes(size))
}

func (c *cli) blobGetCmd() *cobra.Command {
	var (
		size   int64
		out    string
		from   string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "get CID [--size N] -o FILE [--from PEER] [--json]",
		Short: "Fetch a blob, writing it to FILE as it arrives; FILE only if complete and of size N",
		Long: `Write the blob CID to FILE. A blob the node does not hold is fetched from its
providers: PEER (--from) first, then those gossip named for it, then those
the network's DHT names (docs/adr/0040: with no --from and no gossip hint,
the CID and --size are enough), then the connected peers, by the fetch
rules of ADR 0014 (at most 4 providers, 60 s each, 120 s in all; the size
checked against blobs.max_blob_bytes and the quota before any request). The
bytes are written while the fetch runs, in order, each as soon as it is
verified and every byte before it has been (ADR 0035); the node keeps the
blob too. On a terminal a progress bar shows the bytes written.

A fetch that did not complete (a provider gone, the daemon restarted or
killed) left what it verified in the node, as a partial blob ('blob ls
--partial'): the next get goes on from it, from any provider, and says so
on stderr ("resuming: 256.0 MiB of 512.0 MiB already held"; with --json,
"resumed" is the bytes held when it began; docs/adr/0054).

FILE is written only as a complete blob of exactly the declared size N (ADR
0014): the bytes go to a temporary file beside it (.wats-blob-*), which is
renamed to FILE once the node says the blob is complete, and removed if the
fetch fails. --size may be left out when the node knows the size: it holds
the blob, or an event of its log names it. Once FILE is written, a line
says so, with its size, and, indented under it, the blob's CID and the
peer that served it (with --json: an object with cid, size, file and
provider). A FILE that
exists and is not a regular file (a device such as /dev/null, a named
pipe) is written to as stdout is, never replaced.

With no daemon running, a complete blob the repo holds is read from it
(each leaf checked against its CID), as 'blob ls' reads it; any other needs
the daemon.

With -o - the bytes go to stdout as they come. If the fetch fails part way,
what was written is a verified prefix of the blob, not the blob: the
command then says why on stderr and exits 1, after that output (in a
shell pipeline, set -o pipefail to see that status).`,
		Example: `  wats blob get bafyb4i… -o report.pdf
  set -o pipefail; wats blob get bafyb4i… --size 5000000 --from 12D3KooW… -o - | tar -x`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case size < 0 || uint64(size) > core.MaxSafeInt:
				return usageErrorf("--size %d: must be 0..2^53 bytes", size)
			case out == "":
				return usageErrorf("-o FILE is required (-o - writes to stdout)")
			case out == "-" && asJSON:
				return usageErrorf("--json with -o -: stdout is the blob; name a file with -o FILE")
			}
			if err := c.checkCID(args[0]); err != nil {
				return err
			}
			if from != "" {
				if err := c.checkSyncPeer(from); err != nil {
					return fmt.Errorf("--from: %w", err)
				}
			}
			toStdout := out == "-"
			// special: out names a file that is not a regular file (a
			// device such as /dev/null, a named pipe), written as stdout
			// is: a temporary file renamed over it would replace it.
			special := false
			if !toStdout {
				// Checked before the fetch, which may take minutes.
				if fi, err := os.Stat(out); err == nil && fi.IsDir() {
					return fmt.Errorf("-o %s is a directory; name a file", out)
				} else if err == nil && !fi.Mode().IsRegular() {
					special = true
				}
				if fi, err := os.Stat(filepath.Dir(out)); err != nil || !fi.IsDir() {
					return fmt.Errorf("-o %s: the directory %s does not exist", out, filepath.Dir(out))
				}
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			g := blobGetArgs{cid: args[0], size: size, sized: cmd.Flags().Changed("size"), out: out, from: from,
				asJSON: asJSON, toStdout: toStdout, special: special}
			err = c.blobGetFromDaemon(cmd.Context(), cl, &g)
			if nd := (*noDaemonError)(nil); errors.As(err, &nd) {
				// No daemon: a blob the repo holds is read from it.
				return c.blobGetHeld(cmd.Context(), g, err)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "say what was written as JSON (cid, size, file)")
	cmd.Flags().Int64Var(&size, "size", 0, "the blob's declared size in bytes (default: the size the node knows)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the file to write, or - for stdout (required)")
	cmd.Flags().StringVar(&from, "from", "", "a peer (ID or full multiaddr) to fetch from first, even if it failed lately")
	return cmd
}

// blobGetArgs is what `blob get` was asked: the CID, the declared size
// (sized: given by --size), the output (toStdout: -o -; special: a file
// that is not a regular one, written as stdout is), --from and --json.
type blobGetArgs struct {
	cid                       string
	size                      int64
	sized                     bool
	out, from                 string
	asJSON, toStdout, special bool
}

// blobGetFromDaemon is blob get through the daemon: the blob's size asked
// of it unless --size was given (into g.size), the bytes fetched and
// streamed to stdout, to a special file, or to a temporary file renamed to
// g.out.
func (c *cli) blobGetFromDaemon(ctx context.Context, cl *api.Client, g *blobGetArgs) error {
	if !g.sized {
		bs, err := cl.BlobSize(ctx, g.cid)
		if errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrAmbiguous) {
			return usageErrorf("%s; give it with --size N", userMessage(err))
		}
		if err != nil {
			return c.apiError(err)
		}
		g.size = int64(bs.Size)
	}
	req := api.FetchRequest{CID: g.cid, Size: uint64(g.size), From: g.from}
	if g.toStdout {
		return c.interruptedGet(ctx, cl, g.cid, c.streamBlob(ctx, cl, req, c.stdout))
	}
	var provider string // the peer that served it, when known
	var resumed uint64  // the bytes held when the fetch began
	if g.special {
		if err := writeSpecial(g.out, func(w io.Writer) error { return c.streamBlob(ctx, cl, req, w) }); err != nil {
			return c.interruptedGet(ctx, cl, g.cid, err)
		}
	} else {
		var err error
		if provider, resumed, err = c.streamToFile(ctx, cl, req, g.out); err != nil {
			return c.interruptedGet(ctx, cl, g.cid, err)
		}
	}
	return c.saidWritten(blobWritten{CID: g.cid, Size: uint64(g.size), File: g.out, Provider: provider, Resumed: resumed}, g.asJSON, "")
}

// interruptedGet is the error of a blob get through the daemon that
// ended with err: once interrupted (ctx cancelled: Ctrl-C), it says what
// the node keeps of blob cid, verified (its partial blob, docs/adr/0054),
// and that the same command resumes from there; otherwise, or when the
// node keeps nothing of it, err.
func (c *cli) interruptedGet(ctx context.Context, cl *api.Client, cid string, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	// The command's context is done: a look of its own, brief.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	ps, perr := cl.PartialBlobs(lctx)
	if perr != nil {
		return err
	}
	for _, p := range ps {
		if p.CID == cid && p.Held > 0 {
			return fmt.Errorf("interrupted; the node keeps %s of the blob's %s, verified: the same command resumes from there",
				humanize.Bytes(p.Held), humanize.Bytes(p.Size))
		}
	}
	return err
}

// writeSpecial writes with write to out, a file that is not a regular
// one (a device, a named pipe), opened as it is, never replaced.
func writeSpecial(out string, write func(io.Writer) error) error {
	f, err := os.OpenFile(out, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("-o %s: %w", out, cerr)
	}
	return err
}

// saidWritten says what blob get wrote: as JSON with asJSON, else
// writtenText (how, if not "", is said after the CID: where the bytes
// came from).
func (c *cli) saidWritten(w blobWritten, asJSON bool, how string) error {
	if asJSON {
		return c.printJSON(w)
	}
	_, err := fmt.Fprint(c.stdout, writtenText(w, how))
	return err
}

// writtenText is what blob get says it wrote: a line with the file and
// the size (in binary units and in bytes), then, indented by 4, the
// blob's full CID (and how, if not ""), and the full peer ID of the
// provider that served it, if one did: each line fits in maxHelpWidth
// columns but for a file name that does not.
func writtenText(w blobWritten, how string) string {
	size := fmt.Sprintf("%d bytes", w.Size)
	if w.Size >= 1<<10 {
		size = humanize.Bytes(w.Size) + " (" + size + ")"
	}
	s := fmt.Sprintf("wrote %s: %s\n    blob %s%s\n", w.File, size, w.CID, how)
	if w.Provider != "" {
		s += "    from " + w.Provider + "\n"
	}
	return s
}

// blobGetHeld is blob get with no daemon running: a complete blob the
// repo holds is read from it (store.Offline.ExportBlob, each leaf checked
// against its CID) and written as the daemon writes it; any other is
// noDaemon, with word that the repo does not hold it either.
func (c *cli) blobGetHeld(ctx context.Context, g blobGetArgs, noDaemon error) error {
	ci, err := cid.Decode(g.cid)
	if err != nil {
		return noDaemon
	}
	return c.offline(func(o *store.Offline) error {
		held, ok := o.BlobSize(ci)
		switch {
		case !ok:
			return fmt.Errorf("%w; the repo does not hold blob %s either", noDaemon, g.cid)
		case g.sized && uint64(g.size) != held:
			return fmt.Errorf("the repo holds blob %s of %d bytes, not the --size %d", g.cid, held, g.size)
		}
		export := func(w io.Writer) error {
			err := o.ExportBlob(ctx, ci, held, w)
			if errors.Is(err, store.ErrBadBlob) {
				// One sentence, not a chain of packages, and what to do.
				_, why, _ := strings.Cut(err.Error(), store.ErrBadBlob.Error()+": ")
				return fmt.Errorf("the repo's copy of blob %s is damaged: %s; %s says what else is",
					g.cid, why, c.hint(append([]string{"repo", "check"}, c.repoHint()...)...))
			}
			return err
		}
		switch {
		case g.toStdout:
			return export(c.stdout)
		case g.special:
			if err := writeSpecial(g.out, export); err != nil {
				return err
			}
		default:
			if err := writeRenamed(g.out, func(f *os.File) error { return export(f) }); err != nil {
				return err
			}
		}
		return c.saidWritten(blobWritten{CID: g.cid, Size: held, File: g.out}, g.asJSON, ", held in the repo")
	})
}

// writeRenamed has write fill a temporary file beside out (mode 0644),
// then syncs it and renames it to out, so that out never names a file
// whose bytes a crash could lose; on any failure the temporary file is
// removed and out left as it was. write's error is returned as it is.
func writeRenamed(out string, write func(tmp *os.File) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".wats-blob-*")
	if err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return err
	}
	renamed = true
	return nil
}

// streamToFile streams the blob req names into a temporary file beside
// out and renames it to out once the blob is complete and the file holds
// exactly its declared size, synced; on any failure the temporary file is
// removed and out is left as it was. It returns the peer ID of the
// provider that served the blob ("" when the node held it). On a
// terminal, the progress bar says what the fetch waits for.
func (c *cli) streamToFile(ctx context.Context, cl *api.Client, req api.FetchRequest, out string) (from string, resumed uint64, err error) {
	err = writeRenamed(out, func(tmp *os.File) error { return c.streamInto(ctx, cl, req, tmp, &from, &resumed) })
	return from, resumed, err
}

// streamInto streams the blob req names into tmp (streamToFile): the
// provider that served it and the bytes held when it began go to *from
// and *resumed; an error if tmp does not then hold exactly its size.
func (c *cli) streamInto(ctx context.Context, cl *api.Client, req api.FetchRequest, tmp *os.File, from *string, resumed *uint64) error {
	// On the daemon's host the daemon writes into tmp itself, through its
	// descriptor (api.Client.StreamBlobToFile): no byte crosses the socket.
	label := "get " + shortCID(req.CID)
	bar := c.byteBar(int64(req.Size), label)
	var waiting string
	progress := func(p api.FetchProgress) {
		if p.Resumed > 0 && *resumed == 0 {
			*resumed = p.Resumed
			if bar != nil {
				_ = bar.Clear()
				// The bar counts what is fetched now, the rest: the bytes
				// held are not fetched at its rate, nor in its time left.
				bar.ChangeMax64(max(int64(req.Size)-int64(p.Resumed), 1))
			}
			fmt.Fprintln(c.stderr, resuming(p.Resumed, p.Size))
		}
		*from = p.Provider // the last attempt's: on success, the one that served
		if bar == nil {
			return
		}
		_ = bar.Set64(max(int64(p.Bytes)-int64(*resumed), 0))
		if w := fetchWaiting(p); w != waiting {
			waiting = w
			bar.Describe(label + w)
			// Shown now, not at the next byte: while providers are
			// found, no byte comes.
			_ = bar.RenderBlank()
		}
	}
	_, err := cl.StreamBlobToFile(ctx, req, tmp, progress)
	endBar(c.stderr, bar, err)
	if err := c.streamError(err); err != nil {
		return err
	}
	fi, err := tmp.Stat()
	if err != nil {
		return err
	}
	if uint64(fi.Size()) != req.Size {
		return fmt.Errorf("the daemon sent %d bytes of a %d-byte blob; nothing written", fi.Size(), req.Size)
	}
	return nil
}

// streamBlob has the daemon fetch the blob req names and writes its bytes
// to w as they come (api.Client.StreamBlob), with a progress bar of the
// bytes written on stderr when it is a terminal, after the line that says
// how much of it the node held already, if it resumes a fetch.
func (c *cli) streamBlob(ctx context.Context, cl *api.Client, req api.FetchRequest, w io.Writer) error {
	bar := c.byteBar(int64(req.Size), "get "+shortCID(req.CID))
	if bar != nil {
		w = io.MultiWriter(w, bar)
	}
	_, err := cl.StreamBlob(ctx, req, w, func(p api.FetchProgress) {
		if bar != nil {
			_ = bar.Clear()
		}
		fmt.Fprintln(c.stderr, resuming(p.Resumed, p.Size))
	})
	endBar(c.stderr, bar, err)
	return c.streamError(err)
}

// streamError is the error a stream of a blob ended with, as the CLI says
// it.
func (c *cli) streamError(err error) error {
	if errors.Is(err, api.ErrFetchFailed) {
		// The daemon's reason is a sentence of its own ("could not fetch
		// blob …: …"): said once, without the API's prefix.
		return errors.New(strings.TrimPrefix(err.Error(), api.ErrFetchFailed.Error()+": "))
	}
	return c.apiError(err)
}

// shortCID abbreviates a CID for a progress bar's label.
func shortCID(s string) string {
	if len(s) <= 16 {
		return s
	}
	return s[:8] + "…" + s[len(s)-6:]
}

// blobWritten is the JSON of `blob get --json`: the blob written and
// where, and the peer ID of the provider that served it (left out when
// the node held it, or the bytes came another way than a file).
type blobWritten struct {
	CID      string `json:"cid"`
	Size     uint64 `json:"size"`
	File     string `json:"file"`
	Provider string `json:"provider,omitempty"`
	// Resumed is the bytes of the blob the node held already when the
	// fetch began, from one that did not complete (docs/adr/0054); left
	// out for none.
	Resumed uint64 `json:"resumed,omitempty"`
}

// fetchWaiting is what a fetch's progress line p says it waits for, as a
// progress bar's label goes on: ": finding providers", " from 12D3…" (the
// provider whose attempt runs), or nothing.
func fetchWaiting(p api.FetchProgress) string {
	switch {
	case p.Finding:
		return ": finding providers"
	case p.Provider != "":
		return " from " + shortPeer(p.Provider)
	}
	return ""
}

// blobRemoved is the JSON of `blob rm --json`.
type blobRemoved struct {
	CID     string `json:"cid"`
	Removed bool   `json:"removed"`
}

func (c *cli) blobRmCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rm CID [--json]",
		Short: "Remove a blob from the store (unpin it), or a partial blob (blob ls --partial)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.clientFor(c.checkCID, args[0])
			if err != nil {
				return err
			}
			if err := cl.RemoveBlob(cmd.Context(), args[0]); err != nil {
				return c.apiError(err)
			}
			if asJSON {
				return c.printJSON(blobRemoved{CID: args[0], Removed: true})
			}
			fmt.Fprintf(c.stdout, "removed %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (cid, removed)")
	return cmd
}

func (c *cli) replicateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "replicate PEER CID:SIZE[:NAME]...",
		Short: "Ask a peer to keep copies of blobs, fetching them from this node first",
		Long: `Ask PEER (a peer ID, or a full multiaddr to connect to first) to keep copies
of the blobs CID:SIZE (SIZE: the declared size in bytes). The peer fetches
each blob from this node first, then from the providers it knows, and
answers which it stored, skipped and failed: a peer fetches at most
limits.blob_fetches_per_peer (4) blobs of one requester at once and skips
the rest (ADR 0014); a blob it already holds counts as stored.`,
		Args: usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := api.ReplicateRequest{Peer: args[0]}
			if err := c.checkSyncPeer(args[0]); err != nil {
				return err
			}
			if len(args)-1 > core.MaxReplicateBlobs {
				return usageErrorf("%d blobs: a replicate request names at most %d", len(args)-1, core.MaxReplicateBlobs)
			}
			named := map[string]string{}
			for _, a := range args[1:] {
				b, err := parseBlobArg(a)
				if err != nil {
					return usageErrorf("%v", err)
				}
				if prev, dup := named[b.CID]; dup {
					return usageErrorf("%s is named twice (%s and %s)", b.CID, prev, a)
				}
				named[b.CID] = a
				req.Blobs = append(req.Blobs, b)
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			res, err := cl.Replicate(cmd.Context(), req)
			if err != nil {
				return c.apiError(err)
			}
			if asJSON {
				return c.printJSON(res)
			}
			for _, s := range res.Stored {
				fmt.Fprintf(c.stdout, "stored   %s\n", printable(s))
			}
			for _, s := range res.Skipped {
				fmt.Fprintf(c.stdout, "skipped  %s (the peer's fetch slots were in use; ask again later)\n", printable(s))
			}
			for _, f := range res.Failed {
				fmt.Fprintf(c.stdout, "failed   %s: %s\n", printable(f.CID), printable(f.Reason))
			}
			if len(res.Failed) > 0 {
				return fmt.Errorf("%d of %d blobs failed", len(res.Failed), len(req.Blobs))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}

// parseBlobArg reads a CID:SIZE argument, or CID:SIZE:NAME as blob add
// prints it (the name is not needed, and dropped). A CID that does not
// parse (cid.Decode) is an error, as a SIZE that is not 0..2^53.
func parseBlobArg(a string) (api.BlobInfo, error) {
	c, sz, ok := strings.Cut(a, ":")
	sz, _, _ = strings.Cut(sz, ":")
	if !ok || c == "" {
		return api.BlobInfo{}, fmt.Errorf("%q is not CID:SIZE (e.g. bafkr4…:1048576)", a)
	}
	if _, err := cid.Decode(c); err != nil {
		return api.BlobInfo{}, fmt.Errorf("%q: %q is not a CID (bafkr4…, as 'blob add' prints it)", a, c)
	}
	n, err := strconv.ParseUint(sz, 10, 64)
	if err != nil || n > core.MaxSafeInt {
		return api.BlobInfo{}, fmt.Errorf("%q: SIZE must be a whole number of bytes, 0..2^53", a)
	}
	return api.BlobInfo{CID: c, Size: n}, nil
}

// checkCID checks that s is a CID (cid.Decode: what the daemon takes),
// with a usage error that says what to pass.
func (c *cli) checkCID(s string) error {
	if _, err := cid.Decode(s); err != nil {
		return usageErrorf("%q is not a CID (bafkr4…): pass one as '%s blob add' prints it or '%s blob ls' lists it",
			s, c.name, c.name)
	}
	return nil
}
