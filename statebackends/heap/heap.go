package heap

import (
	"bytes"
	"io"
	"sync"

	"github.com/google/btree"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/statebackend"
)

// Name is the backend's name in topology.state.backend.
const Name = "heap"

func init() { statebackend.Register(Name, Open) }

type entry struct {
	key     []byte
	val     []byte
	expires int64
}

// newEntry returns an entry owning copies of key and val (one allocation):
// a snapshot may share it after the call.
func newEntry(key, val []byte, expires int64) entry {
	kv := make([]byte, len(key)+len(val))
	copy(kv, key)
	copy(kv[len(key):], val)
	return entry{key: kv[:len(key):len(key)], val: kv[len(key):], expires: expires}
}

func less(a, b entry) bool { return bytes.Compare(a.key, b.key) < 0 }

// degree of the B-tree: nodes of up to 2×degree−1 entries.
const degree = 32

// Backend is a heap backend.
type Backend struct {
	tree   *btree.BTreeG[entry]
	groups keygroup.Range
	now    func() int64
	buf    []byte
}

var _ statebackend.Backend = (*Backend)(nil)

// Open returns an empty heap backend.
func Open(o statebackend.Options) (statebackend.Backend, error) {
	clock := o.Clock()
	return &Backend{
		tree:   btree.NewG(degree, less),
		groups: o.Groups,
		now:    func() int64 { return clock().UnixNano() },
	}, nil
}

func (b *Backend) key(k statebackend.Key) (entry, error) {
	var err error
	b.buf, err = statebackend.AppendKey(b.buf[:0], k, b.groups)
	return entry{key: b.buf}, err
}

// Get appends the value of k to dst.
func (b *Backend) Get(k statebackend.Key, dst []byte) ([]byte, bool, error) {
	probe, err := b.key(k)
	if err != nil {
		return dst, false, err
	}
	e, ok := b.tree.Get(probe)
	if !ok {
		return dst, false, nil
	}
	if !statebackend.Live(e.expires, b.now()) {
		b.tree.Delete(probe)
		return dst, false, nil
	}
	return append(dst, e.val...), true, nil
}

// Put sets the value of k.
func (b *Backend) Put(k statebackend.Key, val []byte, expires int64) error {
	probe, err := b.key(k)
	if err != nil {
		return err
	}
	b.tree.ReplaceOrInsert(newEntry(probe.key, val, expires))
	return nil
}

// Delete removes k.
func (b *Backend) Delete(k statebackend.Key) error {
	probe, err := b.key(k)
	if err != nil {
		return err
	}
	b.tree.Delete(probe)
	return nil
}

// Scan calls f for the live entries of state in group whose key starts
// with prefix.
func (b *Backend) Scan(group int, state string, prefix []byte, f func(key, val []byte) bool) error {
	lo, skip, err := statebackend.StatePrefix(group, state, prefix, b.groups)
	if err != nil {
		return err
	}
	return b.scan(lo, func(e entry) bool { return f(e.key[skip:], e.val) })
}

// ScanGroup calls f for the live entries of group.
func (b *Backend) ScanGroup(group int, f func(state string, key, val []byte) bool) error {
	if err := statebackend.CheckGroup(group, b.groups); err != nil {
		return err
	}
	return b.scan(statebackend.AppendGroupPrefix(nil, group), func(e entry) bool {
		_, state, key, _ := statebackend.SplitKey(e.key)
		return f(string(state), key, e.val)
	})
}

func (b *Backend) scan(lo []byte, f func(entry) bool) error {
	now := b.now()
	visit := func(e entry) bool {
		if !statebackend.Live(e.expires, now) {
			return true
		}
		return f(e)
	}
	if hi := statebackend.PrefixEnd(lo); hi != nil {
		b.tree.AscendRange(entry{key: lo}, entry{key: hi}, visit)
	} else {
		b.tree.AscendGreaterOrEqual(entry{key: lo}, visit)
	}
	return nil
}

// Snapshot clones the tree: constant time.
func (b *Backend) Snapshot() (statebackend.Snapshot, error) {
	return &snapshot{tree: b.tree.Clone(), now: b.now()}, nil
}

type snapshot struct {
	once sync.Once
	tree *btree.BTreeG[entry]
	now  int64
}

// WriteTo streams the live entries at the fork.
func (s *snapshot) WriteTo(w io.Writer) (int64, error) {
	sw := statebackend.NewSnapshotWriter(w)
	var err error
	var val []byte
	s.tree.Ascend(func(e entry) bool {
		if !statebackend.Live(e.expires, s.now) {
			return true
		}
		val = statebackend.AppendValue(val[:0], e.val, e.expires)
		err = sw.Add(e.key, val)
		return err == nil
	})
	if err != nil {
		return 0, err
	}
	return sw.Finish()
}

// Release drops the clone.
func (s *snapshot) Release() { s.once.Do(func() { s.tree = nil }) }

// Restore adds the entries of a snapshot stream that belong to the task's
// groups and are alive.
func (b *Backend) Restore(r io.Reader) error {
	now := b.now()
	return statebackend.ReadSnapshot(r, func(key, val []byte) error {
		group, _, _, _ := statebackend.SplitKey(key)
		expires, v, _ := statebackend.SplitValue(val)
		if !b.groups.Contains(group) || !statebackend.Live(expires, now) {
			return nil
		}
		b.tree.ReplaceOrInsert(newEntry(key, v, expires))
		return nil
	})
}

// Clear removes every entry.
func (b *Backend) Clear() error {
	b.tree = btree.NewG(degree, less)
	return nil
}

// Close releases the backend.
func (b *Backend) Close() error { return b.Clear() }
