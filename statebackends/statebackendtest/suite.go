package statebackendtest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
)

// Suite checks one backend.
type Suite struct {
	// Name is the backend's registered name.
	Name string
}

// clock is a settable time for time-to-live checks.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time              { return time.Unix(0, c.ns.Load()) }
func (c *clock) set(t time.Time)             { c.ns.Store(t.UnixNano()) }
func newClock() *clock                       { c := &clock{}; c.set(time.Unix(1_000_000, 0)); return c }
func (c *clock) after(d time.Duration) int64 { return c.ns.Load() + int64(d) }

const maxP = 16

func (s Suite) open(t *testing.T, groups keygroup.Range, c *clock) statebackend.Backend {
	t.Helper()
	o := statebackend.Options{Dir: filepath.Join(t.TempDir(), "state"), MaxParallelism: maxP, Groups: groups}
	if c != nil {
		o.Now = c.now
	}
	b, err := statebackend.Open(s.Name, o)
	if err != nil {
		t.Fatalf("open %s: %v", s.Name, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

var all = keygroup.Range{Start: 0, End: maxP}

// Run runs every check.
func (s Suite) Run(t *testing.T) {
	t.Run("GetPutDelete", s.getPutDelete)
	t.Run("Isolation", s.isolation)
	t.Run("Scan", s.scan)
	t.Run("BadKeys", s.badKeys)
	t.Run("SnapshotIsolation", s.snapshotIsolation)
	t.Run("SnapshotWhileWriting", s.snapshotWhileWriting)
	t.Run("RestoreSubset", s.restoreSubset)
	t.Run("TTL", s.ttl)
	t.Run("Corrupt", s.corrupt)
	t.Run("Clear", s.clear)
	t.Run("BadOptions", s.badOptions)
}

func (s Suite) badOptions(t *testing.T) {
	for _, o := range []statebackend.Options{
		{MaxParallelism: 0, Groups: keygroup.Range{Start: 0, End: 1}},
		{MaxParallelism: keygroup.Limit + 1, Groups: keygroup.Range{Start: 0, End: 1}},
		{MaxParallelism: 8, Groups: keygroup.Range{Start: 4, End: 9}},
		{MaxParallelism: 8, Groups: keygroup.Range{Start: 4, End: 4}},
		{MaxParallelism: 8, Groups: keygroup.Range{Start: -1, End: 4}},
	} {
		o.Dir = filepath.Join(t.TempDir(), "state")
		if b, err := statebackend.Open(s.Name, o); err == nil {
			_ = b.Close()
			t.Errorf("open with max parallelism %d, groups %v accepted", o.MaxParallelism, o.Groups)
		}
	}
	if _, err := statebackend.Open("no-such-backend", statebackend.Options{MaxParallelism: 8, Groups: keygroup.Range{Start: 0, End: 8}}); err == nil {
		t.Errorf("an unknown backend opened")
	}
}

func k(group int, state, key string) statebackend.Key {
	return statebackend.Key{Group: group, State: state, Key: []byte(key)}
}

func mustPut(t *testing.T, b statebackend.Backend, key statebackend.Key, val string, expires int64) {
	t.Helper()
	if err := b.Put(key, []byte(val), expires); err != nil {
		t.Fatalf("put %v: %v", key, err)
	}
}

func get(t *testing.T, b statebackend.Backend, key statebackend.Key) (string, bool) {
	t.Helper()
	v, ok, err := b.Get(key, nil)
	if err != nil {
		t.Fatalf("get %v: %v", key, err)
	}
	return string(v), ok
}

func want(t *testing.T, b statebackend.Backend, key statebackend.Key, val string, present bool) {
	t.Helper()
	got, ok := get(t, b, key)
	if ok != present || got != val {
		t.Fatalf("get %d/%s/%q = %q, %v; want %q, %v", key.Group, key.State, key.Key, got, ok, val, present)
	}
}

func (s Suite) getPutDelete(t *testing.T) {
	b := s.open(t, all, nil)
	want(t, b, k(1, "s", "a"), "", false)
	mustPut(t, b, k(1, "s", "a"), "1", 0)
	want(t, b, k(1, "s", "a"), "1", true)
	mustPut(t, b, k(1, "s", "a"), "two", 0)
	want(t, b, k(1, "s", "a"), "two", true)
	mustPut(t, b, k(1, "s", ""), "", 0) // empty key, empty value
	want(t, b, k(1, "s", ""), "", true)
	// Get appends to dst.
	v, ok, err := b.Get(k(1, "s", "a"), []byte("x:"))
	if err != nil || !ok || string(v) != "x:two" {
		t.Fatalf("Get with dst = %q, %v, %v", v, ok, err)
	}
	// The backend keeps its own copies of what Put is given.
	val := []byte("keep")
	key := k(2, "s", "mut")
	if err := b.Put(key, val, 0); err != nil {
		t.Fatal(err)
	}
	copy(val, "XXXX")
	key.Key[0] = 'X'
	want(t, b, k(2, "s", "mut"), "keep", true)
	if err := b.Delete(k(1, "s", "a")); err != nil {
		t.Fatal(err)
	}
	want(t, b, k(1, "s", "a"), "", false)
	if err := b.Delete(k(1, "s", "never")); err != nil {
		t.Fatalf("delete of an absent key: %v", err)
	}
	want(t, b, k(1, "s", ""), "", true)
}

func (s Suite) isolation(t *testing.T) {
	b := s.open(t, all, nil)
	mustPut(t, b, k(1, "a", "k"), "a1", 0)
	mustPut(t, b, k(2, "a", "k"), "a2", 0)
	mustPut(t, b, k(1, "ab", "k"), "ab1", 0)
	mustPut(t, b, k(1, "a", "k\x00"), "nul", 0)
	want(t, b, k(1, "a", "k"), "a1", true)
	want(t, b, k(2, "a", "k"), "a2", true)
	want(t, b, k(1, "ab", "k"), "ab1", true)
	want(t, b, k(1, "a", "k\x00"), "nul", true)
	want(t, b, k(3, "a", "k"), "", false)
	want(t, b, k(1, "b", "k"), "", false)
}

type kv struct{ state, key, val string }

func scanAll(t *testing.T, b statebackend.Backend, group int, state string, prefix string) []kv {
	t.Helper()
	var out []kv
	err := b.Scan(group, state, []byte(prefix), func(key, val []byte) bool {
		out = append(out, kv{state, string(key), string(val)})
		return true
	})
	if err != nil {
		t.Fatalf("scan %d/%s/%q: %v", group, state, prefix, err)
	}
	return out
}

func scanGroup(t *testing.T, b statebackend.Backend, group int) []kv {
	t.Helper()
	var out []kv
	if err := b.ScanGroup(group, func(state string, key, val []byte) bool {
		out = append(out, kv{state, string(key), string(val)})
		return true
	}); err != nil {
		t.Fatalf("scan group %d: %v", group, err)
	}
	return out
}

func (s Suite) scan(t *testing.T) {
	b := s.open(t, all, nil)
	keys := []string{"b", "a", "ab", "abc", "b\xff", "\xff\xff", "c", ""}
	for _, key := range keys {
		mustPut(t, b, k(3, "m", key), "v"+key, 0)
	}
	mustPut(t, b, k(3, "l", "zz"), "other state", 0)
	mustPut(t, b, k(3, "m2", "a"), "other state", 0)
	mustPut(t, b, k(4, "m", "a"), "other group", 0)
	mustPut(t, b, k(2, "m", "a"), "other group", 0)
	got := scanAll(t, b, 3, "m", "")
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	if len(got) != len(sorted) {
		t.Fatalf("scan of state m = %v, want the keys %q", got, sorted)
	}
	for i, e := range got {
		if e.key != sorted[i] || e.val != "v"+sorted[i] {
			t.Fatalf("scan of state m = %v, want the keys %q in order", got, sorted)
		}
	}
	if got := scanAll(t, b, 3, "m", "ab"); len(got) != 2 || got[0].key != "ab" || got[1].key != "abc" {
		t.Fatalf("scan of prefix ab = %v", got)
	}
	if got := scanAll(t, b, 3, "m", "\xff"); len(got) != 1 || got[0].key != "\xff\xff" {
		t.Fatalf("scan of prefix ff = %v", got)
	}
	if got := scanAll(t, b, 5, "m", ""); len(got) != 0 {
		t.Fatalf("scan of an empty group = %v", got)
	}
	// Stopping early.
	n := 0
	if err := b.Scan(3, "m", nil, func(key, val []byte) bool { n++; return n < 3 }); err != nil || n != 3 {
		t.Fatalf("scan stopped after %d, %v", n, err)
	}
	g := scanGroup(t, b, 3)
	if len(g) != len(keys)+2 || g[0].state != "l" || g[len(g)-1].state != "m2" {
		t.Fatalf("scan of group 3 = %v", g)
	}
	for _, e := range g {
		if e.state == "m" && e.val != "v"+e.key {
			t.Fatalf("scan of group 3: %v", e)
		}
	}
	if g := scanGroup(t, b, 4); len(g) != 1 || g[0] != (kv{"m", "a", "other group"}) {
		t.Fatalf("scan of group 4 = %v", g)
	}
}

func (s Suite) badKeys(t *testing.T) {
	b := s.open(t, keygroup.Range{Start: 4, End: 8}, nil)
	for _, key := range []statebackend.Key{k(3, "s", "a"), k(8, "s", "a"), k(-1, "s", "a"), k(4, "", "a"), k(4, "s\x00t", "a")} {
		if err := b.Put(key, []byte("v"), 0); !errors.Is(err, statebackend.ErrBadKey) {
			t.Errorf("put %v = %v, want ErrBadKey", key, err)
		}
		if _, _, err := b.Get(key, nil); !errors.Is(err, statebackend.ErrBadKey) {
			t.Errorf("get %v = %v, want ErrBadKey", key, err)
		}
		if err := b.Delete(key); !errors.Is(err, statebackend.ErrBadKey) {
			t.Errorf("delete %v = %v, want ErrBadKey", key, err)
		}
	}
	if err := b.Scan(9, "s", nil, func(_, _ []byte) bool { return true }); !errors.Is(err, statebackend.ErrBadKey) {
		t.Errorf("scan of a foreign group = %v", err)
	}
	if err := b.ScanGroup(1, func(string, []byte, []byte) bool { return true }); !errors.Is(err, statebackend.ErrBadKey) {
		t.Errorf("scan of a foreign group = %v", err)
	}
	mustPut(t, b, k(7, "s", "a"), "ok", 0)
	want(t, b, k(7, "s", "a"), "ok", true)
}

// contents returns every live entry of b, group by group.
func contents(t *testing.T, b statebackend.Backend, groups keygroup.Range) map[string]string {
	t.Helper()
	out := map[string]string{}
	for g := groups.Start; g < groups.End; g++ {
		for _, e := range scanGroup(t, b, g) {
			out[fmt.Sprintf("%d/%s/%s", g, e.state, e.key)] = e.val
		}
	}
	return out
}

func snapshotBytes(t *testing.T, snap statebackend.Snapshot) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := snap.WriteTo(&buf)
	if err != nil {
		t.Fatalf("write snapshot: %v", err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo said %d bytes, wrote %d", n, buf.Len())
	}
	snap.Release()
	return buf.Bytes()
}

func (s Suite) restored(t *testing.T, groups keygroup.Range, c *clock, streams ...[]byte) statebackend.Backend {
	t.Helper()
	b := s.open(t, groups, c)
	for _, st := range streams {
		if err := b.Restore(bytes.NewReader(st)); err != nil {
			t.Fatalf("restore: %v", err)
		}
	}
	return b
}

func fill(t *testing.T, b statebackend.Backend, rng *rand.Rand, n int) map[string]string {
	t.Helper()
	m := map[string]string{}
	for i := 0; i < n; i++ {
		g, st, key, val := rng.IntN(maxP), fmt.Sprintf("s%d", rng.IntN(3)), fmt.Sprintf("key-%d", rng.IntN(n)), fmt.Sprintf("val-%d", i)
		mustPut(t, b, k(g, st, key), val, 0)
		m[fmt.Sprintf("%d/%s/%s", g, st, key)] = val
	}
	return m
}

func sameContents(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: %s = %q, want %q", what, k, got[k], v)
		}
	}
}

func (s Suite) snapshotIsolation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := s.open(t, all, nil)
	before := fill(t, b, rng, 3000)
	snap, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Changes after the fork: overwrite, delete, insert.
	after := fill(t, b, rng, 1000)
	if err := b.Delete(k(0, "s0", "key-1")); err != nil {
		t.Fatal(err)
	}
	mustPut(t, b, k(0, "new", "x"), "after", 0)
	stream := snapshotBytes(t, snap)
	sameContents(t, "restored snapshot", contents(t, s.restored(t, all, nil, stream), all), before)
	// The live backend has the later changes.
	live := contents(t, b, all)
	for key, v := range after {
		if key != "0/s0/key-1" && live[key] != v {
			t.Fatalf("live %s = %q, want %q", key, live[key], v)
		}
	}
	if live["0/new/x"] != "after" {
		t.Fatalf("live lost a write after the snapshot")
	}
	// An empty backend's snapshot restores to nothing.
	empty, err := s.open(t, all, nil).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(t, s.restored(t, all, nil, snapshotBytes(t, empty)), all); len(got) != 0 {
		t.Fatalf("empty snapshot restored %v", got)
	}
}

// snapshotWhileWriting streams a snapshot on another goroutine while the
// task goroutine keeps writing (run with -race).
func (s Suite) snapshotWhileWriting(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := s.open(t, all, nil)
	before := fill(t, b, rng, 20000)
	snap, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var buf bytes.Buffer
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, werr = snap.WriteTo(&buf)
	}()
	fill(t, b, rng, 20000)
	for i := 0; i < 2000; i++ {
		if err := b.Delete(k(rng.IntN(maxP), "s1", fmt.Sprintf("key-%d", rng.IntN(20000)))); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	snap.Release()
	if werr != nil {
		t.Fatal(werr)
	}
	sameContents(t, "snapshot written during writes", contents(t, s.restored(t, all, nil, buf.Bytes()), all), before)
}

func (s Suite) restoreSubset(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	// Two tasks of parallelism 2 own [0,8) and [8,16).
	r0, r1 := keygroup.RangeOf(0, 2, maxP), keygroup.RangeOf(1, 2, maxP)
	a, b := s.open(t, r0, nil), s.open(t, r1, nil)
	m := map[string]string{}
	for i := 0; i < 4000; i++ {
		g := rng.IntN(maxP)
		key, val := fmt.Sprintf("key-%d", i), fmt.Sprintf("v%d", i)
		owner := a
		if r1.Contains(g) {
			owner = b
		}
		mustPut(t, owner, k(g, "s", key), val, 0)
		m[fmt.Sprintf("%d/s/%s", g, key)] = val
	}
	sa, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	streamA, streamB := snapshotBytes(t, sa), snapshotBytes(t, sb)
	// Rescaled to 3 tasks: each restores both old snapshots and keeps its
	// own groups only.
	union := map[string]string{}
	for i := 0; i < 3; i++ {
		r := keygroup.RangeOf(i, 3, maxP)
		got := contents(t, s.restored(t, r, nil, streamA, streamB), r)
		wantPart := map[string]string{}
		for key, v := range m {
			var g int
			fmt.Sscanf(key, "%d/", &g)
			if r.Contains(g) {
				wantPart[key] = v
			}
		}
		sameContents(t, fmt.Sprintf("task %d of 3 (groups %v)", i, r), got, wantPart)
		for key, v := range got {
			if _, dup := union[key]; dup {
				t.Fatalf("%s restored by two tasks", key)
			}
			union[key] = v
		}
	}
	sameContents(t, "the union of the rescaled tasks", union, m)
}

func (s Suite) ttl(t *testing.T) {
	c := newClock()
	b := s.open(t, all, c)
	mustPut(t, b, k(1, "s", "short"), "s", c.after(time.Second))
	mustPut(t, b, k(1, "s", "long"), "l", c.after(time.Hour))
	mustPut(t, b, k(1, "s", "never"), "n", 0)
	want(t, b, k(1, "s", "short"), "s", true)
	c.set(c.now().Add(2 * time.Second))
	want(t, b, k(1, "s", "short"), "", false)
	want(t, b, k(1, "s", "long"), "l", true)
	mustPut(t, b, k(1, "s", "short2"), "s2", c.after(time.Second))
	if got := scanAll(t, b, 1, "s", ""); len(got) != 3 {
		t.Fatalf("scan with an expired entry = %v", got)
	}
	snap, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	stream := snapshotBytes(t, snap)
	// Restored before short2 expires: long, never and short2.
	if got := contents(t, s.restored(t, all, c, stream), all); len(got) != 3 || got["1/s/short2"] != "s2" {
		t.Fatalf("restored %v", got)
	}
	// Restored after: short2 is gone, long keeps its expiry.
	c.set(c.now().Add(time.Minute))
	r := s.restored(t, all, c, stream)
	if got := contents(t, r, all); len(got) != 2 || got["1/s/long"] != "l" || got["1/s/never"] != "n" {
		t.Fatalf("restored after an expiry %v", got)
	}
	c.set(c.now().Add(2 * time.Hour))
	want(t, r, k(1, "s", "long"), "", false)
	want(t, r, k(1, "s", "never"), "n", true)
	// A Put renews (or removes) the expiry.
	mustPut(t, b, k(1, "s", "never"), "n2", c.after(time.Second))
	mustPut(t, b, k(1, "s", "never"), "n3", 0)
	c.set(c.now().Add(time.Hour))
	want(t, b, k(1, "s", "never"), "n3", true)
}

func (s Suite) corrupt(t *testing.T) {
	b := s.open(t, all, nil)
	fill(t, b, rand.New(rand.NewPCG(7, 8)), 200)
	snap, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	stream := snapshotBytes(t, snap)
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("XXXX"), stream[4:]...),
		"truncated": stream[:len(stream)/2],
		"no end":    stream[:len(stream)-9],
		"flipped":   flip(stream, len(stream)/3),
		"checksum":  flip(stream, len(stream)-1),
		"trailing":  append(slices.Clone(stream), 0),
	} {
		r := s.open(t, all, nil)
		if err := r.Restore(bytes.NewReader(bad)); !errors.Is(err, statebackend.ErrCorrupt) {
			t.Errorf("%s stream: restore = %v, want ErrCorrupt", name, err)
		}
	}
}

func flip(b []byte, i int) []byte {
	out := slices.Clone(b)
	out[i] ^= 0x10
	return out
}

func (s Suite) clear(t *testing.T) {
	b := s.open(t, all, nil)
	fill(t, b, rand.New(rand.NewPCG(9, 10)), 100)
	if err := b.Clear(); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, b, all); len(got) != 0 {
		t.Fatalf("after Clear: %v", got)
	}
	mustPut(t, b, k(1, "s", "a"), "again", 0)
	want(t, b, k(1, "s", "a"), "again", true)
}
