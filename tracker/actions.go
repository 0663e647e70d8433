package tracker

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/shellapi"
	"github.com/egret-stream/egret/internal/loglevel"
	"github.com/egret-stream/egret/launcher"
)

// Actions of the console: an operator changes a topology from the UI
// with the CLI's own operations and safety (the launcher's Deactivate
// drains, Kill drains and refuses a missing topology, Update rescales all
// or nothing). They exist only when the tracker is started with an
// operator token (Options.OperatorToken); a request must carry it as
// "Authorization: Bearer <token>". Without a token the tracker stays
// read-only: every POST is a 403.
//
// An action runs in the background (a drained kill takes up to its drain
// timeout): POST answers 202 with the action's record, and GET /actions
// lists the recent ones with their progress and outcome.

// Action kinds (the last element of POST /topologies/actions/<kind>).
const (
	actActivate   = "activate"
	actDeactivate = "deactivate"
	actKill       = "kill"
	actRescale    = "rescale"
	actLogLevel   = "loglevel"
	actSavepoint  = "savepoint"
)

// Bounds of the actions.
const (
	maxActions     = 100
	maxActionBody  = 4096
	maxProgress    = 50
	actionTimeout  = 15 * time.Minute
	maxParallelism = 1 << 12
)

// actionJSON is the record of one action.
type actionJSON struct {
	ID          int               `json:"id"`
	Cluster     string            `json:"cluster"`
	Topology    string            `json:"topology"`
	Action      string            `json:"action"`
	Params      map[string]string `json:"params"`
	State       string            `json:"state"` // running, succeeded, failed
	Message     string            `json:"message"`
	Progress    []string          `json:"progress"`
	StartedUnix float64           `json:"started_unix"`
	EndedUnix   *float64          `json:"ended_unix"`
	Remote      string            `json:"remote"`
}

// actions holds the recent actions.
type actions struct {
	mu     sync.Mutex
	next   int
	list   []*actionJSON
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// actionRequest is the body of an action (fields by kind).
type actionRequest struct {
	// Confirm must repeat the topology's name for a kill.
	Confirm string `json:"confirm"`
	// Now skips the drain of deactivate and kill.
	Now bool `json:"now"`
	// Component and Parallelism of a rescale; Component (optional),
	// Level and Duration of a log level change.
	Component   string `json:"component"`
	Parallelism int    `json:"parallelism"`
	Level       string `json:"level"`
	Duration    string `json:"duration"`
}

// progressWriter appends a launcher's progress lines to an action.
type progressWriter struct {
	a  *actions
	id *actionJSON
}

func (w progressWriter) Write(p []byte) (int, error) {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	for _, l := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		if l = strings.TrimSpace(l); l != "" && len(w.id.Progress) < maxProgress {
			w.id.Progress = append(w.id.Progress, l)
		}
	}
	return len(p), nil
}

// authorize checks the operator token of a request; it answers the
// request and returns false when it may not act.
func (t *Tracker) authorize(w http.ResponseWriter, r *http.Request) bool {
	if t.opts.OperatorToken == "" {
		writeError(w, http.StatusForbidden, "the tracker is read-only: start it with --operator-token-file to allow actions")
		return false
	}
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(t.opts.OperatorToken)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="egret tracker"`)
		writeError(w, http.StatusUnauthorized, "an action needs the operator token: Authorization: Bearer <token>")
		return false
	}
	return true
}

// actionHandler serves POST /topologies/actions/<kind>.
func (t *Tracker) actionHandler(kind string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s takes POST, not %s", r.URL.Path, r.Method))
			return
		}
		if !t.authorize(w, r) {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
		defer cancel()
		a, err := t.startAction(ctx, kind, r)
		if err != nil {
			writeError(w, statusOf(err), oneLine(err.Error()))
			return
		}
		writeJSON(w, http.StatusAccepted, a)
	})
}

// startAction checks the request completely, records the action and
// starts it.
func (t *Tracker) startAction(ctx context.Context, kind string, r *http.Request) (actionJSON, error) {
	q, err := t.parseQuery(r)
	if err != nil {
		return actionJSON{}, err
	}
	var req actionRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, maxActionBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		return actionJSON{}, badRequest("the body must be a JSON object of the action's fields: %v", err)
	}
	res, err := t.resolve(ctx, q)
	if err != nil && !(kind == actKill && errors.Is(err, spi.ErrCorrupt)) {
		// A kill is the way out of a topology whose state is corrupt (as
		// egret kill): only that error lets one through.
		return actionJSON{}, err
	}
	params := map[string]string{}
	l := *q.cluster.l
	var run func(ctx context.Context, l *launcher.Launcher) (string, error)
	switch kind {
	case actActivate:
		run = func(ctx context.Context, l *launcher.Launcher) (string, error) {
			return "activated", l.SetActive(ctx, q.name, true)
		}
	case actDeactivate:
		drain, err := t.drainOf(q, "egret.deactivate.drain.timeout", req.Now)
		if err != nil {
			return actionJSON{}, err
		}
		params["drain"] = drain.String()
		run = func(ctx context.Context, l *launcher.Launcher) (string, error) {
			return "deactivated", l.Deactivate(ctx, q.name, drain)
		}
	case actKill:
		if req.Confirm != q.name {
			return actionJSON{}, badRequest("a kill must be confirmed: send {\"confirm\": %q}", q.name)
		}
		drain, err := t.drainOf(q, "egret.kill.drain.timeout", req.Now)
		if err != nil {
			return actionJSON{}, err
		}
		params["drain"] = drain.String()
		run = func(ctx context.Context, l *launcher.Launcher) (string, error) {
			return "killed", l.Kill(ctx, q.name, launcher.KillOptions{DrainTimeout: drain})
		}
	case actRescale:
		comp, ok := res.topo.Component(req.Component)
		if !ok {
			return actionJSON{}, badRequest("topology %q has no component %q", q.name, truncate(req.Component, 40))
		}
		if req.Parallelism < 1 || req.Parallelism > maxParallelism {
			return actionJSON{}, badRequest("parallelism %d must be 1..%d", req.Parallelism, maxParallelism)
		}
		if req.Parallelism == comp.Parallelism {
			return actionJSON{}, badRequest("component %q already runs %d task(s)", comp.Name, comp.Parallelism)
		}
		drain, err := t.drainOf(q, "egret.update.drain.timeout", false)
		if err != nil {
			return actionJSON{}, err
		}
		params["component"], params["parallelism"], params["from"] = comp.Name, fmt.Sprint(req.Parallelism), fmt.Sprint(comp.Parallelism)
		run = func(ctx context.Context, l *launcher.Launcher) (string, error) {
			err := l.Update(ctx, q.name, launcher.UpdateOptions{Parallelism: map[string]int{comp.Name: req.Parallelism}, DrainTimeout: drain})
			return fmt.Sprintf("rescaled %s from %d to %d task(s)", comp.Name, comp.Parallelism, req.Parallelism), err
		}
	case actLogLevel:
		if _, err := loglevel.ParseLevel(req.Level); err != nil {
			return actionJSON{}, &badRequestError{err}
		}
		if req.Duration == "" {
			req.Duration = "10m"
		}
		d, err := time.ParseDuration(req.Duration)
		if err != nil || d <= 0 || d > loglevel.MaxDuration {
			return actionJSON{}, badRequest("duration %q must be positive and at most %s", truncate(req.Duration, 40), loglevel.MaxDuration)
		}
		if req.Component != "" {
			if err := names.Check(names.Component, req.Component); err != nil {
				return actionJSON{}, &badRequestError{err}
			}
			if _, ok := res.topo.Component(req.Component); !ok && !isDaemonKind(req.Component) {
				return actionJSON{}, badRequest("topology %q has no component %q (nor is it a daemon: tmanager, stmgr, metricsmgr, shell)", q.name, req.Component)
			}
		}
		params["level"], params["component"], params["duration"] = req.Level, req.Component, d.String()
		lr := shellapi.LogLevelRequest{Level: req.Level, Component: req.Component, Duration: d.String()}
		run = func(ctx context.Context, l *launcher.Launcher) (string, error) {
			return setLogLevel(ctx, l, q.name, lr, t.opts.Client)
		}
	case actSavepoint:
		if t.opts.Savepoint == nil {
			return actionJSON{}, notFound("this tracker takes no savepoints")
		}
		if res.topo.DeliveryMode() != topology.EffectivelyOnce {
			return actionJSON{}, badRequest("topology %q is %s: only an effectively-once topology checkpoints its state, so only one has a savepoint", q.name, res.topo.DeliveryMode())
		}
		run = func(ctx context.Context, l *launcher.Launcher) (string, error) {
			return t.opts.Savepoint(ctx, l, q.name)
		}
	default:
		return actionJSON{}, notFound("no action %q", kind)
	}
	return t.launch(q, kind, params, r.RemoteAddr, &l, run)
}

func isDaemonKind(s string) bool {
	switch shellapi.Kind(s) {
	case shellapi.KindTManager, shellapi.KindStmgr, shellapi.KindMetricsMgr, shellapi.KindShell:
		return true
	}
	return false
}

// drainOf is the drain of an action: none with now, else the cluster's
// key.
func (t *Tracker) drainOf(q *query, key string, now bool) (time.Duration, error) {
	if now {
		return 0, nil
	}
	d, err := q.cluster.conf.Duration(key)
	if err != nil {
		return 0, fmt.Errorf("cluster %q: %w", q.cluster.name, err)
	}
	return d, nil
}

// launch records the action and runs it in the background.
func (t *Tracker) launch(q *query, kind string, params map[string]string, remote string, l *launcher.Launcher,
	run func(context.Context, *launcher.Launcher) (string, error)) (actionJSON, error) {
	a := &t.actions
	a.mu.Lock()
	for _, x := range a.list {
		if x.State == "running" && x.Cluster == q.cluster.name && x.Topology == q.name {
			a.mu.Unlock()
			return actionJSON{}, &conflictError{fmt.Errorf("action %d (%s) on %q is still running", x.ID, x.Action, q.name)}
		}
	}
	a.next++
	rec := &actionJSON{ID: a.next, Cluster: q.cluster.name, Topology: q.name, Action: kind, Params: params, State: "running",
		Progress: []string{}, StartedUnix: unixSeconds(time.Now()), Remote: remote}
	a.list = append(a.list, rec)
	if len(a.list) > maxActions {
		a.list = a.list[len(a.list)-maxActions:]
	}
	out := *rec
	a.mu.Unlock()
	l.Progress = progressWriter{a, rec}
	t.log.Info("console action", zap.Int("id", rec.ID), zap.String("action", kind), zap.String("cluster", rec.Cluster),
		zap.String("topology", rec.Topology), zap.Any("params", params), zap.String("remote", remote))
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		ctx, cancel := context.WithTimeout(a.ctx, actionTimeout)
		defer cancel()
		msg, err := run(ctx, l)
		a.mu.Lock()
		defer a.mu.Unlock()
		end := unixSeconds(time.Now())
		rec.EndedUnix = &end
		if err != nil {
			rec.State, rec.Message = "failed", oneLine(err.Error())
		} else {
			rec.State, rec.Message = "succeeded", msg
		}
		t.log.Info("console action ended", zap.Int("id", rec.ID), zap.String("state", rec.State), zap.String("message", rec.Message))
		// The topology list changed: do not serve the cached one.
		q.cluster.mu.Lock()
		q.cluster.list = nil
		q.cluster.mu.Unlock()
	}()
	return out, nil
}

// setLogLevel sets a log level in every container of a running topology
// (as egret loglevel does).
func setLogLevel(ctx context.Context, l *launcher.Launcher, name string, req shellapi.LogLevelRequest, client *http.Client) (string, error) {
	if req.Component != "" && !isDaemonKind(req.Component) {
		if _, _, err := l.InstanceContainer(ctx, name, req.Component, -1); err != nil {
			return "", err
		}
	}
	cs, err := l.Containers(ctx, name)
	if err != nil {
		return "", err
	}
	var failed []string
	var until time.Time
	for _, c := range cs {
		sh, err := l.Shell(ctx, name, c)
		if err == nil {
			until, err = shellapi.PostLogLevel(ctx, client, sh.Container, sh.URL, sh.Secret, req)
		}
		if err != nil {
			failed = append(failed, err.Error())
		}
	}
	who := "every process"
	if req.Component != "" {
		who = req.Component
	}
	if len(failed) > 0 {
		return "", fmt.Errorf("log level %s for %s set in %d of %d containers; %s", req.Level, who, len(cs)-len(failed), len(cs), strings.Join(failed, "; "))
	}
	return fmt.Sprintf("log level %s for %s in %d containers until %s", req.Level, who, len(cs), until.UTC().Format(time.RFC3339)), nil
}

type conflictError struct{ err error }

func (e *conflictError) Error() string { return e.err.Error() }
func (e *conflictError) Unwrap() error { return e.err }

// actionsEP lists the recent actions, newest first, and whether actions
// are enabled.
func (t *Tracker) actionsEP(_ context.Context, _ *query) (any, error) {
	a := &t.actions
	a.mu.Lock()
	defer a.mu.Unlock()
	list := []actionJSON{}
	for i := len(a.list) - 1; i >= 0; i-- {
		x := *a.list[i]
		x.Progress = append([]string{}, x.Progress...)
		list = append(list, x)
	}
	return map[string]any{"enabled": t.opts.OperatorToken != "", "savepoints": t.opts.Savepoint != nil, "actions": list}, nil
}
