package pebble

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
)

// Name is the backend's name in topology.state.backend.
const Name = "pebble"

func init() { statebackend.Register(Name, Open) }

// Memory the backend keeps per task, outside the Go heap: the block cache
// and the memtable (two while one is flushed), at most these sizes, and
// each at most an eighth of the task's Go memory limit (GOMEMLIMIT, which
// the executor derives from the instance's ram): a task with a small limit
// keeps a small cache, so its state may outgrow its memory many times.
// The memtable is pebble's default size: a checkpoint copies the
// write-ahead log of the memtables not flushed yet, so its synchronous part
// grows with them.
const (
	cacheBytes       = 32 << 20
	MemTableBytes    = 4 << 20
	minCacheBytes    = 1 << 20
	minMemTableBytes = 1 << 20
	limitShare       = 8
)

// memory returns the block cache and memtable sizes for a task whose Go
// memory limit is limit (math.MaxInt64: none).
func memory(limit int64) (cache, memTable int64) {
	if limit == math.MaxInt64 {
		return cacheBytes, MemTableBytes
	}
	return min(max(limit/limitShare, minCacheBytes), cacheBytes), min(max(limit/limitShare, minMemTableBytes), MemTableBytes)
}

// offHeap returns what a backend with these sizes holds outside the Go
// heap at most: its cache and two memtables (one being flushed).
func offHeap(cache, memTable int64) int64 { return cache + 2*memTable }

// reserve lowers the process's Go memory limit, when one is set, by n
// bytes (raises it by -n): the memory limit the executor sets
// (GOMEMLIMIT) is the instance's, and the backend's cache and memtables,
// allocated outside the Go heap, are part of it.
func reserve(n int64) {
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		debug.SetMemoryLimit(max(limit-n, 1))
	}
}

// Backend is a pebble backend.
type Backend struct {
	db     *pebble.DB
	cache  interface{ Unref() }
	dir    string
	groups keygroup.Range
	now    func() int64
	kbuf   []byte
	vbuf   []byte
	// incarnation names the database's life; ckpts counts its
	// checkpoints (their directories' names).
	incarnation string
	ckpts       int
	// reserved is what the open database took out of the Go memory
	// limit (reserve).
	reserved int64
}

var _ statebackend.Backend = (*Backend)(nil)

// quiet drops pebble's informational logging and keeps its errors.
type quiet struct{ pebble.Logger }

func (quiet) Infof(string, ...any) {}

// Open opens an empty pebble backend in o.Dir, removing what it held.
func Open(o statebackend.Options) (statebackend.Backend, error) {
	if o.Dir == "" {
		return nil, errors.New("pebble state backend: no directory (the task's state directory is not set)")
	}
	if err := os.RemoveAll(o.Dir); err != nil {
		return nil, fmt.Errorf("pebble state backend: clear %s: %w", o.Dir, err)
	}
	removeCheckpoints(o.Dir)
	b := &Backend{dir: o.Dir, groups: o.Groups}
	clock := o.Clock()
	b.now = func() int64 { return clock().UnixNano() }
	if err := b.open(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Backend) open() error {
	limit := debug.SetMemoryLimit(-1) // the database is closed: nothing reserved
	cacheSize, memTableSize := memory(limit)
	cache := pebble.NewCache(cacheSize)
	db, err := pebble.Open(b.dir, &pebble.Options{
		Cache:        cache,
		MemTableSize: uint64(memTableSize),
		FS:           scratchFS{vfs.Default},
		Logger:       quiet{pebble.DefaultLogger},
	})
	if err != nil {
		cache.Unref()
		return fmt.Errorf("pebble state backend: open %s: %w", b.dir, err)
	}
	b.db, b.cache = db, cache
	b.incarnation = newIncarnation()
	if limit != math.MaxInt64 {
		b.reserved = offHeap(cacheSize, memTableSize)
		reserve(b.reserved)
	}
	return nil
}

// Get appends the value of k to dst.
func (b *Backend) Get(k statebackend.Key, dst []byte) ([]byte, bool, error) {
	var err error
	if b.kbuf, err = statebackend.AppendKey(b.kbuf[:0], k, b.groups); err != nil {
		return dst, false, err
	}
	v, closer, err := b.db.Get(b.kbuf)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, fmt.Errorf("pebble state backend: get: %w", err)
	}
	defer closer.Close()
	expires, val, ok := statebackend.SplitValue(v)
	if !ok {
		return dst, false, fmt.Errorf("pebble state backend: %w: stored value of %d bytes", statebackend.ErrCorrupt, len(v))
	}
	if !statebackend.Live(expires, b.now()) {
		return dst, false, b.db.Delete(b.kbuf, pebble.NoSync)
	}
	return append(dst, val...), true, nil
}

// Put sets the value of k.
func (b *Backend) Put(k statebackend.Key, val []byte, expires int64) error {
	var err error
	if b.kbuf, err = statebackend.AppendKey(b.kbuf[:0], k, b.groups); err != nil {
		return err
	}
	b.vbuf = statebackend.AppendValue(b.vbuf[:0], val, expires)
	if err := b.db.Set(b.kbuf, b.vbuf, pebble.NoSync); err != nil {
		return fmt.Errorf("pebble state backend: put: %w", err)
	}
	return nil
}

// Delete removes k.
func (b *Backend) Delete(k statebackend.Key) error {
	var err error
	if b.kbuf, err = statebackend.AppendKey(b.kbuf[:0], k, b.groups); err != nil {
		return err
	}
	if err := b.db.Delete(b.kbuf, pebble.NoSync); err != nil {
		return fmt.Errorf("pebble state backend: delete: %w", err)
	}
	return nil
}

type reader interface {
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// scan calls f with the stored key and the expiry and bytes of the value
// of every live entry from r with a key starting with lo.
func scan(r reader, lo []byte, now int64, f func(key []byte, expires int64, val []byte) bool) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: statebackend.PrefixEnd(lo)})
	if err != nil {
		return fmt.Errorf("pebble state backend: iterate: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fmt.Errorf("pebble state backend: iterate: %w", err)
		}
		expires, val, ok := statebackend.SplitValue(v)
		if !ok {
			it.Close()
			return fmt.Errorf("pebble state backend: %w: stored value of %d bytes", statebackend.ErrCorrupt, len(v))
		}
		if statebackend.Live(expires, now) && !f(it.Key(), expires, val) {
			break
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("pebble state backend: iterate: %w", err)
	}
	return nil
}

// Scan calls f for the live entries of state in group whose key starts
// with prefix.
func (b *Backend) Scan(group int, state string, prefix []byte, f func(key, val []byte) bool) error {
	lo, skip, err := statebackend.StatePrefix(group, state, prefix, b.groups)
	if err != nil {
		return err
	}
	return scan(b.db, lo, b.now(), func(key []byte, _ int64, val []byte) bool { return f(key[skip:], val) })
}

// ScanGroup calls f for the live entries of group.
func (b *Backend) ScanGroup(group int, f func(state string, key, val []byte) bool) error {
	if err := statebackend.CheckGroup(group, b.groups); err != nil {
		return err
	}
	return scan(b.db, statebackend.AppendGroupPrefix(nil, group), b.now(), func(k []byte, _ int64, val []byte) bool {
		_, state, key, _ := statebackend.SplitKey(k)
		return f(string(state), key, val)
	})
}

// Snapshot takes a pebble snapshot: constant time.
func (b *Backend) Snapshot() (statebackend.Snapshot, error) {
	return &snapshot{snap: b.db.NewSnapshot(), now: b.now()}, nil
}

type snapshot struct {
	once sync.Once
	snap *pebble.Snapshot
	now  int64
}

// WriteTo streams the live entries at the fork.
func (s *snapshot) WriteTo(w io.Writer) (int64, error) {
	sw := statebackend.NewSnapshotWriter(w)
	var werr error
	var val []byte
	err := scan(s.snap, nil, s.now, func(key []byte, expires int64, v []byte) bool {
		val = statebackend.AppendValue(val[:0], v, expires)
		werr = sw.Add(key, val)
		return werr == nil
	})
	if err != nil {
		return 0, err
	}
	if werr != nil {
		return 0, werr
	}
	return sw.Finish()
}

// Release closes the pebble snapshot.
func (s *snapshot) Release() { s.once.Do(func() { _ = s.snap.Close() }) }

// restoreBatch bounds the bytes of one restore batch.
const restoreBatch = 4 << 20

// Restore adds the entries of a snapshot stream that belong to the task's
// groups and are alive.
func (b *Backend) Restore(r io.Reader) error {
	now := b.now()
	batch := b.db.NewBatch()
	defer func() { _ = batch.Close() }()
	err := statebackend.ReadSnapshot(r, func(key, val []byte) error {
		group, _, _, _ := statebackend.SplitKey(key)
		expires, _, _ := statebackend.SplitValue(val)
		if !b.groups.Contains(group) || !statebackend.Live(expires, now) {
			return nil
		}
		if err := batch.Set(key, val, nil); err != nil {
			return err
		}
		if batch.Len() >= restoreBatch {
			if err := batch.Commit(pebble.NoSync); err != nil {
				return err
			}
			batch.Reset()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pebble state backend: restore: %w", err)
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("pebble state backend: restore: %w", err)
	}
	return nil
}

// Clear removes every entry: the database is dropped and opened again
// empty.
func (b *Backend) Clear() error {
	if err := b.Close(); err != nil {
		return err
	}
	if err := os.RemoveAll(b.dir); err != nil {
		return fmt.Errorf("pebble state backend: clear %s: %w", b.dir, err)
	}
	return b.open()
}

// Close closes the database and removes its files.
func (b *Backend) Close() error {
	if b.db == nil {
		return nil
	}
	err := b.db.Close()
	b.cache.Unref()
	b.db = nil
	reserve(-b.reserved)
	b.reserved = 0
	if rmErr := os.RemoveAll(b.dir); err == nil && rmErr != nil {
		err = rmErr
	}
	if err != nil {
		return fmt.Errorf("pebble state backend: close: %w", err)
	}
	return nil
}
