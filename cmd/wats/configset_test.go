package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestConfigSetKilledLeavesNoFiles: `config set` killed at moments from
// 0 to 10 ms after its start leaves config.toml old or new, never part,
// and the next set removes whatever temporary files the killed ones left
// (fileio.WriteAtomic).
func TestConfigSetKilledLeavesNoFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds the binary")
	}
	bin, env, repo := localRepo(t)
	for i := range 40 {
		cmd := exec.Command(bin, "config", "set", "--repo", repo, "limits.sync_per_min", strconv.Itoa(1000+i))
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%11) * time.Millisecond) // the moment of the kill
		cmd.Process.Kill()
		cmd.Wait()
		if code, _, stderr := runBin(t, env, bin, "config", "validate", "--repo", repo); code != 0 {
			t.Fatalf("after a kill %d ms in, config.toml is not valid: %s", i%11, stderr)
		}
	}
	// What a kill in the write leaves, for certain: a temporary file nobody
	// holds (the kills above land in the write now and then).
	if err := os.WriteFile(filepath.Join(repo, ".config.toml.tmp4242"), []byte("[limits"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runBin(t, env, bin, "config", "set", "--repo", repo, "limits.sync_per_min", "1234"); code != 0 {
		t.Fatalf("config set: exit %d: %s", code, stderr)
	}
	left, _ := filepath.Glob(filepath.Join(repo, ".config.toml.tmp*"))
	if len(left) > 0 {
		t.Errorf("temporary files left after the next set: %v", left)
	}
}

// TestSetArgs: config set's own flag parsing takes --repo anywhere, a
// negative number as VALUE, "--" before positionals, -h; and refuses
// other flags and a count of positionals other than two.
func TestSetArgs(t *testing.T) {
	for _, tc := range []struct {
		raw        []string
		args       []string
		repo       string
		help, fail bool
	}{
		{raw: []string{"limits.sync_per_min", "-5"}, args: []string{"limits.sync_per_min", "-5"}},
		{raw: []string{"k", "-1.5", "--repo", "/r"}, args: []string{"k", "-1.5"}, repo: "/r"},
		{raw: []string{"--repo=/r", "k", "v"}, args: []string{"k", "v"}, repo: "/r"},
		{raw: []string{"--", "k", "--v"}, args: []string{"k", "--v"}},
		{raw: []string{"k", "--help"}, help: true},
		{raw: []string{"-5", "k"}, fail: true}, // KEY does not begin with "-"
		{raw: []string{"k", "v", "--bogus"}, fail: true},
		{raw: []string{"k", "--bogus"}, fail: true},
		{raw: []string{"k"}, fail: true},
		{raw: []string{"k", "v", "w"}, fail: true},
		{raw: []string{"k", "v", "--repo"}, fail: true},
	} {
		args, repo, help, err := setArgs(tc.raw)
		if (err != nil) != tc.fail || help != tc.help || repo != tc.repo || strings.Join(args, " ") != strings.Join(tc.args, " ") {
			t.Errorf("setArgs(%q) = %q, %q, %v, %v", tc.raw, args, repo, help, err)
		}
	}
}

// TestIDReadsNoDatabase: without a daemon, id answers from the key and
// config alone: a database it could not open (here a file where its
// directory should be) does not stop it, so it never holds the database a
// starting daemon needs.
func TestIDReadsNoDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	if code, _, stderr := runCLI(t, "", "init", "--profile", "local", "--repo", dir); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "db"), []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "", "id", "--repo", dir)
	if code != 0 || !strings.HasPrefix(out, "12D3KooW") {
		t.Fatalf("id: exit %d, %q, %s", code, out, stderr)
	}
	if code, _, _ := runCLI(t, "", "events", "ls", "--repo", dir); code == 0 {
		t.Error("events ls read a database that is a file: the test's premise is wrong")
	}
}

// TestReadersRaceTheDaemonStart: while `events ls` runs in 3 loops at
// once (each run reading the database, offline or through the daemon),
// the daemon starts and stops 8 times: every start comes up, every read
// succeeds (repo.Lock waits for readers, readers for each other; a reader
// that finds the daemon holding the repo asks it once it answers, or reads
// once it is gone).
func TestReadersRaceTheDaemonStart(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds the binary and starts a daemon 8 times")
	}
	bin, env, repo := localRepo(t)
	start := func() (*exec.Cmd, <-chan error) { return startDaemon(t, env, bin, repo, nil) }
	// A database with events in it.
	d, exited := start()
	waitCLI(t, 20*time.Second, "the daemon is up", func() bool {
		code, _, _ := runBin(t, env, bin, "status", "--repo", repo)
		return code == 0
	})
	for i := range 20 {
		if code, _, stderr := runBin(t, env, bin, "events", "add", "--repo", repo, "--kind", "note", "--body", `{"n":`+strconv.Itoa(i)+`}`); code != 0 {
			t.Fatalf("events add: exit %d: %s", code, stderr)
		}
	}
	d.Process.Signal(syscall.SIGTERM)
	<-exited

	stop := make(chan struct{})
	failures := make(chan string, 100)
	const readers = 3 // at once: readers wait for each other too
	reads := make(chan int, readers)
	readLoop := func() {
		n := 0
		defer func() { reads <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			code, out, stderr := runBinWithin(t, 30*time.Second, env, bin, "events", "ls", "--repo", repo)
			n++
			if code != 0 || strings.Count(out, "note") != 20 { // the 20 events, each of kind note
				select {
				case failures <- "exit " + strconv.Itoa(code) + ": " + stderr:
				default:
				}
			}
		}
	}
	for range readers {
		go readLoop()
	}
	for i := range 8 {
		d, exited := start()
		waitCLI(t, 30*time.Second, "the daemon is up", func() bool {
			select {
			case err := <-exited:
				t.Fatalf("start %d: the daemon exited while readers ran: %v", i, err)
			default:
			}
			code, _, _ := runBin(t, env, bin, "status", "--repo", repo)
			return code == 0
		})
		d.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Fatalf("start %d: the daemon stopped with %v", i, err)
		}
	}
	close(stop)
	n := 0
	for range readers {
		n += <-reads
	}
	close(failures)
	for f := range failures {
		t.Errorf("a read failed: %s", f)
	}
	t.Logf("%d reads while the daemon started and stopped 8 times", n)
}
