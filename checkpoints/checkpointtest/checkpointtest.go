package checkpointtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/spi/spitest"
)

// Suite is the conformance suite of one checkpoint storage.
type Suite struct {
	// Open returns a storage for one check (required). The suite closes
	// every storage it opens.
	Open func(ctx context.Context) (spi.CheckpointStorage, error)
	// Damage, when set, replaces the stored bytes of key (as the storage
	// keeps them, header included) with damage(bytes). The Corrupt check
	// uses it and is skipped without it.
	Damage func(ctx context.Context, key spi.CheckpointKey, damage func([]byte) []byte) error
	// LargeState is the size of the largest state the suite stores
	// (default 6 MiB: above gRPC's default 4 MiB message limit).
	LargeState int
	// LargeFile is the size of the largest checkpoint file the suite
	// writes (default 40 MiB: above the default frame limit and gRPC's
	// message limit).
	LargeFile int
	// NoFiles skips the checks of spi.CheckpointFiles; without it a
	// storage that does not implement them fails.
	NoFiles bool
}

// Run runs every check as a subtest of t.
func (s Suite) Run(t spitest.T) {
	t.Helper()
	if s.Open == nil {
		t.Fatal("checkpointtest: Suite.Open is required")
	}
	if s.LargeState <= 0 {
		s.LargeState = 6 << 20
	}
	if s.LargeFile <= 0 {
		s.LargeFile = 40 << 20
	}
	checks := []struct {
		name string
		f    func(spitest.T)
	}{
		{"RoundTrip", s.roundTrip},
		{"Replace", s.replace},
		{"Missing", s.missing},
		{"Corrupt", s.corrupt},
		{"ListAscending", s.listAscending},
		{"Delete", s.delete},
		{"Concurrent", s.concurrent},
		{"CancelledContext", s.cancelled},
		{"Closed", s.closed},
		{"HostileNames", s.hostile},
	}
	if !s.NoFiles {
		checks = append(checks, s.fileChecks()...)
	}
	for _, c := range checks {
		spitest.Run(t, c.name, c.f)
	}
}

func (s Suite) open(t spitest.T) spi.CheckpointStorage {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st, err := s.Open(ctx)
	if err != nil {
		t.Fatalf("open the storage: %v", err)
	}
	if st == nil {
		t.Fatal("checkpointtest: Open returned nil")
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func opCtx(t spitest.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), time.Minute)
}

// topology returns a topology name of this check and run: storages of one
// run may share their place of storage.
func topology(t spitest.T, what string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "ct-" + what + "-" + hex.EncodeToString(b[:])
}

func state(seed uint64, n int) []byte {
	b := make([]byte, n)
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	key[2] = byte(n)
	mrand.NewChaCha8(key).Read(b)
	return b
}

func store(t spitest.T, st spi.CheckpointStorage, key spi.CheckpointKey, b []byte) {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	if err := st.Store(ctx, key, b); err != nil {
		t.Fatalf("Store %+v (%d bytes): %v", key, len(b), err)
	}
}

func mustLoad(t spitest.T, st spi.CheckpointStorage, key spi.CheckpointKey, want []byte) {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	got, err := st.Load(ctx, key)
	if err != nil {
		t.Fatalf("Load %+v: %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Load %+v = %d bytes %s, want %d bytes %s", key, len(got), preview(got), len(want), preview(want))
	}
}

func mustNotFound(t spitest.T, st spi.CheckpointStorage, key spi.CheckpointKey) {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	got, err := st.Load(ctx, key)
	if !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("Load %+v = %d bytes, %v; want an error wrapping ErrNotFound", key, len(got), err)
	}
}

func list(t spitest.T, st spi.CheckpointStorage, topology string) []int64 {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	ids, err := st.List(ctx, topology)
	if err != nil {
		t.Fatalf("List %s: %v", topology, err)
	}
	return ids
}

func del(t spitest.T, st spi.CheckpointStorage, topology string, id int64) {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	if err := st.Delete(ctx, topology, id); err != nil {
		t.Fatalf("Delete %s checkpoint %d: %v", topology, id, err)
	}
}

func preview(b []byte) string {
	if len(b) > 16 {
		return fmt.Sprintf("%x...", b[:16])
	}
	return fmt.Sprintf("%x", b)
}

func (s Suite) roundTrip(t spitest.T) {
	st := s.open(t)
	topo := topology(t, "roundtrip")
	sizes := []int{0, 1, 100, 64 << 10, s.LargeState}
	for i, n := range sizes {
		key := spi.CheckpointKey{Topology: topo, Checkpoint: 1, Task: int32(i)}
		b := state(uint64(i), n)
		store(t, st, key, b)
		want := bytes.Clone(b)
		clear(b) // the storage must not keep the caller's slice
		mustLoad(t, st, key, want)
	}
	// A second storage (another container) sees what the first stored.
	other := s.open(t)
	mustLoad(t, other, spi.CheckpointKey{Topology: topo, Checkpoint: 1, Task: 2}, state(2, 100))
	if ids := list(t, other, topo); !slices.Equal(ids, []int64{1}) {
		t.Fatalf("List from a second storage = %v, want [1]", ids)
	}
}

func (s Suite) replace(t spitest.T) {
	st := s.open(t)
	key := spi.CheckpointKey{Topology: topology(t, "replace"), Checkpoint: 3, Task: 7}
	store(t, st, key, state(1, 5000))
	store(t, st, key, state(2, 10))
	mustLoad(t, st, key, state(2, 10))
	store(t, st, key, state(3, 70000))
	mustLoad(t, st, key, state(3, 70000))
	store(t, st, key, nil)
	mustLoad(t, st, key, []byte{})
	if ids := list(t, st, key.Topology); !slices.Equal(ids, []int64{3}) {
		t.Fatalf("List after replacing = %v, want [3]", ids)
	}
}

func (s Suite) missing(t spitest.T) {
	st := s.open(t)
	topo := topology(t, "missing")
	mustNotFound(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 1, Task: 1})
	store(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 1, Task: 1}, []byte("x"))
	mustNotFound(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 1, Task: 2})
	mustNotFound(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 2, Task: 1})
	mustNotFound(t, st, spi.CheckpointKey{Topology: topo + "-other", Checkpoint: 1, Task: 1})
	if ids := list(t, st, topo+"-none"); ids == nil || len(ids) != 0 {
		t.Fatalf("List of a topology without checkpoints = %#v, want an empty list", ids)
	}
}

func (s Suite) corrupt(t spitest.T) {
	if s.Damage == nil {
		t.Skip("the storage offers no Damage hook: damaged state is not checked")
	}
	st := s.open(t)
	topo := topology(t, "corrupt")
	good := state(9, 4096)
	damages := []struct {
		name string
		f    func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-100] }},
		{"truncated to nothing", func([]byte) []byte { return nil }},
		{"bit flip in the state", func(b []byte) []byte { b = bytes.Clone(b); b[len(b)-7] ^= 1; return b }},
		{"bit flip at the start", func(b []byte) []byte { b = bytes.Clone(b); b[0] ^= 0x80; return b }},
		{"garbage", func(b []byte) []byte { return bytes.Repeat([]byte("garbage!"), len(b)/8) }},
		{"extended", func(b []byte) []byte { return append(bytes.Clone(b), "trailing"...) }},
	}
	for i, d := range damages {
		key := spi.CheckpointKey{Topology: topo, Checkpoint: 5, Task: int32(i)}
		store(t, st, key, good)
		ctx, cancel := opCtx(t)
		err := s.Damage(ctx, key, d.f)
		cancel()
		if err != nil {
			t.Fatalf("Damage %+v: %v", key, err)
		}
		ctx, cancel = opCtx(t)
		got, err := st.Load(ctx, key)
		cancel()
		if !errors.Is(err, spi.ErrCorrupt) {
			t.Errorf("%s: Load = %d bytes, %v; want an error wrapping ErrCorrupt", d.name, len(got), err)
		}
		// Storing again repairs the key; deleting removes damaged state.
		store(t, st, key, good)
		mustLoad(t, st, key, good)
	}
	del(t, st, topo, 5)
	mustNotFound(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 5, Task: 0})
}

func (s Suite) listAscending(t spitest.T) {
	st := s.open(t)
	topo := topology(t, "list")
	other := topology(t, "list-other")
	for _, id := range []int64{10, 2, 1 << 40, 33, 0, 9, 100} {
		store(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: id, Task: int32(id % 5)}, []byte{byte(id)})
		store(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: id, Task: 99}, []byte{byte(id)})
	}
	store(t, st, spi.CheckpointKey{Topology: other, Checkpoint: 4, Task: 1}, []byte("o"))
	want := []int64{0, 2, 9, 10, 33, 100, 1 << 40}
	if ids := list(t, st, topo); !slices.Equal(ids, want) {
		t.Fatalf("List = %v, want %v (ascending, numerically)", ids, want)
	}
	if ids := list(t, st, other); !slices.Equal(ids, []int64{4}) {
		t.Fatalf("List of another topology = %v, want [4]", ids)
	}
}

func (s Suite) delete(t spitest.T) {
	st := s.open(t)
	topo := topology(t, "delete")
	for id := int64(1); id <= 3; id++ {
		for task := int32(1); task <= 4; task++ {
			store(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: id, Task: task}, []byte{byte(id), byte(task)})
		}
	}
	del(t, st, topo, 2)
	for task := int32(1); task <= 4; task++ {
		mustNotFound(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 2, Task: task})
		mustLoad(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 1, Task: task}, []byte{1, byte(task)})
		mustLoad(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 3, Task: task}, []byte{3, byte(task)})
	}
	if ids := list(t, st, topo); !slices.Equal(ids, []int64{1, 3}) {
		t.Fatalf("List after Delete 2 = %v, want [1 3]", ids)
	}
	del(t, st, topo, 2)                       // again
	del(t, st, topo, 77)                      // never stored
	del(t, st, topology(t, "delete-none"), 1) // unknown topology
	// A deleted checkpoint can be stored again.
	store(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 2, Task: 1}, []byte("again"))
	mustLoad(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 2, Task: 1}, []byte("again"))
	del(t, st, topo, 1)
	del(t, st, topo, 2)
	del(t, st, topo, 3)
	if ids := list(t, st, topo); len(ids) != 0 {
		t.Fatalf("List after deleting everything = %v, want []", ids)
	}
}

// concurrent: several storages (containers) store different tasks and
// checkpoints while older checkpoints are deleted.
func (s Suite) concurrent(t spitest.T) {
	topo := topology(t, "concurrent")
	const (
		writers     = 4
		checkpoints = 6
		tasks       = 3 // per writer
		old         = 5 // checkpoints 100.. deleted meanwhile
	)
	seed := s.open(t)
	for id := int64(100); id < 100+old; id++ {
		for task := int32(0); task < writers*tasks; task++ {
			store(t, seed, spi.CheckpointKey{Topology: topo, Checkpoint: id, Task: task}, []byte("old"))
		}
	}
	stores := make([]spi.CheckpointStorage, writers)
	for i := range stores {
		stores[i] = s.open(t)
	}
	ctx, cancel := opCtx(t)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, writers*checkpoints*tasks+old)
	for w := range writers {
		for task := range tasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tid := int32(w*tasks + task)
				for id := int64(1); id <= checkpoints; id++ {
					key := spi.CheckpointKey{Topology: topo, Checkpoint: id, Task: tid}
					if err := stores[w].Store(ctx, key, state(uint64(id)<<8|uint64(tid), 1000+int(tid))); err != nil {
						errs <- fmt.Errorf("store %+v: %w", key, err)
						return
					}
				}
			}()
		}
	}
	for id := int64(100); id < 100+old; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := stores[int(id)%writers].Delete(ctx, topo, id); err != nil {
				errs <- fmt.Errorf("delete of checkpoint %d: %w", id, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	for id := int64(1); id <= checkpoints; id++ {
		for tid := int32(0); tid < writers*tasks; tid++ {
			mustLoad(t, seed, spi.CheckpointKey{Topology: topo, Checkpoint: id, Task: tid}, state(uint64(id)<<8|uint64(tid), 1000+int(tid)))
		}
	}
	want := []int64{1, 2, 3, 4, 5, 6}
	if ids := list(t, seed, topo); !slices.Equal(ids, want) {
		t.Fatalf("List = %v, want %v", ids, want)
	}
}

func (s Suite) cancelled(t spitest.T) {
	st := s.open(t)
	topo := topology(t, "cancel")
	key := spi.CheckpointKey{Topology: topo, Checkpoint: 1, Task: 1}
	store(t, st, key, []byte("before"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := st.Store(ctx, spi.CheckpointKey{Topology: topo, Checkpoint: 2, Task: 1}, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Store with a cancelled context = %v, want context.Canceled", err)
	}
	if err := st.Store(ctx, key, []byte("after")); !errors.Is(err, context.Canceled) {
		t.Errorf("Store (replace) with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := st.Load(ctx, key); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := st.List(ctx, topo); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context = %v, want context.Canceled", err)
	}
	if err := st.Delete(ctx, topo, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled context = %v, want context.Canceled", err)
	}
	// Nothing happened.
	mustLoad(t, st, key, []byte("before"))
	mustNotFound(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 2, Task: 1})
	if ids := list(t, st, topo); !slices.Equal(ids, []int64{1}) {
		t.Fatalf("List = %v, want [1]", ids)
	}
}

func (s Suite) closed(t spitest.T) {
	st := s.open(t)
	topo := topology(t, "closed")
	key := spi.CheckpointKey{Topology: topo, Checkpoint: 1, Task: 1}
	store(t, st, key, []byte("x"))
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx, cancel := opCtx(t)
	defer cancel()
	if err := st.Store(ctx, key, []byte("y")); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("Store after Close = %v, want ErrClosed", err)
	}
	if _, err := st.Load(ctx, key); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("Load after Close = %v, want ErrClosed", err)
	}
	if _, err := st.List(ctx, topo); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("List after Close = %v, want ErrClosed", err)
	}
	if err := st.Delete(ctx, topo, 1); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("Delete after Close = %v, want ErrClosed", err)
	}
	// The state survives the storage that stored it.
	mustLoad(t, s.open(t), key, []byte("x"))
}

// hostile: names that are not topology names, and ids that are not ids,
// are refused; none reaches another topology's checkpoints.
func (s Suite) hostile(t spitest.T) {
	st := s.open(t)
	victim := topology(t, "victim")
	key := spi.CheckpointKey{Topology: victim, Checkpoint: 1, Task: 1}
	store(t, st, key, []byte("mine"))
	ctx, cancel := opCtx(t)
	defer cancel()
	for _, name := range []string{"", ".", "..", "../" + victim, victim + "/../" + victim, "/" + victim, "a/b", `a\b`, "x\x00y", "..\\..", "%2e%2e", strings.Repeat("t", 300), victim + "/1"} {
		if err := st.Store(ctx, spi.CheckpointKey{Topology: name, Checkpoint: 1, Task: 1}, []byte("evil")); err == nil {
			t.Errorf("Store with topology %q succeeded, want an error", name)
		}
		if b, err := st.Load(ctx, spi.CheckpointKey{Topology: name, Checkpoint: 1, Task: 1}); err == nil {
			t.Errorf("Load with topology %q = %q, want an error", name, b)
		}
		if ids, err := st.List(ctx, name); err == nil && len(ids) > 0 {
			t.Errorf("List with topology %q = %v, want an error or nothing", name, ids)
		}
		if err := st.Delete(ctx, name, 1); err == nil {
			t.Errorf("Delete with topology %q succeeded, want an error", name)
		}
	}
	if err := st.Store(ctx, spi.CheckpointKey{Topology: victim, Checkpoint: -1, Task: 1}, []byte("evil")); err == nil {
		t.Error("Store with checkpoint -1 succeeded, want an error")
	}
	if err := st.Store(ctx, spi.CheckpointKey{Topology: victim, Checkpoint: 1, Task: -1}, []byte("evil")); err == nil {
		t.Error("Store with task -1 succeeded, want an error")
	}
	if err := st.Delete(ctx, victim, -1); err == nil {
		t.Error("Delete of checkpoint -1 succeeded, want an error")
	}
	mustLoad(t, st, key, []byte("mine"))
	if ids := list(t, st, victim); !slices.Equal(ids, []int64{1}) {
		t.Fatalf("List of the victim = %v, want [1]", ids)
	}
}
