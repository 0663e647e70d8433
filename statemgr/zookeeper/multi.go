package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/statemgr/internal/nodepath"
	"github.com/egret-stream/egret/statemgr/internal/smops"
)

// maxPlans bounds how often a transaction is planned again because the
// tree changed between planning and commit.
const maxPlans = 20

// iop is an op of a transaction; Create may be ephemeral.
type iop struct {
	spi.Op
	ephemeral bool
}

// plan turns ops into ZooKeeper multi requests. It tracks which nodes
// exist after each op so that later ops see the effect of earlier ones.
type plan struct {
	s        *StateManager
	ctx      context.Context
	reqs     []any
	owner    []int  // index of the op that produced each request
	injected []bool // request added by the plan (parent create, subtree delete)
	state    map[string]bool
	wiped    map[string]bool // subtrees whose ZooKeeper contents were deleted
}

// apply runs ops as one ZooKeeper multi, planning again (up to maxPlans
// times) when a concurrent change made the plan stale. single selects the
// error format of a plain Create or Delete.
func (s *StateManager) apply(ctx context.Context, ops []iop) (int, error) {
	label := func(i int) string {
		if len(ops) == 1 {
			return smops.KindName(ops[0].Kind) + " " + ops[0].Path
		}
		return smops.Label(i, ops[i].Op)
	}
	// A transaction of deletes and checks may be repeated after a lost
	// connection: if it was applied, the repeat finds nothing to delete.
	repeatable := true
	for _, op := range ops {
		if op.Kind == spi.OpCreate || op.Kind == spi.OpSet {
			repeatable = false
		}
	}
	for attempt := 0; attempt < maxPlans; attempt++ {
		pl := &plan{s: s, ctx: ctx, state: map[string]bool{}, wiped: map[string]bool{}}
		for i, op := range ops {
			if err := pl.add(i, op); err != nil {
				var opErr *opError
				if errors.As(err, &opErr) {
					return i, fmt.Errorf("%s: %w", label(i), opErr.err)
				}
				return i, s.zkErr(label(i), err)
			}
		}
		if len(pl.reqs) == 0 {
			return -1, nil
		}
		if s.beforeCommit != nil {
			s.beforeCommit(attempt)
		}
		resp, err := do(ctx, func() ([]zk.MultiResponse, error) { return s.conn.Multi(pl.reqs...) })
		if err == nil {
			return -1, nil
		}
		if transient(err) && repeatable && !s.isClosed() {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return -1, s.zkErr(label(0), ctx.Err())
			}
			continue
		}
		failed := -1
		for j, r := range resp {
			if r.Error != nil {
				failed = j
				break
			}
		}
		if failed < 0 || failed >= len(pl.owner) {
			return -1, s.zkErr(label(0), err)
		}
		i, cause := pl.owner[failed], resp[failed].Error
		op := ops[i]
		if stale(op.Kind, pl.injected[failed], cause) {
			s.log.Debug("zookeeper multi planned on a stale tree; planning again", zap.Int("op", i), zap.Error(cause))
			continue
		}
		return i, fmt.Errorf("%s: %w", label(i), mapOpErr(op, cause))
	}
	return -1, fmt.Errorf("%s: the ZooKeeper tree kept changing during %d attempts; try again", label(0), maxPlans)
}

// stale reports whether a failure means the plan's view of the tree was out
// of date rather than that the op itself fails.
func stale(kind spi.OpKind, injected bool, cause error) bool {
	if errors.Is(cause, zk.ErrNoChildrenForEphemerals) {
		return false
	}
	if injected {
		return errors.Is(cause, zk.ErrNodeExists) || errors.Is(cause, zk.ErrNoNode) || errors.Is(cause, zk.ErrNotEmpty)
	}
	switch kind {
	case spi.OpCreate:
		return errors.Is(cause, zk.ErrNoNode)
	case spi.OpDelete:
		return errors.Is(cause, zk.ErrNoNode) || errors.Is(cause, zk.ErrNotEmpty)
	}
	return false
}

func mapOpErr(op iop, cause error) error {
	switch {
	case errors.Is(cause, zk.ErrNodeExists):
		return spi.ErrExists
	case errors.Is(cause, zk.ErrNoNode):
		return spi.ErrNotFound
	case errors.Is(cause, zk.ErrBadVersion):
		return fmt.Errorf("expected version %d: %w", op.Version, spi.ErrVersionConflict)
	case errors.Is(cause, zk.ErrNoChildrenForEphemerals):
		return fmt.Errorf("a parent is ephemeral: %w", smops.ErrEphemeralParent)
	case errors.Is(cause, zk.ErrNotEmpty):
		return spi.ErrNotEmpty
	}
	return fmt.Errorf("zookeeper: %w", cause)
}

// opError is a failure of an op found while planning.
type opError struct{ err error }

func (e *opError) Error() string { return e.err.Error() }

func (pl *plan) emit(i int, injected bool, req any) {
	pl.reqs = append(pl.reqs, req)
	pl.owner = append(pl.owner, i)
	pl.injected = append(pl.injected, injected)
}

func (pl *plan) isWiped(p string) bool {
	if pl.wiped[p] {
		return true
	}
	for _, a := range nodepath.Ancestors(p) {
		if pl.wiped[a] {
			return true
		}
	}
	return false
}

func (pl *plan) exists(p string) (bool, error) {
	if v, ok := pl.state[p]; ok {
		return v, nil
	}
	if pl.isWiped(p) {
		return false, nil
	}
	ok, err := retry(pl.ctx, pl.s, func() (bool, error) {
		ok, _, err := pl.s.conn.Exists(pl.s.full(p))
		return ok, err
	})
	if err != nil {
		return false, err
	}
	pl.state[p] = ok
	return ok, nil
}

// children lists p's children as they are after the ops planned so far.
func (pl *plan) children(p string) ([]string, error) {
	set := map[string]bool{}
	if !pl.isWiped(p) {
		kids, err := retry(pl.ctx, pl.s, func() ([]string, error) {
			k, _, err := pl.s.conn.Children(pl.s.full(p))
			return k, err
		})
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return nil, err
		}
		for _, k := range kids {
			set[k] = true
		}
	}
	for q, v := range pl.state {
		if q != nodepath.Root && nodepath.Parent(q) == p {
			set[nodepath.Base(q)] = v
		}
	}
	var out []string
	for k, v := range set {
		if v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (pl *plan) add(i int, op iop) error {
	full := pl.s.full(op.Path)
	switch op.Kind {
	case spi.OpCreate:
		for _, a := range nodepath.Ancestors(op.Path) {
			ok, err := pl.exists(a)
			if err != nil {
				return err
			}
			if !ok {
				pl.emit(i, true, &zk.CreateRequest{Path: pl.s.full(a), Acl: pl.s.acl})
				pl.state[a] = true
			}
		}
		flags := int32(0)
		if op.ephemeral {
			flags = zk.FlagEphemeral
		}
		pl.emit(i, false, &zk.CreateRequest{Path: full, Data: op.Data, Acl: pl.s.acl, Flags: flags})
		pl.state[op.Path] = true
	case spi.OpSet, spi.OpCheck:
		v, ok := version32(op.Version)
		if !ok {
			return &opError{fmt.Errorf("version %d: %w", op.Version, spi.ErrVersionConflict)}
		}
		if op.Kind == spi.OpSet {
			pl.emit(i, false, &zk.SetDataRequest{Path: full, Data: op.Data, Version: v})
		} else {
			pl.emit(i, false, &zk.CheckVersionRequest{Path: full, Version: v})
		}
	case spi.OpDelete:
		ok, err := pl.exists(op.Path)
		if err != nil || !ok {
			return err
		}
		v, vok := version32(op.Version)
		if !vok {
			return &opError{fmt.Errorf("version %d: %w", op.Version, spi.ErrVersionConflict)}
		}
		if err := pl.deleteBelow(i, op.Path); err != nil {
			return err
		}
		pl.emit(i, false, &zk.DeleteRequest{Path: full, Version: v})
		for q := range pl.state {
			if nodepath.Within(q, op.Path) {
				delete(pl.state, q)
			}
		}
		pl.wiped[op.Path] = true
		pl.state[op.Path] = false
	}
	return nil
}

// deleteBelow emits deletes of p's descendants, deepest first.
func (pl *plan) deleteBelow(i int, p string) error {
	kids, err := pl.children(p)
	if err != nil {
		return err
	}
	for _, k := range kids {
		c := nodepath.Join(p, k)
		if err := pl.deleteBelow(i, c); err != nil {
			return err
		}
		pl.emit(i, true, &zk.DeleteRequest{Path: pl.s.full(c), Version: -1})
	}
	return nil
}
