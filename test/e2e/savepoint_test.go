package e2e

// Savepoints (docs/savepoints.md): the keyed eocount topology saves its
// state with egret kill --savepoint on the heap backend, its bolts at
// parallelism 2, and starts again from the savepoint on pebble with its
// bolts at 3 (the saved key groups and operator state shared out as by a
// rescale), then saves with egret savepoint on pebble and starts again on
// heap at the same parallelism; each time the restored run reports exactly
// the expected counts (its reports removed before it starts, so every
// count it reports comes from the restored state and the sentences the
// restored spouts had not emitted), never more. A corrupt, truncated or
// foreign savepoint is refused with one line, exit 2, and nothing starts.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
)

func TestSavepointRestoreAcrossBackends(t *testing.T) {
	c := newCluster(t, "local")
	const name = "eo-savepoint"
	const n, keys = 20000, 2000
	flags := func(backend string, bolts int) []string {
		return []string{"--rate", "2000", "--interval", "1s", "--keys", strconv.Itoa(keys), "--bolts", strconv.Itoa(bolts),
			"--set", topology.KeyStateBackend + "=" + backend}
	}
	exact := func(r *eoRun, what string) {
		t.Helper()
		await(t, what, allAckedTimeout, func() (bool, string) {
			res := r.checkCurrent(3)
			return res.Exact(), res.String()
		})
	}
	clearReports := func(r *eoRun) {
		t.Helper()
		reports, _ := filepath.Glob(filepath.Join(r.state, "count-*.json"))
		for _, f := range reports {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}

	// heap → savepoint with the kill → pebble.
	r := startEOCount(t, c, name, n, flags("heap", 2)...)
	r.waitCounted("a fifth of the words to be counted", 0.2, time.Minute)
	sp1 := filepath.Join(c.home, "backups", "heap-1")
	began := time.Now()
	out := c.mustEgret("kill", c.name, name, "--savepoint", sp1)
	t.Logf("egret kill --savepoint took %s: %s", time.Since(began).Round(time.Millisecond), strings.TrimSpace(out))
	atKill := r.check()
	t.Logf("at the kill: %s", atKill)
	if !strings.Contains(out, "savepoint "+sp1) || !strings.Contains(out, "killed topology") {
		t.Fatalf("egret kill --savepoint did not report the savepoint and the kill:\n%s", out)
	}
	c.waitGone(t)
	desc := c.mustEgret("savepoints", "describe", c.name, sp1)
	t.Logf("egret savepoints describe:\n%s", desc)
	for _, want := range []string{"topology " + name, "heap backend", "count", "keyed"} {
		if !strings.Contains(desc, want) {
			t.Errorf("egret savepoints describe does not mention %q", want)
		}
	}
	clearReports(r)
	r = startEOCountWith(t, c, name, n, []string{"--from-savepoint", sp1}, flags("pebble", 3)...)
	exact(r, "every word to be counted exactly by 3 count tasks on pebble from the heap savepoint of 2")

	// pebble → egret savepoint → kill → heap.
	out = c.mustEgret("savepoint", c.name, name, "--target", "pebble-1")
	t.Logf("egret savepoint: %s", strings.TrimSpace(out))
	sp2 := filepath.Join(c.home, "savepoints", c.name, "pebble-1") // egret.savepoint.directory
	if !strings.Contains(out, sp2) {
		t.Fatalf("egret savepoint does not name %s:\n%s", sp2, out)
	}
	list := c.mustEgret("savepoints", "list", c.name)
	if !strings.Contains(list, "pebble-1") || !strings.Contains(list, name) {
		t.Errorf("egret savepoints list does not show pebble-1:\n%s", list)
	}
	r.kill()
	clearReports(r)
	r = startEOCountWith(t, c, name, n, []string{"--from-savepoint", "pebble-1"}, flags("heap", 3)...)
	exact(r, "every word to be counted exactly on heap from the pebble savepoint")
	r.kill()

	c.mustEgret("savepoints", "delete", c.name, "pebble-1")
	if _, err := os.Stat(filepath.Join(sp2, "files", "SAVEPOINT")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("savepoint pebble-1 still has its manifest after delete: %v", err)
	}

	// Damaged savepoints: nothing starts.
	damaged := map[string]func(dir string) error{
		"truncated": func(dir string) error {
			m := filepath.Join(dir, "files", "SAVEPOINT")
			b, err := os.ReadFile(m)
			if err != nil {
				return err
			}
			return os.WriteFile(m, b[:len(b)/2], 0o644)
		},
		"foreign": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "files", "SAVEPOINT"), []byte("PK\x03\x04 not a savepoint"), 0o644)
		},
		"missing-file": func(dir string) error {
			files, _ := filepath.Glob(filepath.Join(dir, "files", "*-keyed"))
			if len(files) == 0 {
				return errors.New("no keyed file to remove")
			}
			return os.Remove(files[0])
		},
	}
	for what, damage := range damaged {
		dir := filepath.Join(c.home, "backups", what)
		if err := os.CopyFS(dir, os.DirFS(sp1)); err != nil {
			t.Fatal(err)
		}
		if err := damage(dir); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := c.egret("submit", c.name, "--from-savepoint", dir, binary(t, "effectivelyonce"), "--",
			"--name", name, "--sentences", strconv.Itoa(n), "--state", r.state, "--containers", "2")
		oneLineError(t, fmt.Sprintf("submit from a %s savepoint", what), stderr, code, 2, dir)
		if _, err := r.store.Topology(context.Background(), name); !errors.Is(err, spi.ErrNotFound) {
			t.Errorf("a submit from a %s savepoint left topology state: %v", what, err)
		}
	}
}
