package tmanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/proto/egretpb"
)

// Savepoints (docs/savepoints.md): POST /savepoint starts a checkpoint at
// once (after the one in progress, if any), waits until it completes and
// pins it: the clean that follows each later checkpoint keeps it and its
// files until POST /savepoint/release or the end of its lease, so that
// `egret savepoint` can copy it out of the checkpoint storage. Pins are
// part of the checkpoint state (/checkpoints/<topology>): a restarted
// topology manager keeps them until their leases end.

// Bounds of a savepoint request.
const (
	defaultSavepointWait  = 2 * time.Minute
	defaultSavepointLease = 10 * time.Minute
	maxSavepointLease     = 24 * time.Hour
)

// spRequest is a savepoint asked for and not answered yet; the requests
// that arrive meanwhile share it.
type spRequest struct {
	id    int64 // the checkpoint started for it; 0 before
	lease time.Duration
	done  chan struct{}
	err   error // set before done is closed
	size  int64
}

// errNoCheckpoints refuses a savepoint of a topology without checkpoints.
var errNoCheckpoints = errors.New("the topology is not effectively-once: it takes no checkpoints, so it has no state to save (topology.delivery.mode=effectively-once)")

// requestSavepoint asks for a checkpoint pinned for lease and returns the
// request to wait on.
func (m *manager) requestSavepoint(lease time.Duration) (*spRequest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ck := &m.ckpt
	if !ck.on {
		return nil, errNoCheckpoints
	}
	if m.stopping {
		return nil, errors.New("the topology manager is stopping")
	}
	if ck.sp == nil {
		ck.sp = &spRequest{done: make(chan struct{})}
	}
	ck.sp.lease = max(ck.sp.lease, lease)
	return ck.sp, nil
}

// endSavepointLocked answers the pending request.
func (m *manager) endSavepointLocked(err error, size int64) {
	sp := m.ckpt.sp
	m.ckpt.sp = nil
	sp.err, sp.size = err, size
	close(sp.done)
	if err != nil {
		m.log.Warn("savepoint checkpoint failed", zap.Int64("checkpoint", sp.id), zap.Error(err))
	} else {
		m.log.Info("savepoint checkpoint complete; pinned", zap.Int64("checkpoint", sp.id), zap.Duration("lease", sp.lease))
	}
}

// savepointTickLocked starts the requested checkpoint when none is in
// progress and fails a request whose checkpoint ended without completing
// (completeLocked answers the ones that complete).
func (m *manager) savepointTickLocked(now time.Time) {
	ck := &m.ckpt
	sp := ck.sp
	if sp == nil {
		return
	}
	if sp.id != 0 && (ck.cur == nil || ck.cur.id != sp.id) {
		m.endSavepointLocked(fmt.Errorf("checkpoint %d failed or was aborted (the topology manager's log says why; `egret metrics` counts them)", sp.id), 0)
		return
	}
	if sp.id == 0 && ck.phase == phaseRunning && ck.cur == nil {
		if m.state != egretpb.TopologyState_TOPOLOGY_STATE_RUNNING {
			m.endSavepointLocked(errors.New("the topology is deactivated and takes no checkpoint; activate it first (`egret activate`)"), 0)
			return
		}
		sp.id = m.startCheckpointLocked(now)
	}
}

// pinSavepointLocked records the savepoint's checkpoint id as kept until its lease
// ends.
func (m *manager) pinSavepointLocked(id int64, now time.Time) {
	ck := &m.ckpt
	if ck.pins == nil {
		ck.pins = map[int64]time.Time{}
	}
	ck.pins[id] = now.Add(ck.sp.lease)
}

// keepFromLocked lowers keepFrom to the oldest pinned checkpoint whose
// lease runs, forgetting the others.
func (m *manager) keepFromLocked(keepFrom int64, now time.Time) int64 {
	for id, until := range m.ckpt.pins {
		if now.After(until) {
			delete(m.ckpt.pins, id)
			continue
		}
		keepFrom = min(keepFrom, id)
	}
	return keepFrom
}

func (m *manager) releaseSavepoint(id int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.ckpt.pins[id]
	if !ok {
		return false
	}
	delete(m.ckpt.pins, id)
	if err := m.saveCheckpointStateLocked(); err != nil {
		// The recorded pin ends with its lease.
		m.log.Warn("could not record the release of a savepoint's pin", zap.Int64("checkpoint", id), zap.Error(err))
	}
	return true
}

// pinsToProto records the pins, by checkpoint id.
func pinsToProto(pins map[int64]time.Time) []*egretpb.SavepointPin {
	out := make([]*egretpb.SavepointPin, 0, len(pins))
	for _, id := range slices.Sorted(maps.Keys(pins)) {
		out = append(out, &egretpb.SavepointPin{CheckpointId: id, UntilUnixNanos: pins[id].UnixNano()})
	}
	return out
}

// pinsFromProto reads the recorded pins whose leases run at now.
func pinsFromProto(pins []*egretpb.SavepointPin, now time.Time) map[int64]time.Time {
	out := map[int64]time.Time{}
	for _, p := range pins {
		if until := time.Unix(0, p.GetUntilUnixNanos()); until.After(now) {
			out[p.GetCheckpointId()] = until
		}
	}
	return out
}

// SavepointResponse answers POST /savepoint.
type SavepointResponse struct {
	Topology   string `json:"topology"`
	TopologyID string `json:"topology_id"`
	Checkpoint int64  `json:"checkpoint"`
	SizeBytes  int64  `json:"size_bytes"`
	// PinnedUntil is when the checkpoint's pin ends (RFC 3339).
	PinnedUntil string `json:"pinned_until"`
}

func durationParam(r *http.Request, name string, def, maxD time.Duration) (time.Duration, error) {
	v := r.Form.Get(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > maxD {
		return 0, fmt.Errorf("%s %q is not a duration in (0, %s]", name, v, maxD)
	}
	return d, nil
}

// savepointForm checks a savepoint request's topology id and parses its
// form values (bounded), answering the error itself; false: done.
func (a *api) savepointForm(w http.ResponseWriter, r *http.Request) bool {
	if !a.checkTopologyID(w, r) {
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "cannot parse form values: "+err.Error())
		return false
	}
	return true
}

// savepoint serves POST /savepoint: form values wait (how long to wait
// for the checkpoint, default 2m) and lease (how long it stays pinned,
// default 10m).
func (a *api) savepoint(w http.ResponseWriter, r *http.Request) {
	if !a.savepointForm(w, r) {
		return
	}
	wait, err := durationParam(r, "wait", defaultSavepointWait, time.Hour)
	if err == nil {
		var lease time.Duration
		if lease, err = durationParam(r, "lease", defaultSavepointLease, maxSavepointLease); err == nil {
			a.awaitSavepoint(w, r, wait, lease)
			return
		}
	}
	writeError(w, http.StatusBadRequest, err.Error())
}

func (a *api) awaitSavepoint(w http.ResponseWriter, r *http.Request, wait, lease time.Duration) {
	sp, err := a.mgr.requestSavepoint(lease)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	select {
	case <-sp.done:
	case <-ctx.Done():
		writeError(w, http.StatusGatewayTimeout, fmt.Sprintf("no checkpoint completed within %s (the topology may be restoring or its checkpoints failing: `egret metrics` shows them)", wait))
		return
	}
	if sp.err != nil {
		writeError(w, http.StatusInternalServerError, sp.err.Error())
		return
	}
	a.mgr.mu.Lock()
	until := a.mgr.ckpt.pins[sp.id]
	a.mgr.mu.Unlock()
	a.log.Info("savepoint request", zap.Int64("checkpoint", sp.id), zap.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusOK, SavepointResponse{Topology: a.mgr.name, TopologyID: a.mgr.id, Checkpoint: sp.id, SizeBytes: sp.size,
		PinnedUntil: until.UTC().Format(time.RFC3339)})
}

// releaseSavepoint serves POST /savepoint/release?checkpoint=N.
func (a *api) releaseSavepoint(w http.ResponseWriter, r *http.Request) {
	if !a.savepointForm(w, r) {
		return
	}
	id, err := strconv.ParseInt(r.Form.Get("checkpoint"), 10, 64)
	if err != nil || id < 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("checkpoint %q is not a checkpoint id (a positive integer)", r.Form.Get("checkpoint")))
		return
	}
	released := a.mgr.releaseSavepoint(id)
	writeJSON(w, http.StatusOK, map[string]any{"checkpoint": id, "released": released})
}
