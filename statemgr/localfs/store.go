package localfs

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/safepath"
	"github.com/egret-stream/egret/statemgr/internal/nodepath"
	"github.com/egret-stream/egret/statemgr/internal/smops"
	"github.com/egret-stream/egret/statemgr/internal/watchstate"
)

// On-disk layout below the root directory:
//
//	lock             flock(2) target; every operation holds it exclusively
//	tree/@node       the root node; tree/a/b/@node is node /a/b
//	txn/             undo journal of the running (or crashed) transaction
//	sessions/<id>    one lease file per session; its mtime is the heartbeat
//	trash/           directories being removed
//
// Names are restricted to [A-Za-z0-9._-], so "@node" and "@tmp-*" never
// collide with a child directory.
const (
	lockFile    = "lock"
	treeDir     = "tree"
	txnDir      = "txn"
	sessionsDir = "sessions"
	trashDir    = "trash"
	nodeFile    = "@node"
	tmpPrefix   = "@tmp-"
	journalLog  = "log"
)

// header is the first line of a node file; the data follows it. Size and
// CRC describe the data, so that a truncated or overwritten node file is
// reported as corrupt instead of returning damaged bytes (node files
// written before they existed have neither and are not checked).
type header struct {
	Version int64   `json:"v"`
	ID      int64   `json:"id"`
	Owner   string  `json:"eph,omitempty"` // session id of an ephemeral node
	Size    *int    `json:"n,omitempty"`
	CRC     *uint32 `json:"crc,omitempty"`
}

type fnode struct {
	header
	data []byte
}

func randomID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) >> 1)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// lockStore takes the store-wide exclusive flock, waiting until ctx ends.
func (m *StateManager) lockStore(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(filepath.Join(m.root, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localfs state manager: open lock file: %w", err)
	}
	fd := int(f.Fd())
	release := func() { f.Close() } // closing the file releases the flock
	err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return release, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("localfs state manager: flock %s: %w", f.Name(), err)
	}
	got := make(chan error, 1)
	go func() {
		for {
			err := syscall.Flock(fd, syscall.LOCK_EX)
			if !errors.Is(err, syscall.EINTR) {
				got <- err
				return
			}
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("localfs state manager: flock %s: %w", f.Name(), err)
		}
		return release, nil
	case <-ctx.Done():
		go func() { <-got; f.Close() }()
		return nil, ctx.Err()
	}
}

// tx is one operation (or Multi) on the store, run while holding the
// store lock. Mutations are recorded in an undo journal first, so that
// abort, or the next lock holder after a crash, can roll them back.
type tx struct {
	m       *StateManager
	ctx     context.Context
	sid     string
	now     time.Time
	alive   map[string]bool
	j       *journal
	mutated bool
}

// run runs f holding the store lock: it first rolls back a transaction a
// crashed process left behind, then commits what f did, or rolls it back
// when f calls abort.
func (m *StateManager) run(ctx context.Context, f func(*tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock, err := m.lockStore(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := m.recoverLocked(); err != nil {
		return err
	}
	m.mu.Lock()
	sid := m.sid
	m.mu.Unlock()
	t := &tx{m: m, ctx: ctx, sid: sid, now: time.Now(), alive: map[string]bool{}}
	ferr := f(t)
	if ferr != nil {
		if err := t.abort(); err != nil {
			return fmt.Errorf("%w (and rolling back failed: %v)", ferr, err)
		}
	}
	if t.j != nil {
		if err := t.j.commit(m); err != nil {
			return err
		}
	}
	if t.mutated {
		m.notifyLocal()
	}
	return ferr
}

// dir is the directory of node p (a checked node path), built through
// safepath so that it lies below the tree whatever p holds.
func (m *StateManager) dir(p string) (string, error) {
	d, err := safepath.Join(filepath.Join(m.root, treeDir), nodepath.Names(p)...)
	if err != nil {
		return "", fmt.Errorf("localfs state manager: node %s: %w", p, err)
	}
	return d, nil
}

// readNode reads the node file in dir: nil when there is none, an error
// wrapping spi.ErrCorrupt when it cannot be trusted (no or a garbage
// header line, data of another size or checksum than the header says).
func readNode(dir string) (*fnode, error) {
	file := filepath.Join(dir, nodeFile)
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	corrupt := func(why string) error { return fmt.Errorf("node file %s: %s: %w", file, why, spi.ErrCorrupt) }
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, corrupt("no header line")
	}
	n := &fnode{}
	if err := json.Unmarshal(b[:i], &n.header); err != nil {
		return nil, corrupt("unreadable header (" + err.Error() + ")")
	}
	n.data = b[i+1:]
	if n.Size != nil && *n.Size != len(n.data) {
		return nil, corrupt(fmt.Sprintf("%d bytes of data, the header says %d (truncated?)", len(n.data), *n.Size))
	}
	if n.CRC != nil && *n.CRC != crc32.ChecksumIEEE(n.data) {
		return nil, corrupt("the data does not match the header's checksum")
	}
	return n, nil
}

// writeNode atomically replaces dir/@node (write a temporary file, rename).
func writeNode(dir string, n *fnode) error {
	size, sum := len(n.data), crc32.ChecksumIEEE(n.data)
	n.Size, n.CRC = &size, &sum
	h, err := json.Marshal(n.header)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(h)+1+len(n.data))
	buf = append(append(append(buf, h...), '\n'), n.data...)
	tmp := filepath.Join(dir, tmpPrefix+randomHex(6))
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, nodeFile)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// get returns the node at p, or nil when it is absent. An ephemeral node
// whose session is dead is absent, and removed.
func (t *tx) get(p string) (*fnode, error) {
	d, err := t.m.dir(p)
	if err != nil {
		return nil, err
	}
	n, err := readNode(d)
	if err != nil || n == nil {
		return nil, err
	}
	if n.Owner != "" && !t.isAlive(n.Owner) {
		if err := t.removeDir(p); err != nil {
			return nil, err
		}
		t.m.log.Debug("removed ephemeral node of a dead session", zap.String("path", p), zap.String("session", n.Owner))
		return nil, nil
	}
	return n, nil
}

// children returns the names of p's (present) children, sorted.
func (t *tx) children(p string) ([]string, []*fnode, error) {
	d, err := t.m.dir(p)
	if err != nil {
		return nil, nil, err
	}
	ents, err := os.ReadDir(d)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	var names []string
	var nodes []*fnode
	for _, e := range ents { // sorted by name
		if !e.IsDir() || nodepath.CheckName(e.Name()) != nil {
			continue
		}
		c, err := t.get(nodepath.Join(p, e.Name()))
		if errors.Is(err, spi.ErrCorrupt) {
			// A corrupt node exists: list it, so that it can be found
			// and deleted.
			c, err = &fnode{}, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if c != nil {
			names = append(names, e.Name())
			nodes = append(nodes, c)
		}
	}
	return names, nodes, nil
}

// state is what a watch compares between polls.
func (t *tx) state(p string) (watchstate.State, error) {
	n, err := t.get(p)
	if err != nil || n == nil {
		return watchstate.State{}, err
	}
	names, nodes, err := t.children(p)
	if err != nil {
		return watchstate.State{}, err
	}
	h := fnv.New64a()
	var b [8]byte
	for i, name := range names {
		h.Write([]byte(name))
		binary.BigEndian.PutUint64(b[:], uint64(nodes[i].ID))
		h.Write(b[:])
	}
	return watchstate.State{Exists: true, ID: n.ID, Version: n.Version, Children: h.Sum64()}, nil
}

func (t *tx) create(p string, data []byte, ephemeral bool) error {
	n, err := t.get(p)
	if err != nil {
		return err
	}
	if n != nil {
		return fmt.Errorf("create %s: %w", p, spi.ErrExists)
	}
	var missing []string
	for _, a := range nodepath.Ancestors(p) {
		if len(missing) > 0 {
			missing = append(missing, a)
			continue
		}
		an, err := t.get(a)
		if errors.Is(err, spi.ErrCorrupt) {
			an, err = &fnode{}, nil // it exists; its own data does not matter here
		}
		if err != nil {
			return err
		}
		if an == nil {
			missing = append(missing, a)
		} else if an.Owner != "" {
			return fmt.Errorf("create %s: parent %s is ephemeral: %w", p, a, smops.ErrEphemeralParent)
		}
	}
	owner := ""
	if ephemeral {
		if owner, err = t.ownSession(); err != nil {
			return err
		}
	}
	chain := append(missing, p)
	top, err := t.m.dir(chain[0])
	if err != nil {
		return err
	}
	// A directory without a node file is debris of a crash: clear it.
	if err := t.trash(top); err != nil {
		return err
	}
	if err := t.journal().record(undo{Op: "remove", Target: t.rel(top)}); err != nil {
		return err
	}
	for i, q := range chain {
		d, err := t.m.dir(q)
		if err != nil {
			return err
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		node := &fnode{header: header{ID: randomID()}}
		if i == len(chain)-1 {
			node.data, node.Owner = data, owner
		}
		if err := writeNode(d, node); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		t.step()
	}
	t.mutated = true
	return nil
}

func versionConflict(op, p string, want, have int64) error {
	return fmt.Errorf("%s %s: expected version %d, node has version %d: %w", op, p, want, have, spi.ErrVersionConflict)
}

func (t *tx) set(p string, data []byte, version int64) (int64, error) {
	n, err := t.get(p)
	if err != nil {
		return 0, err
	}
	if n == nil {
		return 0, fmt.Errorf("set %s: %w", p, spi.ErrNotFound)
	}
	if version != spi.AnyVersion && version != n.Version {
		return 0, versionConflict("set", p, version, n.Version)
	}
	d, err := t.m.dir(p)
	if err != nil {
		return 0, err
	}
	if err := t.backup(filepath.Join(d, nodeFile)); err != nil {
		return 0, err
	}
	n.Version++
	n.data = data
	if err := writeNode(d, n); err != nil {
		return 0, fmt.Errorf("set %s: %w", p, err)
	}
	t.step()
	t.mutated = true
	return n.Version, nil
}

func (t *tx) delete(p string, version int64) error {
	n, err := t.get(p)
	if errors.Is(err, spi.ErrCorrupt) && version == spi.AnyVersion {
		// An unconditional delete removes a corrupt node too: it is the
		// way out of a damaged node file.
		return t.removeDir(p)
	}
	if err != nil || n == nil {
		return err
	}
	if version != spi.AnyVersion && version != n.Version {
		return versionConflict("delete", p, version, n.Version)
	}
	return t.removeDir(p)
}

func (t *tx) check(p string, version int64) error {
	n, err := t.get(p)
	if err != nil {
		return err
	}
	if n == nil {
		return fmt.Errorf("check %s: %w", p, spi.ErrNotFound)
	}
	if version != spi.AnyVersion && version != n.Version {
		return versionConflict("check", p, version, n.Version)
	}
	return nil
}

// removeDir removes node p and its subtree (moving it into the journal).
func (t *tx) removeDir(p string) error {
	d, err := t.m.dir(p)
	if err != nil {
		return err
	}
	if err := t.backup(d); err != nil {
		return err
	}
	t.step()
	t.mutated = true
	return nil
}

// trash removes a directory that is not a node (crash debris), if any.
func (t *tx) trash(dir string) error {
	to := filepath.Join(t.m.root, trashDir, randomHex(8))
	if err := os.Rename(dir, to); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(to)
}

func (t *tx) rel(abs string) string {
	r, err := filepath.Rel(t.m.root, abs)
	if err != nil {
		panic(err) // abs is always below the root
	}
	return r
}

func (t *tx) step() {
	if t.m.afterStep != nil {
		t.m.afterStep()
	}
}

// abort rolls back everything the transaction did.
func (t *tx) abort() error {
	if t.j == nil {
		return nil
	}
	j := t.j
	t.j = nil
	t.mutated = false
	return j.rollback(t.m.root)
}

// ownSession returns this session's id for a new ephemeral node, starting
// a new session first when the current one has been declared dead.
func (t *tx) ownSession() (string, error) {
	if t.isAlive(t.sid) {
		return t.sid, nil
	}
	sid, err := t.m.renewLocked("session lease expired before an ephemeral node was created")
	if err != nil {
		return "", err
	}
	t.sid = sid
	t.alive[sid] = true
	return sid, nil
}

// journal returns the transaction's undo journal, starting it if needed.
func (t *tx) journal() *journal {
	if t.j == nil {
		t.j = &journal{dir: filepath.Join(t.m.root, txnDir)}
	}
	return t.j
}

// backup moves path (a node file or a node directory) into the journal,
// recording how to put it back.
func (t *tx) backup(path string) error {
	j := t.journal()
	name := fmt.Sprintf("b-%d", len(j.undos))
	if err := j.record(undo{Op: "restore", Target: t.rel(path), Backup: name}); err != nil {
		return err
	}
	if err := os.Rename(path, filepath.Join(j.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// undo is one journal record: how to reverse one mutation.
type undo struct {
	// Op is "restore" (move Backup back to Target, replacing what is
	// there), "remove" (remove Target, created by the transaction) or
	// "undone" (record Index was reversed).
	Op     string `json:"op"`
	Target string `json:"target,omitempty"`
	Backup string `json:"backup,omitempty"`
	Index  int    `json:"index,omitempty"`
}

// journal is the undo log of one transaction in <root>/txn. Records are
// written before the mutation they reverse. Committing renames the
// directory away (atomically); a txn directory found when taking the lock
// therefore belongs to a transaction that did not commit, and is rolled
// back.
type journal struct {
	dir   string
	f     *os.File
	undos []undo
}

func (j *journal) record(u undo) error {
	if j.f == nil {
		if err := os.Mkdir(j.dir, 0o755); err != nil {
			return fmt.Errorf("localfs state manager: start journal: %w", err)
		}
		f, err := os.OpenFile(filepath.Join(j.dir, journalLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("localfs state manager: start journal: %w", err)
		}
		j.f = f
	}
	b, _ := json.Marshal(u)
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("localfs state manager: write journal: %w", err)
	}
	j.undos = append(j.undos, u)
	return nil
}

func (j *journal) commit(m *StateManager) error {
	if j.f == nil {
		return nil
	}
	j.f.Close()
	to := filepath.Join(m.root, trashDir, "txn-"+randomHex(8))
	if err := os.Rename(j.dir, to); err != nil {
		return fmt.Errorf("localfs state manager: commit: %w", err)
	}
	if m.afterCommit != nil {
		m.afterCommit()
	}
	return os.RemoveAll(to)
}

func (j *journal) rollback(root string) error {
	if j.f == nil {
		return nil
	}
	defer j.f.Close()
	return rollbackDir(root, j.dir, j.undos, j.f)
}

// rollbackDir reverses undos (newest first), marking each reversed record
// in log so that a rollback interrupted by a crash is resumed, not
// repeated, and then removes the journal directory.
func rollbackDir(root, dir string, undos []undo, log *os.File) error {
	done := map[int]bool{}
	for _, u := range undos {
		if u.Op == "undone" {
			done[u.Index] = true
		}
	}
	for i := len(undos) - 1; i >= 0; i-- {
		u := undos[i]
		if u.Op == "undone" || done[i] {
			continue
		}
		// The journal is a file on disk: a record must not reach outside
		// the state directory, whatever it holds.
		target, err := safepath.JoinRel(root, u.Target)
		if err != nil {
			return fmt.Errorf("localfs state manager: journal %s is corrupt (record %d): %w; move it away to open the state directory", dir, i, err)
		}
		switch u.Op {
		case "remove":
			if err := removeAllVia(root, target); err != nil {
				return fmt.Errorf("localfs state manager: roll back: %w", err)
			}
		case "restore":
			backup, err := safepath.Join(dir, u.Backup)
			if err != nil {
				return fmt.Errorf("localfs state manager: journal %s is corrupt (record %d): %w; move it away to open the state directory", dir, i, err)
			}
			if _, err := os.Lstat(backup); err == nil {
				if err := removeAllVia(root, target); err != nil {
					return fmt.Errorf("localfs state manager: roll back: %w", err)
				}
				if err := os.Rename(backup, target); err != nil {
					return fmt.Errorf("localfs state manager: roll back: %w", err)
				}
			}
		default:
			return fmt.Errorf("localfs state manager: journal %s: unknown record %q", dir, u.Op)
		}
		b, _ := json.Marshal(undo{Op: "undone", Index: i})
		if _, err := log.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("localfs state manager: roll back: %w", err)
		}
	}
	return removeAllVia(root, dir)
}

// removeAllVia removes path by renaming it into the trash first, so that a
// crash never leaves it half removed.
func removeAllVia(root, path string) error {
	to := filepath.Join(root, trashDir, randomHex(8))
	if err := os.Rename(path, to); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(to)
}

// recoverLocked rolls back the transaction of a process that crashed
// while holding the lock. The caller holds the store lock.
func (m *StateManager) recoverLocked() error {
	dir := filepath.Join(m.root, txnDir)
	f, err := os.OpenFile(filepath.Join(dir, journalLog), os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// No journal, or a journal directory created just before a crash.
		return removeAllVia(m.root, dir)
	}
	if err != nil {
		return fmt.Errorf("localfs state manager: open journal: %w", err)
	}
	defer f.Close()
	var undos []undo
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var u undo
		if err := json.Unmarshal(sc.Bytes(), &u); err != nil {
			break // a record torn by the crash: its mutation never started
		}
		undos = append(undos, u)
	}
	m.log.Warn("rolling back a transaction interrupted by a crash", zap.Int("records", len(undos)))
	if err := rollbackDir(m.root, dir, undos, f); err != nil {
		return err
	}
	m.notifyLocal()
	return nil
}

// cleanTrash removes leftovers of interrupted removals.
func (m *StateManager) cleanTrash() {
	ents, _ := os.ReadDir(filepath.Join(m.root, trashDir))
	for _, e := range ents {
		_ = os.RemoveAll(filepath.Join(m.root, trashDir, e.Name()))
	}
}
