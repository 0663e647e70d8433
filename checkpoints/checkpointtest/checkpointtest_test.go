package checkpointtest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/checkpoints/checkpointtest"
	"github.com/egret-stream/egret/checkpoints/internal/blob"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/spi/spitest"
)

// memStore is a checkpoint storage in memory (the blobs of every storage
// opened by one run); its flaws are switchable, to show that the suite
// finds each.
type memStore struct {
	mu    sync.Mutex
	blobs map[spi.CheckpointKey][]byte
	files map[[2]string][]byte
}

type flaws struct {
	ignoreCtx, unsorted, deleteMissingFails, plainNotFound, noErrClosed,
	acceptsAnyName, keepsCallerSlice, noCorruptCheck, listEmptyNil, deleteOneTask,
	fileVisibleEarly, fileDeleteMissingFails bool
}

type memStorage struct {
	m *memStore
	flaws
	closed bool
}

func (s *memStorage) check(ctx context.Context, topology string) error {
	if s.closed && !s.noErrClosed {
		return spi.ErrClosed
	}
	if err := ctx.Err(); err != nil && !s.ignoreCtx {
		return err
	}
	if s.acceptsAnyName {
		return nil
	}
	return blob.CheckTopology(topology)
}

func (s *memStorage) Store(ctx context.Context, key spi.CheckpointKey, state []byte) error {
	if err := s.check(ctx, key.Topology); err != nil {
		return err
	}
	if !s.acceptsAnyName {
		if err := blob.CheckKey(key); err != nil {
			return err
		}
	}
	b := blob.Encode(state)
	if s.keepsCallerSlice {
		b = state
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.blobs[key] = b
	return nil
}

func (s *memStorage) Load(ctx context.Context, key spi.CheckpointKey) ([]byte, error) {
	if err := s.check(ctx, key.Topology); err != nil {
		return nil, err
	}
	s.m.mu.Lock()
	b, ok := s.m.blobs[key]
	s.m.mu.Unlock()
	if !ok {
		if s.plainNotFound {
			return nil, errors.New("no such state")
		}
		return nil, spi.ErrNotFound
	}
	if s.keepsCallerSlice {
		return b, nil
	}
	if s.noCorruptCheck && len(b) >= blob.HeaderSize {
		return bytes.Clone(b[blob.HeaderSize:]), nil
	}
	state, err := blob.Decode(b)
	return bytes.Clone(state), err
}

func (s *memStorage) List(ctx context.Context, topology string) ([]int64, error) {
	if err := s.check(ctx, topology); err != nil {
		return nil, err
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	var ids []int64
	if !s.listEmptyNil {
		ids = []int64{}
	}
	for k := range s.m.blobs {
		if k.Topology == topology && !slices.Contains(ids, k.Checkpoint) {
			ids = append(ids, k.Checkpoint)
		}
	}
	if s.unsorted {
		slices.SortFunc(ids, func(a, b int64) int { return strings.Compare(string(rune(a%1000)), string(rune(b%1000))) })
		slices.Reverse(ids)
	} else {
		slices.Sort(ids)
	}
	return ids, nil
}

func (s *memStorage) Delete(ctx context.Context, topology string, checkpoint int64) error {
	if err := s.check(ctx, topology); err != nil {
		return err
	}
	if checkpoint < 0 && !s.acceptsAnyName {
		return errors.New("negative id")
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	found := false
	for k := range s.m.blobs {
		if k.Topology == topology && k.Checkpoint == checkpoint {
			delete(s.m.blobs, k)
			found = true
			if s.deleteOneTask {
				break
			}
		}
	}
	if !found && s.deleteMissingFails {
		return spi.ErrNotFound
	}
	return nil
}

func (s *memStorage) Close() error {
	s.closed = true
	return nil
}

func (s *memStorage) checkFile(ctx context.Context, topology, name string) error {
	if err := s.check(ctx, topology); err != nil {
		return err
	}
	if s.acceptsAnyName {
		return nil
	}
	return spi.CheckFileName(name)
}

type memWriter struct {
	s    *memStorage
	ctx  context.Context
	key  [2]string
	buf  []byte
	done bool
}

func (w *memWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, errors.New("done")
	}
	w.buf = append(w.buf, p...)
	if w.s.fileVisibleEarly {
		w.s.m.mu.Lock()
		w.s.m.files[w.key] = w.buf
		w.s.m.mu.Unlock()
	}
	return len(p), nil
}

func (w *memWriter) Commit() error {
	if w.done {
		return errors.New("done")
	}
	w.done = true
	if err := w.ctx.Err(); err != nil {
		return err
	}
	w.s.m.mu.Lock()
	w.s.m.files[w.key] = w.buf
	w.s.m.mu.Unlock()
	return nil
}

func (w *memWriter) Abort() error { w.done = true; return nil }

func (s *memStorage) CreateFile(ctx context.Context, topology, name string) (spi.FileWriter, error) {
	if err := s.checkFile(ctx, topology, name); err != nil {
		return nil, err
	}
	return &memWriter{s: s, ctx: ctx, key: [2]string{topology, name}}, nil
}

type memReader struct {
	*bytes.Reader
}

func (memReader) Close() error { return nil }

func (s *memStorage) OpenFile(ctx context.Context, topology, name string) (spi.FileReader, error) {
	if err := s.checkFile(ctx, topology, name); err != nil {
		return nil, err
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	b, ok := s.m.files[[2]string{topology, name}]
	if !ok {
		return nil, spi.ErrNotFound
	}
	return memReader{bytes.NewReader(b)}, nil
}

func (s *memStorage) ListFiles(ctx context.Context, topology string) ([]spi.FileInfo, error) {
	if err := s.check(ctx, topology); err != nil {
		return nil, err
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	out := []spi.FileInfo{}
	for k, b := range s.m.files {
		if k[0] == topology {
			out = append(out, spi.FileInfo{Name: k[1], Size: int64(len(b))})
		}
	}
	slices.SortFunc(out, func(a, b spi.FileInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *memStorage) DeleteFile(ctx context.Context, topology, name string) error {
	if err := s.checkFile(ctx, topology, name); err != nil {
		return err
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	k := [2]string{topology, name}
	if _, ok := s.m.files[k]; !ok && s.fileDeleteMissingFails {
		return spi.ErrNotFound
	}
	delete(s.m.files, k)
	return nil
}

func run(f flaws) []spitest.Result {
	m := &memStore{blobs: map[spi.CheckpointKey][]byte{}, files: map[[2]string][]byte{}}
	suite := checkpointtest.Suite{
		Open: func(context.Context) (spi.CheckpointStorage, error) { return &memStorage{m: m, flaws: f}, nil },
		Damage: func(_ context.Context, key spi.CheckpointKey, damage func([]byte) []byte) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			b, ok := m.blobs[key]
			if !ok {
				return spi.ErrNotFound
			}
			m.blobs[key] = damage(b)
			return nil
		},
		LargeState: 256 << 10,
		LargeFile:  3 << 20,
	}
	rep := spitest.NewReporter(io.Discard, spitest.Options{CheckTimeout: 2 * time.Minute})
	rep.Run(context.Background(), "ckpt", suite.Run)
	return rep.Results()
}

func failed(results []spitest.Result) []string {
	var out []string
	for _, r := range results {
		if r.Status == spitest.Fail {
			out = append(out, r.Name)
		}
	}
	return out
}

func TestSuitePassesACorrectStorage(t *testing.T) {
	if f := failed(run(flaws{})); len(f) != 0 {
		t.Fatalf("checks failed on a correct storage: %v", f)
	}
}

// TestSuiteFindsEachFlaw: every flaw fails the check meant to catch it.
func TestSuiteFindsEachFlaw(t *testing.T) {
	for _, tc := range []struct {
		flaw    string
		storage flaws
		check   string
	}{
		{"ignores a cancelled context", flaws{ignoreCtx: true}, "CancelledContext"},
		{"lists out of order", flaws{unsorted: true}, "ListAscending"},
		{"fails deleting a missing checkpoint", flaws{deleteMissingFails: true}, "Delete"},
		{"deletes one task of a checkpoint", flaws{deleteOneTask: true}, "Delete"},
		{"returns a plain error for a missing state", flaws{plainNotFound: true}, "Missing"},
		{"works after Close", flaws{noErrClosed: true}, "Closed"},
		{"accepts hostile names", flaws{acceptsAnyName: true}, "HostileNames"},
		{"keeps the caller's slice", flaws{keepsCallerSlice: true}, "RoundTrip"},
		{"does not check stored bytes", flaws{noCorruptCheck: true}, "Corrupt"},
		{"lists nothing as nil", flaws{listEmptyNil: true}, "Missing"},
		{"shows a file before its commit", flaws{fileVisibleEarly: true}, "FileAtomic"},
		{"fails deleting a missing file", flaws{fileDeleteMissingFails: true}, "FileDelete"},
	} {
		f := failed(run(tc.storage))
		if !slices.ContainsFunc(f, func(n string) bool { return strings.HasSuffix(n, "/"+tc.check) }) {
			t.Errorf("a storage that %s: failed checks %v, want %s among them", tc.flaw, f, tc.check)
		}
	}
}
