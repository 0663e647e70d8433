package statebackend

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/egret-stream/egret/core/keygroup"
)

// Key addresses one entry: the key group of the user key, the name of the
// state it belongs to, and the user key's bytes.
type Key struct {
	Group int
	State string
	Key   []byte
}

// Options configure a backend for one task.
type Options struct {
	// Dir is a local directory the backend may own (backends on disk);
	// its contents are replaced.
	Dir string
	// MaxParallelism is the component's number of key groups and Groups
	// the ones this task owns: keys of other groups are refused, and a
	// restore keeps only the entries of these groups.
	MaxParallelism int
	Groups         keygroup.Range
	// Now returns the current time for time-to-live (time.Now when nil).
	Now func() time.Time
}

// Clock returns o.Now, or time.Now when it is nil.
func (o Options) Clock() func() time.Time {
	if o.Now == nil {
		return time.Now
	}
	return o.Now
}

// Backend holds the keyed state of one task. It is used from one goroutine
// (the task's), except Snapshot.WriteTo, which may run on another one while
// the task changes the backend.
//
// Contract (statebackendtest checks it):
//   - Get appends the value of k to dst; absent and expired entries are not
//     found. Put sets it, replacing an older value, with an expiry (0:
//     never; else unix nanoseconds, after which the entry is absent).
//     Delete removes it; deleting an absent key is not an error. A key whose
//     group is not one the task owns, or whose state name is empty or
//     contains a NUL byte, is refused with an error wrapping ErrBadKey.
//   - Scan calls f with the user key and value of every live entry of
//     state in group whose user key starts with prefix, in ascending key
//     order, until f returns false; ScanGroup does so for every state of
//     group, by state name then key. The slices are valid during the call
//     only; f must not change the backend.
//   - Snapshot forks a consistent view in a time independent of the
//     state's size; the view's WriteTo writes exactly the live entries at
//     the fork (no later change shows) in the format of format.go,
//     ascending. Release frees the view; a view may be written once.
//   - Restore adds the entries of a written snapshot that belong to the
//     task's groups and are not expired, over what the backend holds (a
//     task may restore several snapshots, of the tasks that owned its groups
//     before); a damaged stream is an error wrapping ErrCorrupt.
//   - Clear removes every entry; Close releases the backend (and its
//     directory's contents).
type Backend interface {
	Get(k Key, dst []byte) ([]byte, bool, error)
	Put(k Key, val []byte, expires int64) error
	Delete(k Key) error
	Scan(group int, state string, prefix []byte, f func(key, val []byte) bool) error
	ScanGroup(group int, f func(state string, key, val []byte) bool) error
	Snapshot() (Snapshot, error)
	Restore(r io.Reader) error
	Clear() error
	Close() error
}

// Snapshot is a consistent view of a backend, forked by Backend.Snapshot.
type Snapshot interface {
	WriteTo(w io.Writer) (int64, error)
	Release()
}

// Errors of the contract.
var (
	ErrBadKey  = errors.New("bad state key")
	ErrCorrupt = errors.New("damaged state snapshot")
)

// Factory opens a backend.
type Factory func(o Options) (Backend, error)

var (
	mu        sync.RWMutex
	factories = map[string]Factory{}
)

// Register makes a backend available under name; it is called from init
// functions, and a duplicate name panics.
func Register(name string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := factories[name]; dup {
		panic(fmt.Sprintf("statebackend: %q registered twice", name))
	}
	factories[name] = f
}

// Open opens the backend registered as name.
func Open(name string, o Options) (Backend, error) {
	mu.RLock()
	f, ok := factories[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("state backend %q is not built in (built in: %v)", name, Names())
	}
	if o.MaxParallelism < 1 || o.MaxParallelism > keygroup.Limit || o.Groups.Start < 0 || o.Groups.End > o.MaxParallelism || o.Groups.Len() < 1 {
		return nil, fmt.Errorf("state backend %s: key groups %v are not a non-empty range of [0, %d) (max parallelism in [1, %d])", name, o.Groups, o.MaxParallelism, keygroup.Limit)
	}
	return f(o)
}

// Names lists the registered backends, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(factories))
	for n := range factories {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
