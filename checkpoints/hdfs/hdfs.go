package hdfs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	hdfsclient "github.com/colinmarc/hdfs/v2"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/checkpoints/internal/blob"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/hdfsx"
)

// Config keys of the storage (conf/REFERENCE.md describes them).
const (
	KeyNameNode    = "egret.checkpoint.hdfs.namenode"
	KeyDirectory   = "egret.checkpoint.hdfs.directory"
	KeyUser        = "egret.checkpoint.hdfs.user"
	KeyReplication = "egret.checkpoint.hdfs.replication"
	KeyTimeout     = "egret.checkpoint.hdfs.timeout"
)

// Name is the storage's name in egret.checkpoint.storage.
const Name = "hdfs"

func init() { spi.RegisterCheckpointStorage(Name, New, configKeys...) }

// Settings is the storage's config, parsed.
type Settings struct {
	hdfsx.Client
	Directory   string
	Replication int
}

// ParseSettings reads the storage's keys from cfg, reporting every bad
// value at once.
func ParseSettings(cfg spi.Config) (Settings, error) {
	client, errs := hdfsx.ParseClient(cfg, hdfsx.ClientKeys{NameNode: KeyNameNode, User: KeyUser, Timeout: KeyTimeout})
	s := Settings{Client: client}
	s.Directory = cfg.String(KeyDirectory, "")
	switch {
	case s.Directory == "":
		errs = append(errs, fmt.Errorf("config key %s is required (an absolute HDFS directory, e.g. /egret/checkpoints)", KeyDirectory))
	case strings.Contains(s.Directory, "${"):
		errs = append(errs, fmt.Errorf("config key %s = %q has an unsubstituted variable", KeyDirectory, s.Directory))
	case !path.IsAbs(s.Directory) || strings.Contains(s.Directory, "://"):
		errs = append(errs, fmt.Errorf("config key %s = %q: give an absolute HDFS path such as /egret/checkpoints (the NameNode is %s)", KeyDirectory, s.Directory, KeyNameNode))
	default:
		s.Directory = path.Clean(s.Directory)
	}
	var err error
	s.Replication, err = cfg.Int(KeyReplication, 0)
	switch {
	case err != nil:
		errs = append(errs, err)
	case s.Replication < 0 || s.Replication > 512:
		errs = append(errs, fmt.Errorf("config key %s: %d is out of range (0 for the NameNode's default, or 1 to 512)", KeyReplication, s.Replication))
	}
	if len(errs) > 0 {
		return Settings{}, fmt.Errorf("hdfs checkpoint storage: bad config: %w", errors.Join(errs...))
	}
	return s, nil
}

// Storage keeps checkpoints in an HDFS directory. It holds one client,
// dialled on first use and again after a failure that was not the file
// system's answer (a lost connection).
type Storage struct {
	s    Settings
	user string
	log  *zap.Logger

	mu     sync.Mutex
	client *hdfsclient.Client
	closed bool
}

var _ spi.CheckpointStorage = (*Storage)(nil)

// New builds the storage from cfg. It does not contact HDFS.
func New(cfg spi.Config, log *zap.Logger) (spi.CheckpointStorage, error) {
	s, err := ParseSettings(cfg)
	if err != nil {
		return nil, err
	}
	u, err := hdfsx.User(s.User)
	if err != nil {
		return nil, fmt.Errorf("hdfs checkpoint storage: %w", err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Storage{s: s, user: u, log: log.With(zap.String("checkpoint_storage", Name))}, nil
}

// Settings returns the parsed config.
func (st *Storage) Settings() Settings { return st.s }

// conn returns the client, dialling it when needed.
func (st *Storage) conn(ctx context.Context) (*hdfsclient.Client, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, fmt.Errorf("hdfs checkpoint storage: %w", spi.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if st.client == nil {
		c, err := st.s.Dial(ctx, st.user)
		if err != nil {
			return nil, err
		}
		st.client = c
	}
	return st.client, nil
}

// done inspects the error of a call made with c: an error that is not an
// answer of the file system drops the client, so the next call dials again.
func (st *Storage) done(c *hdfsclient.Client, err error) error {
	var pe *os.PathError
	if err == nil || errors.As(err, &pe) && pe.Err != nil && isFSAnswer(pe.Err) || errors.Is(err, spi.ErrCorrupt) {
		return err
	}
	st.mu.Lock()
	if st.client == c {
		st.client = nil
		_ = c.Close()
	}
	st.mu.Unlock()
	return err
}

func isFSAnswer(err error) bool {
	return hdfsx.IsNotExist(err) || errors.Is(err, os.ErrPermission) || errors.Is(err, os.ErrExist) || hdfsx.IsNotEmpty(err)
}

func (st *Storage) explain(err error, what string) error {
	return hdfsx.Explain(err, st.user, what)
}

func (st *Storage) checkpointDir(topology string, id int64) string {
	return path.Join(st.s.Directory, topology, blob.CheckpointDir(id))
}

// Path returns the HDFS file that holds key's state.
func (st *Storage) Path(key spi.CheckpointKey) (string, error) {
	if err := blob.CheckKey(key); err != nil {
		return "", err
	}
	return path.Join(st.checkpointDir(key.Topology, key.Checkpoint), blob.TaskFile(key.Task)), nil
}

func (st *Storage) where() string {
	return "hdfs://" + st.s.NameNodes[0] + st.s.Directory
}

// Store writes state to a temp file and renames it over the state file.
func (st *Storage) Store(ctx context.Context, key spi.CheckpointKey, state []byte) error {
	if err := st.store(ctx, key, state); err != nil {
		return fmt.Errorf("hdfs checkpoint store of %s checkpoint %d task %d in %s: %w", key.Topology, key.Checkpoint, key.Task, st.where(), err)
	}
	return nil
}

func (st *Storage) store(ctx context.Context, key spi.CheckpointKey, state []byte) error {
	dst, err := st.Path(key)
	if err != nil {
		return err
	}
	c, err := st.conn(ctx)
	if err != nil {
		return err
	}
	dir := path.Dir(dst)
	if err := c.MkdirAll(dir, 0o755); err != nil {
		return st.done(c, st.explain(err, "create directory "+dir))
	}
	replication := st.s.Replication
	defaults, err := c.ServerDefaults()
	if err != nil {
		return st.done(c, fmt.Errorf("read the NameNode's defaults: %w", err))
	}
	if replication == 0 {
		replication = defaults.Replication
	}
	tmp := path.Join(dir, blob.TempPrefix+blob.TaskFile(key.Task)+"-"+randomHex())
	w, err := c.CreateFile(tmp, replication, defaults.BlockSize, 0o644)
	if err != nil {
		return st.done(c, st.explain(err, "write in "+dir))
	}
	committed := false
	defer func() {
		if !committed {
			_ = w.Close()
			if rerr := c.Remove(tmp); rerr != nil && !hdfsx.IsNotExist(rerr) {
				st.log.Warn("could not remove the temporary file", zap.String("path", tmp), zap.Error(rerr))
			}
		}
	}()
	if _, err := w.Write(blob.Header(state)); err != nil {
		return st.done(c, fmt.Errorf("write %s: %w", tmp, err))
	}
	for rest := state; len(rest) > 0; {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(len(rest), 1<<20)
		if _, err := w.Write(rest[:n]); err != nil {
			return st.done(c, fmt.Errorf("write %s: %w", tmp, err))
		}
		rest = rest[n:]
	}
	if err := hdfsx.CloseReplicated(ctx, w, st.s.Timeout); err != nil {
		return st.done(c, fmt.Errorf("close %s: %w", tmp, err))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.Rename(tmp, dst); err != nil {
		return st.done(c, st.explain(err, "rename in "+dir))
	}
	committed = true
	return nil
}

// Load reads and checks the state file of key.
func (st *Storage) Load(ctx context.Context, key spi.CheckpointKey) ([]byte, error) {
	state, err := st.load(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("hdfs checkpoint load of %s checkpoint %d task %d from %s: %w", key.Topology, key.Checkpoint, key.Task, st.where(), err)
	}
	return state, nil
}

func (st *Storage) load(ctx context.Context, key spi.CheckpointKey) ([]byte, error) {
	p, err := st.Path(key)
	if err != nil {
		return nil, err
	}
	c, err := st.conn(ctx)
	if err != nil {
		return nil, err
	}
	b, err := c.ReadFile(p)
	if err != nil {
		if hdfsx.IsNotExist(err) {
			return nil, fmt.Errorf("no state stored: %w", spi.ErrNotFound)
		}
		return nil, st.done(c, st.explain(err, "read "+p))
	}
	state, err := blob.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return state, nil
}

// List returns the ids of the topology's checkpoints that hold a task's
// state, ascending.
func (st *Storage) List(ctx context.Context, topology string) ([]int64, error) {
	ids, err := st.list(ctx, topology)
	if err != nil {
		return nil, fmt.Errorf("hdfs checkpoint list of %s in %s: %w", topology, st.where(), err)
	}
	return ids, nil
}

func (st *Storage) list(ctx context.Context, topology string) ([]int64, error) {
	if err := blob.CheckTopology(topology); err != nil {
		return nil, err
	}
	c, err := st.conn(ctx)
	if err != nil {
		return nil, err
	}
	dir := path.Join(st.s.Directory, topology)
	entries, err := c.ReadDir(dir)
	if hdfsx.IsNotExist(err) {
		return []int64{}, nil
	}
	if err != nil {
		return nil, st.done(c, st.explain(err, "list "+dir))
	}
	ids := []int64{}
	for _, e := range entries {
		id, ok := blob.ParseCheckpointDir(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tasks, err := c.ReadDir(path.Join(dir, e.Name()))
		if hdfsx.IsNotExist(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, st.done(c, st.explain(err, "list "+dir))
		}
		if slices.ContainsFunc(tasks, func(t os.FileInfo) bool { return blob.IsTaskFile(t.Name()) }) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Delete renames the checkpoint's directory out of sight, then removes it.
func (st *Storage) Delete(ctx context.Context, topology string, checkpoint int64) error {
	if err := st.delete(ctx, topology, checkpoint); err != nil {
		return fmt.Errorf("hdfs checkpoint delete of %s checkpoint %d in %s: %w", topology, checkpoint, st.where(), err)
	}
	return nil
}

func (st *Storage) delete(ctx context.Context, topology string, checkpoint int64) error {
	if err := blob.CheckTopology(topology); err != nil {
		return err
	}
	if err := blob.CheckCheckpoint(checkpoint); err != nil {
		return err
	}
	c, err := st.conn(ctx)
	if err != nil {
		return err
	}
	dir := st.checkpointDir(topology, checkpoint)
	gone := path.Join(st.s.Directory, topology, deletedPrefix(checkpoint)+randomHex())
	switch err := c.Rename(dir, gone); {
	case hdfsx.IsNotExist(err):
		st.removeLeftovers(c, path.Dir(dir), checkpoint)
		return nil
	case err != nil:
		return st.done(c, st.explain(err, "rename in "+path.Dir(dir)))
	}
	if err := c.RemoveAll(gone); err != nil {
		return st.done(c, st.explain(err, "delete "+gone))
	}
	st.removeLeftovers(c, path.Dir(dir), checkpoint)
	st.log.Debug("deleted checkpoint", zap.String("topology", topology), zap.Int64("checkpoint", checkpoint))
	return nil
}

// removeLeftovers removes what deletes of checkpoint interrupted by a
// crash left in the topology's directory (best effort).
func (st *Storage) removeLeftovers(c *hdfsclient.Client, topoDir string, checkpoint int64) {
	entries, err := c.ReadDir(topoDir)
	if err != nil {
		return
	}
	prefix := deletedPrefix(checkpoint)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if err := c.RemoveAll(path.Join(topoDir, e.Name())); err != nil {
			st.log.Warn("could not remove what an interrupted delete left", zap.String("path", path.Join(topoDir, e.Name())), zap.Error(err))
		}
	}
}

func deletedPrefix(checkpoint int64) string {
	return blob.TempPrefix + "deleted-" + blob.CheckpointDir(checkpoint) + "-"
}

// Close closes the client; calls afterwards fail with spi.ErrClosed.
func (st *Storage) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	if st.client != nil {
		err := st.client.Close()
		st.client = nil
		if err != nil {
			return fmt.Errorf("hdfs checkpoint storage: close: %w", err)
		}
	}
	return nil
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
