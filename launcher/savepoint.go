package launcher

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Savepoints (docs/savepoints.md) are written and read by the CLI
// (daemons/savepoint); the launcher has the topology's side: it asks the
// topology manager for a pinned checkpoint to copy (PinCheckpoint), and
// Submit seeds a new topology's checkpoint storage from a savepoint
// (SubmitOptions.FromSavepoint).

// PinnedCheckpoint is a complete checkpoint of a running topology that
// its topology manager keeps (out of the clean of later checkpoints) until
// Release or the lease ends.
type PinnedCheckpoint struct {
	Topology   *topology.Topology
	Plan       *plan.PackingPlan
	Checkpoint int64
	SizeBytes  int64
	// Config is the cluster config of the topology (its checkpoint
	// storage).
	Config spi.Config

	l   *Launcher
	loc *egretpb.TManagerLocation
}

// SavepointWait bounds how long PinCheckpoint waits for the checkpoint.
const SavepointWait = 2 * time.Minute

// PinCheckpoint asks the topology manager of an effectively-once
// topology to take a checkpoint now and to keep it for lease. It holds the
// topology's lock meanwhile, so that no update changes the plan under it.
func (l *Launcher) PinCheckpoint(ctx context.Context, name string, lease time.Duration) (*PinnedCheckpoint, error) {
	if err := checkTopology(name); err != nil {
		return nil, err
	}
	cfg, store, release, err := l.lockedSession(ctx, name)
	if err != nil {
		return nil, err
	}
	defer release()
	loc, err := l.tmanager(ctx, store, name)
	if err != nil {
		return nil, err
	}
	t, err := store.Topology(ctx, name)
	if err != nil {
		return nil, killHint(name, err)
	}
	if t.DeliveryMode() != topology.EffectivelyOnce {
		return nil, badInput(fmt.Errorf("topology %q is %s: only an effectively-once topology checkpoints its state, so only it has a savepoint (%s=%s)", name, t.DeliveryMode(), topology.KeyDeliveryMode, topology.EffectivelyOnce))
	}
	pp, _, err := store.PackingPlan(ctx, name)
	if err != nil {
		return nil, killHint(name, err)
	}
	l.progress("asking the topology manager of %q for a checkpoint", name)
	form := url.Values{"wait": {SavepointWait.String()}, "lease": {lease.String()}}
	var resp struct {
		Checkpoint int64 `json:"checkpoint"`
		SizeBytes  int64 `json:"size_bytes"`
		TopologyID string
	}
	if err := postTManagerJSON(ctx, loc, name, "/savepoint?topology_id="+url.QueryEscape(t.ID), form, SavepointWait+30*time.Second, &resp); err != nil {
		return nil, err
	}
	if resp.Checkpoint < 1 {
		return nil, fmt.Errorf("topology manager of %q answered checkpoint %d", name, resp.Checkpoint)
	}
	l.progress("checkpoint %d of %q is complete (%d bytes)", resp.Checkpoint, name, resp.SizeBytes)
	return &PinnedCheckpoint{Topology: t, Plan: pp, Checkpoint: resp.Checkpoint, SizeBytes: resp.SizeBytes, Config: cfg, l: l, loc: loc}, nil
}

// Release lets the topology manager clean the checkpoint again; a failure
// is logged (the pin ends with its lease).
func (p *PinnedCheckpoint) Release(ctx context.Context) {
	form := url.Values{"checkpoint": {fmt.Sprint(p.Checkpoint)}}
	if err := postTManagerJSON(context.WithoutCancel(ctx), p.loc, p.Topology.Name, "/savepoint/release", form, 30*time.Second, nil); err != nil {
		p.l.Log.Warn("could not release the savepoint's checkpoint; it is kept until its lease ends", zap.Int64("checkpoint", p.Checkpoint), zap.Error(err))
	}
}

// postTManagerJSON posts form to path of the topology manager at loc and
// decodes its JSON answer into out (nil: not read).
func postTManagerJSON(ctx context.Context, loc *egretpb.TManagerLocation, name, path string, form url.Values, timeout time.Duration, out any) error {
	u := fmt.Sprintf("http://%s:%d%s", loc.GetHost(), loc.GetHttpPort(), path)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return fmt.Errorf("topology manager of %q at %s: %w", name, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("topology manager of %q at %s: %w", name, u, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(body))
		}
		if resp.StatusCode == http.StatusBadRequest {
			return badInput(fmt.Errorf("topology %q: %s", name, e.Error))
		}
		return fmt.Errorf("topology manager of %q: %s: %s", name, resp.Status, e.Error)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("topology manager of %q: %s: %w", name, path, err)
		}
	}
	return nil
}

// SavepointRestorer starts a topology from a savepoint (the CLI
// implements it with daemons/savepoint).
type SavepointRestorer interface {
	// Check refuses, with an error that says how to fix it, a savepoint
	// the topology packed as p cannot start from. It changes nothing.
	Check(t *topology.Topology, p *plan.PackingPlan) error
	// Seed copies the savepoint into the checkpoint storage of cfg as a
	// complete checkpoint of t and returns its id, the tasks of each
	// component at it (those of a component whose tasks differ from p's
	// are found rescaled at the first restore), and undo, which removes
	// it.
	Seed(ctx context.Context, cfg spi.Config, t *topology.Topology, p *plan.PackingPlan) (checkpoint int64, tasks map[string][]int32, undo func(), err error)
}

// checkFromSavepoint runs the checks of a submission from a savepoint.
func checkFromSavepoint(o SubmitOptions, t *topology.Topology, pp *plan.PackingPlan) error {
	if o.FromSavepoint == nil {
		return nil
	}
	if t.DeliveryMode() != topology.EffectivelyOnce {
		return badInput(fmt.Errorf("topology %q is %s: only an effectively-once topology restores state, so only it starts from a savepoint (%s=%s)", t.Name, t.DeliveryMode(), topology.KeyDeliveryMode, topology.EffectivelyOnce))
	}
	if err := o.FromSavepoint.Check(t, pp); err != nil {
		return badInput(err)
	}
	return nil
}

// componentTasks is the checkpoint state's record of tasks.
func componentTasks(tasks map[string][]int32) []*egretpb.ComponentTasks {
	out := make([]*egretpb.ComponentTasks, 0, len(tasks))
	for _, comp := range slices.Sorted(maps.Keys(tasks)) {
		out = append(out, &egretpb.ComponentTasks{Component: comp, TaskIds: tasks[comp]})
	}
	return out
}
