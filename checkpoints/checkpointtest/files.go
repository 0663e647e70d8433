package checkpointtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/spi/spitest"
)

// fileChecks are the checks of spi.CheckpointFiles.
func (s Suite) fileChecks() []struct {
	name string
	f    func(spitest.T)
} {
	return []struct {
		name string
		f    func(spitest.T)
	}{
		{"FileRoundTrip", s.fileRoundTrip},
		{"FileAtomic", s.fileAtomic},
		{"FileDelete", s.fileDelete},
		{"FileConcurrent", s.fileConcurrent},
		{"FileCancelledContext", s.fileCancelled},
		{"FileClosed", s.fileClosed},
		{"FileHostileNames", s.fileHostile},
	}
}

func (s Suite) files(t spitest.T) (spi.CheckpointStorage, spi.CheckpointFiles) {
	t.Helper()
	st := s.open(t)
	f, err := spi.FilesOf(st)
	if err != nil {
		t.Fatal(err)
	}
	return st, f
}

// stream is n bytes of deterministic content, produced without holding
// them: big files are checked by length and hash.
type stream struct {
	rng  *mrand.ChaCha8
	left int64
}

func newStream(seed uint64, n int64) *stream {
	var key [32]byte
	key[0], key[1], key[2] = byte(seed), byte(seed>>8), byte(n)
	return &stream{rng: mrand.NewChaCha8(key), left: n}
}

func (r *stream) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	_, _ = r.rng.Read(p)
	r.left -= int64(len(p))
	return len(p), nil
}

func sum(r io.Reader) (uint64, int64, error) {
	d := xxhash.New()
	n, err := io.Copy(d, r)
	return d.Sum64(), n, err
}

// writeFile writes n bytes of content seed in chunks of irregular sizes
// and commits them.
func writeFile(t spitest.T, f spi.CheckpointFiles, topo, name string, seed uint64, n int64) {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	w, err := f.CreateFile(ctx, topo, name)
	if err != nil {
		t.Fatalf("CreateFile %s/%s: %v", topo, name, err)
	}
	if _, err := w.Write(nil); err != nil { // an empty write is a write of nothing
		_ = w.Abort()
		t.Fatalf("empty write to %s/%s: %v", topo, name, err)
	}
	src := newStream(seed, n)
	buf := make([]byte, 1<<20)
	for i := 1; ; i++ {
		k, _ := src.Read(buf[:1+(i*7919)%len(buf)])
		if k == 0 {
			break
		}
		if _, err := w.Write(buf[:k]); err != nil {
			_ = w.Abort()
			t.Fatalf("write %s/%s: %v", topo, name, err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit %s/%s (%d bytes): %v", topo, name, n, err)
	}
}

func mustFile(t spitest.T, f spi.CheckpointFiles, topo, name string, seed uint64, n int64) {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	r, err := f.OpenFile(ctx, topo, name)
	if err != nil {
		t.Fatalf("OpenFile %s/%s: %v", topo, name, err)
	}
	defer r.Close()
	if r.Size() != n {
		t.Fatalf("OpenFile %s/%s: Size = %d, want %d", topo, name, r.Size(), n)
	}
	got, gotN, err := sum(r)
	if err != nil {
		t.Fatalf("read %s/%s: %v", topo, name, err)
	}
	want, _, _ := sum(newStream(seed, n))
	if gotN != n || got != want {
		t.Fatalf("read %s/%s: %d bytes hashing to %x, want %d bytes hashing to %x", topo, name, gotN, got, n, want)
	}
}

func mustNoFile(t spitest.T, f spi.CheckpointFiles, topo, name string) {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	r, err := f.OpenFile(ctx, topo, name)
	if err == nil {
		r.Close()
		t.Fatalf("OpenFile %s/%s succeeded, want an error wrapping ErrNotFound", topo, name)
	}
	if !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("OpenFile %s/%s = %v, want an error wrapping ErrNotFound", topo, name, err)
	}
}

func listFiles(t spitest.T, f spi.CheckpointFiles, topo string) []spi.FileInfo {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	l, err := f.ListFiles(ctx, topo)
	if err != nil {
		t.Fatalf("ListFiles %s: %v", topo, err)
	}
	if l == nil {
		t.Fatalf("ListFiles %s = nil, want a non-nil list", topo)
	}
	return l
}

func (s Suite) fileRoundTrip(t spitest.T) {
	st, f := s.files(t)
	topo := topology(t, "files")
	sizes := []int64{0, 1, 4095, 1 << 20, int64(s.LargeFile)}
	var want []spi.FileInfo
	for i, n := range sizes {
		name := fmt.Sprintf("%d-task-%d.sst", 7, i)
		writeFile(t, f, topo, name, uint64(i), n)
		want = append(want, spi.FileInfo{Name: name, Size: n})
	}
	for i, n := range sizes {
		mustFile(t, f, topo, want[i].Name, uint64(i), n)
	}
	if got := listFiles(t, f, topo); !slices.Equal(got, want) {
		t.Fatalf("ListFiles = %v, want %v", got, want)
	}
	// Files are not checkpoints: List shows no checkpoint for them.
	if ids := list(t, st, topo); len(ids) != 0 {
		t.Fatalf("List of a topology with files only = %v, want []", ids)
	}
	// Another storage (container) reads them, and a manifest stored
	// next to them does not show among the files.
	other, of := s.files(t)
	mustFile(t, of, topo, want[2].Name, 2, sizes[2])
	store(t, other, spi.CheckpointKey{Topology: topo, Checkpoint: 7, Task: 1}, []byte("manifest"))
	if got := listFiles(t, of, topo); !slices.Equal(got, want) {
		t.Fatalf("ListFiles after a Store = %v, want %v", got, want)
	}
	if got := listFiles(t, f, topology(t, "files-none")); len(got) != 0 {
		t.Fatalf("ListFiles of a topology without files = %v", got)
	}
}

// fileAtomic: nothing written shows before Commit; Abort and a writer
// that is abandoned (the process crashed) leave the name as it was.
func (s Suite) fileAtomic(t spitest.T) {
	st, f := s.files(t)
	topo := topology(t, "atomic")
	ctx, cancel := opCtx(t)
	defer cancel()
	partial := func(name string) spi.FileWriter {
		t.Helper()
		w, err := f.CreateFile(ctx, topo, name)
		if err != nil {
			t.Fatalf("CreateFile %s: %v", name, err)
		}
		if _, err := io.Copy(w, newStream(99, 3<<20)); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		return w
	}
	abandoned := partial("crashed")
	_ = abandoned // never committed nor aborted: what a crash of the writer leaves
	w := partial("aborted")
	mustNoFile(t, f, topo, "crashed")
	mustNoFile(t, f, topo, "aborted")
	if err := w.Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("second Abort: %v", err)
	}
	mustNoFile(t, f, topo, "aborted")
	if got := listFiles(t, f, topo); len(got) != 0 {
		t.Fatalf("ListFiles with only uncommitted files = %v, want []", got)
	}
	if err := w.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	// A replacement shows only once committed.
	writeFile(t, f, topo, "replaced", 1, 5000)
	w = partial("replaced")
	mustFile(t, f, topo, "replaced", 1, 5000)
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	mustFile(t, f, topo, "replaced", 1, 5000)
	writeFile(t, f, topo, "replaced", 2, 70000)
	mustFile(t, f, topo, "replaced", 2, 70000)
	if got := listFiles(t, f, topo); !slices.Equal(got, []spi.FileInfo{{Name: "replaced", Size: 70000}}) {
		t.Fatalf("ListFiles = %v, want only the committed file", got)
	}
	if err := w.Abort(); err != nil { // after a commit of another writer
		t.Fatal(err)
	}
	// What the crashed writer left is removed by a storage that removes
	// temporaries (spi.TempRemover), once old enough; a file being
	// written is not, and commits.
	tr, ok := st.(spi.TempRemover)
	if !ok {
		return
	}
	live := partial("live")
	if n, err := tr.RemoveTemps(ctx, topo, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("RemoveTemps of what is older than an hour = %d, %v; want 0, nil", n, err)
	}
	if err := live.Commit(); err != nil {
		t.Fatalf("Commit after RemoveTemps of older temporaries: %v", err)
	}
	n, err := tr.RemoveTemps(ctx, topo, time.Now().Add(time.Hour))
	if err != nil || n < 1 {
		t.Fatalf("RemoveTemps of everything = %d, %v; want the crashed writer's file removed", n, err)
	}
	if n, err := tr.RemoveTemps(ctx, topo, time.Now().Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("RemoveTemps again = %d, %v; want 0, nil", n, err)
	}
	mustFile(t, f, topo, "replaced", 2, 70000)
	mustFile(t, f, topo, "live", 99, 3<<20)
}

func (s Suite) fileDelete(t spitest.T) {
	st, f := s.files(t)
	topo := topology(t, "filedel")
	writeFile(t, f, topo, "a", 1, 100)
	writeFile(t, f, topo, "b", 2, 100)
	store(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 1, Task: 1}, []byte("m"))
	ctx, cancel := opCtx(t)
	defer cancel()
	for range 2 { // deleting twice is not an error
		if err := f.DeleteFile(ctx, topo, "a"); err != nil {
			t.Fatalf("DeleteFile: %v", err)
		}
	}
	if err := f.DeleteFile(ctx, topology(t, "filedel-none"), "a"); err != nil {
		t.Fatalf("DeleteFile in a topology without files: %v", err)
	}
	mustNoFile(t, f, topo, "a")
	mustFile(t, f, topo, "b", 2, 100)
	if got := listFiles(t, f, topo); !slices.Equal(got, []spi.FileInfo{{Name: "b", Size: 100}}) {
		t.Fatalf("ListFiles after a delete = %v", got)
	}
	// Deleting a checkpoint leaves the files; deleting files leaves the
	// manifests.
	mustLoad(t, st, spi.CheckpointKey{Topology: topo, Checkpoint: 1, Task: 1}, []byte("m"))
	del(t, st, topo, 1)
	mustFile(t, f, topo, "b", 2, 100)
	writeFile(t, f, topo, "a", 3, 10) // a deleted name can be written again
	mustFile(t, f, topo, "a", 3, 10)
}

func (s Suite) fileConcurrent(t spitest.T) {
	topo := topology(t, "fileconc")
	const writers, per = 4, 5
	_, seed := s.files(t)
	for i := range writers * per {
		writeFile(t, seed, topo, fmt.Sprintf("old-%d", i), uint64(i), 1000)
	}
	fs := make([]spi.CheckpointFiles, writers)
	for i := range fs {
		_, fs[i] = s.files(t)
	}
	ctx, cancel := opCtx(t)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*per)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				name := fmt.Sprintf("new-%d-%d", w, i)
				fw, err := fs[w].CreateFile(ctx, topo, name)
				if err == nil {
					_, err = io.Copy(fw, newStream(uint64(w*per+i), 200<<10))
					if err == nil {
						err = fw.Commit()
					} else {
						_ = fw.Abort()
					}
				}
				if err != nil {
					errs <- fmt.Errorf("write %s: %w", name, err)
				}
				if err := fs[w].DeleteFile(ctx, topo, fmt.Sprintf("old-%d", w*per+i)); err != nil {
					errs <- err
				}
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
	var want []spi.FileInfo
	for w := range writers {
		for i := range per {
			name := fmt.Sprintf("new-%d-%d", w, i)
			mustFile(t, seed, topo, name, uint64(w*per+i), 200<<10)
			want = append(want, spi.FileInfo{Name: name, Size: 200 << 10})
		}
	}
	if got := listFiles(t, seed, topo); !slices.Equal(got, want) {
		t.Fatalf("ListFiles = %v, want %v", got, want)
	}
}

func (s Suite) fileCancelled(t spitest.T) {
	_, f := s.files(t)
	topo := topology(t, "filecancel")
	writeFile(t, f, topo, "kept", 1, 100)
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	if w, err := f.CreateFile(ended, topo, "new"); !errors.Is(err, context.Canceled) {
		if err == nil {
			_ = w.Abort()
		}
		t.Errorf("CreateFile with a cancelled context = %v, want context.Canceled", err)
	}
	if r, err := f.OpenFile(ended, topo, "kept"); !errors.Is(err, context.Canceled) {
		if err == nil {
			r.Close()
		}
		t.Errorf("OpenFile with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := f.ListFiles(ended, topo); !errors.Is(err, context.Canceled) {
		t.Errorf("ListFiles with a cancelled context = %v, want context.Canceled", err)
	}
	if err := f.DeleteFile(ended, topo, "kept"); !errors.Is(err, context.Canceled) {
		t.Errorf("DeleteFile with a cancelled context = %v, want context.Canceled", err)
	}
	// A context that ends while the file is written: the commit fails
	// and nothing shows.
	ctx, cancel := context.WithCancel(t.Context())
	w, err := f.CreateFile(ctx, topo, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(bytes.Repeat([]byte("x"), 1000)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := w.Commit(); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit after the context ended = %v, want context.Canceled", err)
	}
	_ = w.Abort()
	mustFile(t, f, topo, "kept", 1, 100)
	if got := listFiles(t, f, topo); !slices.Equal(got, []spi.FileInfo{{Name: "kept", Size: 100}}) {
		t.Fatalf("ListFiles = %v", got)
	}
}

func (s Suite) fileClosed(t spitest.T) {
	st, f := s.files(t)
	topo := topology(t, "fileclosed")
	writeFile(t, f, topo, "kept", 1, 100)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := opCtx(t)
	defer cancel()
	if _, err := f.CreateFile(ctx, topo, "x"); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("CreateFile after Close = %v, want ErrClosed", err)
	}
	if _, err := f.OpenFile(ctx, topo, "kept"); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("OpenFile after Close = %v, want ErrClosed", err)
	}
	if _, err := f.ListFiles(ctx, topo); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("ListFiles after Close = %v, want ErrClosed", err)
	}
	if err := f.DeleteFile(ctx, topo, "kept"); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("DeleteFile after Close = %v, want ErrClosed", err)
	}
	_, f2 := s.files(t)
	mustFile(t, f2, topo, "kept", 1, 100)
}

func (s Suite) fileHostile(t spitest.T) {
	_, f := s.files(t)
	victim := topology(t, "filevictim")
	writeFile(t, f, victim, "mine", 1, 10)
	ctx, cancel := opCtx(t)
	defer cancel()
	bad := []struct{ topo, name string }{
		{victim, ""}, {victim, "."}, {victim, ".."}, {victim, "../mine"}, {victim, "a/b"}, {victim, `a\b`},
		{victim, ".tmp-mine"}, {victim, "x\x00y"}, {victim, strings.Repeat("n", spi.MaxFileName+1)},
		{victim, "../1/1.state"}, {victim, "sp ace"}, {"../" + victim, "mine"}, {"", "mine"}, {"a/b", "mine"},
	}
	for _, b := range bad {
		if w, err := f.CreateFile(ctx, b.topo, b.name); err == nil {
			_ = w.Abort()
			t.Errorf("CreateFile(%q, %q) succeeded, want an error", b.topo, b.name)
		}
		if r, err := f.OpenFile(ctx, b.topo, b.name); err == nil {
			r.Close()
			t.Errorf("OpenFile(%q, %q) succeeded, want an error", b.topo, b.name)
		}
		if err := f.DeleteFile(ctx, b.topo, b.name); err == nil {
			t.Errorf("DeleteFile(%q, %q) succeeded, want an error", b.topo, b.name)
		}
	}
	mustFile(t, f, victim, "mine", 1, 10)
}
