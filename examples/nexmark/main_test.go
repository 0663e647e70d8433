package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/examples/internal/exampletest"
	"github.com/egret-stream/egret/examples/nexmark/generator"
	"github.com/egret-stream/egret/examples/nexmark/queries"
)

// Test runs: events per run, the event-time rate (1,000 events per second
// of event time: 50,000 events span 50 s, several windows), seeds.
const (
	testEvents    = 50_000
	testEventRate = 1000
)

var testSeeds = []uint64{1, 7}

// events generates the run's events in position order, as the spouts
// emit them all together.
func events(t *testing.T, seed uint64) []generator.Event {
	t.Helper()
	c := generator.Default()
	c.Seed, c.Rate = seed, testEventRate
	g, err := generator.New(c)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]generator.Event, testEvents)
	for n := range out {
		out[n] = g.At(int64(n))
	}
	return out
}

// TestQueriesMatchTheirReferences runs every query through the real
// runtime (the binary's --local mode, parallelism 2, at-least-once) on
// 50,000 events of two seeds and compares the printed rows with a
// brute-force reference computed here from the same events.
func TestQueriesMatchTheirReferences(t *testing.T) {
	bin := exampletest.Build(t, ".")
	for _, name := range queries.Names() {
		ref, ok := references[name]
		if !ok {
			t.Errorf("%s has no reference", name)
			continue
		}
		q := queries.All[name]
		for _, seed := range testSeeds {
			t.Run(fmt.Sprintf("%s/seed%d", name, seed), func(t *testing.T) {
				t.Parallel() // the runs mostly wait (start-up, processing-time windows)
				var want []string
				if ref.seeded != nil {
					want = ref.seeded(events(t, seed), seed)
				} else {
					want = ref.rows(events(t, seed))
				}
				got := run(t, bin, q, seed, ref)
				compare(t, got, want)
			})
		}
	}
}

// reference is a query's brute-force result: the rows it prints (for
// upsert queries, the last row of every key, the key being the first
// keyCols columns).
type reference struct {
	rows func(evs []generator.Event) []string
	// seeded is rows for a reference that needs the seed too.
	seeded  func(evs []generator.Event, seed uint64) []string
	keyCols int
	// final is the number of tasks of the query's last operator at
	// parallelism 2.
	final int
	// transform, when set, turns the printed rows into what rows returns
	// (q12: processing-time windows summed per key).
	transform func(rows []string) []string
	// files: the query writes its rows to files (q10) in --q10-dir; they
	// are read as rows "<query>\t<partition dirs>\t<line>".
	files bool
}

func run(t *testing.T, bin string, q *queries.Query, seed uint64, ref reference) []string {
	t.Helper()
	args := []string{"--query", q.Name, "--events", strconv.Itoa(testEvents),
		"--seed", strconv.FormatUint(seed, 10), "--event-rate", strconv.Itoa(testEventRate),
		"--parallelism", "2", "--sink", "print", "--local"}
	dir := t.TempDir()
	if ref.files {
		args = append(args, "--q10-dir", dir)
	}
	p := exampletest.Start(t, bin, args...)
	endPrefix := q.Name + "\tEND\t"
	p.WaitFor("the end of the input at every final task", 2*time.Minute, func(lines []string) bool {
		return len(exampletest.Prefixed(lines, endPrefix)) >= ref.final
	})
	lines := p.Stop()
	var rows []string
	last := map[string]int{}
	for _, l := range lines {
		if !strings.HasPrefix(l, q.Name+"\t") || strings.HasPrefix(l, endPrefix) {
			continue
		}
		if ref.keyCols > 0 {
			cols := strings.SplitN(l, "\t", ref.keyCols+2)
			key := strings.Join(cols[:ref.keyCols+1], "\t")
			if i, ok := last[key]; ok {
				rows[i] = l
				continue
			}
			last[key] = len(rows)
		}
		rows = append(rows, l)
	}
	if ref.files {
		rows = readPartitions(t, q.Name, dir)
	}
	if ref.transform != nil {
		rows = ref.transform(rows)
	}
	return rows
}

// readPartitions reads every line of the files under dir as a row
// "<query>\t<dt=...>\t<hm=...>\t<line>".
func readPartitions(t *testing.T, query, dir string) []string {
	t.Helper()
	var rows []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(path))
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			rows = append(rows, query+"\t"+strings.ReplaceAll(rel, "/", "\t")+"\t"+l)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func compare(t *testing.T, got, want []string) {
	t.Helper()
	sort.Strings(got)
	sort.Strings(want)
	if len(want) == 0 {
		t.Fatal("the reference has no rows: the test would prove nothing")
	}
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		t.Logf("%d rows as the reference", len(want))
		return
	}
	gs, ws := map[string]int{}, map[string]int{}
	for _, g := range got {
		gs[g]++
	}
	for _, w := range want {
		ws[w]++
	}
	var missing, extra []string
	for w, n := range ws {
		if gs[w] < n {
			missing = append(missing, w)
		}
	}
	for g, n := range gs {
		if ws[g] < n {
			extra = append(extra, g)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	t.Errorf("got %d rows, want %d: %d missing (first %.5q), %d unexpected (first %.5q)",
		len(got), len(want), len(missing), missing, len(extra), extra)
}
