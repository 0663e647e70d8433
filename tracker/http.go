package tracker

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

//go:embed openapi.yaml
var openapiYAML []byte

//go:embed ui
var uiFiles embed.FS

// OpenAPI returns the OpenAPI 3 document of the tracker's API.
func OpenAPI() []byte { return append([]byte(nil), openapiYAML...) }

// Errors by HTTP status.
var errNotFound = errors.New("not found")

type badRequestError struct{ err error }

func (e *badRequestError) Error() string { return e.err.Error() }
func (e *badRequestError) Unwrap() error { return e.err }

type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

func badRequest(format string, args ...any) error {
	return &badRequestError{fmt.Errorf(format, args...)}
}

type notFoundError struct{ msg string }

func (e *notFoundError) Error() string        { return e.msg }
func (e *notFoundError) Is(target error) bool { return target == errNotFound }

func notFound(format string, args ...any) error {
	return &notFoundError{fmt.Sprintf(format, args...)}
}

// endpoint answers a request with a value to encode or an error.
type endpoint func(ctx context.Context, q *query) (any, error)

// Handler returns the tracker's HTTP handler: the API, /openapi.yaml and
// the UI at /.
func (t *Tracker) Handler() http.Handler {
	mux := http.NewServeMux()
	api := map[string]endpoint{
		"/clusters":                      t.clustersEP,
		"/topologies":                    t.topologiesEP,
		"/topologies/logicalplan":        t.logicalPlanEP,
		"/topologies/packingplan":        t.packingPlanEP,
		"/topologies/physicalplan":       t.physicalPlanEP,
		"/topologies/executionstate":     t.executionStateEP,
		"/topologies/metrics":            t.metricsEP,
		"/topologies/metrics/timeline":   t.timelineEP,
		"/topologies/exceptions":         t.exceptionsEP,
		"/topologies/exceptionsummary":   t.exceptionSummaryEP,
		"/topologies/healthmanager":      t.healthManagerEP,
		"/topologies/containerfilestats": t.containerFileStatsEP,
		"/topologies/containerfiledata":  t.containerFileDataEP,
		"/topologies/overview":           t.overviewEP,
		"/topologies/component":          t.componentEP,
		"/topologies/checkpoints":        t.checkpointsEP,
		"/topologies/logs":               t.logsEP,
		"/actions":                       t.actionsEP,
	}
	for path, ep := range api {
		mux.Handle(path, t.serve(ep))
	}
	for _, kind := range []string{actActivate, actDeactivate, actKill, actRescale, actLogLevel, actSavepoint} {
		mux.Handle(actionPrefix+kind, t.actionHandler(kind))
	}
	mux.HandleFunc("/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		if !getOnly(w, r) {
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(openapiYAML)
	})
	ui, _ := fs.Sub(uiFiles, "ui")
	static := http.FileServer(http.FS(ui))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if !getOnly(w, r) {
			return
		}
		if r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, "/ui/") {
			writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s; see /openapi.yaml", r.URL.Path))
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
		r2 := r.Clone(r.Context())
		r2.URL.Path = strings.TrimPrefix(r.URL.Path, "/ui")
		static.ServeHTTP(w, r2)
	})
	return mux
}

func getOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s takes GET, not %s: only %s<action> changes anything", r.URL.Path, r.Method, actionPrefix))
		return false
	}
	return true
}

func (t *Tracker) serve(ep endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !getOnly(w, r) {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
		defer cancel()
		q, err := t.parseQuery(r)
		var v any
		if err == nil {
			v, err = ep(ctx, q)
		}
		if err != nil {
			code := statusOf(err)
			if code >= 500 {
				t.log.Info("tracker request failed", zap.String("path", r.URL.Path), zap.Int("status", code), zap.Error(err))
			}
			writeError(w, code, oneLine(err.Error()))
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

func statusOf(err error) int {
	var bad *badRequestError
	var un *unavailableError
	var conflict *conflictError
	switch {
	case errors.As(err, &bad):
		return http.StatusBadRequest
	case errors.As(err, &conflict):
		return http.StatusConflict
	case errors.Is(err, errNotFound):
		return http.StatusNotFound
	case errors.As(err, &un):
		return http.StatusServiceUnavailable
	case errors.Is(err, spi.ErrCorrupt):
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(map[string]string{"error": "encode response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// query holds the checked query parameters.
type query struct {
	cluster                          *clusterState
	clusterName, role, environ, name string
	component                        string
	task                             int
	hasTask                          bool
	metricNames                      []string
	resolution                       string
	path                             string
	files                            fileQuery // the container file endpoints'
	grep                             string
}

// actionPrefix is the path of the console's actions.
const actionPrefix = "/topologies/actions/"

// Parameters each endpoint accepts.
var params = map[string][]string{
	"/clusters":                      {},
	"/topologies":                    {"cluster", "role", "environ"},
	"/topologies/logicalplan":        {"cluster", "role", "environ", "topology"},
	"/topologies/packingplan":        {"cluster", "role", "environ", "topology"},
	"/topologies/physicalplan":       {"cluster", "role", "environ", "topology"},
	"/topologies/executionstate":     {"cluster", "role", "environ", "topology"},
	"/topologies/metrics":            {"cluster", "role", "environ", "topology", "component", "instance", "metricname"},
	"/topologies/metrics/timeline":   {"cluster", "role", "environ", "topology", "component", "instance", "metricname", "resolution"},
	"/topologies/exceptions":         {"cluster", "role", "environ", "topology", "component", "instance"},
	"/topologies/exceptionsummary":   {"cluster", "role", "environ", "topology", "component"},
	"/topologies/healthmanager":      {"cluster", "role", "environ", "topology"},
	"/topologies/containerfilestats": {"cluster", "role", "environ", "topology", "container"},
	"/topologies/containerfiledata":  {"cluster", "role", "environ", "topology", "container", "path", "offset", "length"},
	"/topologies/overview":           {"cluster", "role", "environ", "topology"},
	"/topologies/component":          {"cluster", "role", "environ", "topology", "component"},
	"/topologies/checkpoints":        {"cluster", "role", "environ", "topology"},
	"/topologies/logs":               {"cluster", "role", "environ", "topology", "container", "path", "offset", "length", "grep"},
	"/actions":                       {},
	actionPrefix + actActivate:       {"cluster", "role", "environ", "topology"},
	actionPrefix + actDeactivate:     {"cluster", "role", "environ", "topology"},
	actionPrefix + actKill:           {"cluster", "role", "environ", "topology"},
	actionPrefix + actRescale:        {"cluster", "role", "environ", "topology"},
	actionPrefix + actLogLevel:       {"cluster", "role", "environ", "topology"},
	actionPrefix + actSavepoint:      {"cluster", "role", "environ", "topology"},
}

// maxMetricNames bounds the metricname parameters of one request.
const maxMetricNames = 64

func (t *Tracker) parseQuery(r *http.Request) (*query, error) {
	vals := r.URL.Query()
	allowed := params[r.URL.Path]
	q := &query{path: r.URL.Path}
	for k, vs := range vals {
		if !contains(allowed, k) {
			if len(allowed) == 0 {
				return nil, badRequest("%s takes no query parameters (got %q)", r.URL.Path, k)
			}
			return nil, badRequest("unknown query parameter %q; %s takes %s", k, r.URL.Path, strings.Join(allowed, ", "))
		}
		if k != "metricname" && len(vs) != 1 {
			return nil, badRequest("query parameter %q is given %d times", k, len(vs))
		}
	}
	check := func(key string, kind names.Kind) (string, error) {
		v := vals.Get(key)
		if v == "" {
			return "", nil
		}
		if err := names.Check(kind, v); err != nil {
			return "", &badRequestError{fmt.Errorf("query parameter %s: %w", key, err)}
		}
		return v, nil
	}
	var err error
	if q.clusterName, err = check("cluster", names.Cluster); err != nil {
		return nil, err
	}
	if q.role, err = check("role", names.Role); err != nil {
		return nil, err
	}
	if q.environ, err = check("environ", names.Environ); err != nil {
		return nil, err
	}
	if q.name, err = check("topology", names.Topology); err != nil {
		return nil, err
	}
	if q.component, err = check("component", names.Component); err != nil {
		return nil, err
	}
	if s := vals.Get("instance"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1<<30 {
			return nil, badRequest("query parameter instance %q must be a task id: a positive integer", truncate(s, 40))
		}
		q.task, q.hasTask = n, true
	}
	if ms := vals["metricname"]; len(ms) > 0 {
		if len(ms) > maxMetricNames {
			return nil, badRequest("%d metricname parameters, at most %d", len(ms), maxMetricNames)
		}
		for _, m := range ms {
			if m == "" || len(m) > 256 || strings.ContainsFunc(m, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
				return nil, badRequest("query parameter metricname %q must be 1..256 printable ASCII characters", truncate(m, 40))
			}
		}
		q.metricNames = ms
	}
	q.resolution = vals.Get("resolution")
	switch q.resolution {
	case "", "fine", "coarse":
	default:
		return nil, badRequest("query parameter resolution %q must be fine or coarse", truncate(q.resolution, 40))
	}
	q.grep = vals.Get("grep")
	if len(q.grep) > maxGrep || strings.ContainsFunc(q.grep, func(c rune) bool { return c < 0x20 }) {
		return nil, badRequest("query parameter grep must be at most %d characters without control characters", maxGrep)
	}
	if contains(allowed, "container") {
		if q.files, err = parseFileQuery(vals, contains(allowed, "path")); err != nil {
			return nil, err
		}
	}
	if q.clusterName != "" {
		c, ok := t.clusters[q.clusterName]
		if !ok {
			return nil, notFound("unknown cluster %q; this tracker serves %s", q.clusterName, strings.Join(t.order, ", "))
		}
		q.cluster = c
	}
	if contains(allowed, "topology") {
		if q.cluster == nil {
			return nil, badRequest("query parameter cluster is required")
		}
		if q.name == "" {
			return nil, badRequest("query parameter topology is required")
		}
	}
	return q, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// ---- /clusters

type clusterJSON struct {
	Name      string         `json:"name"`
	Role      string         `json:"role"`
	Environ   string         `json:"environ"`
	StateMgr  string         `json:"statemgr"`
	Scheduler string         `json:"scheduler"`
	Metrics   clusterMetrics `json:"metrics"`
}

// clusterMetrics aggregate the latest timeline sample of every topology
// of a cluster the tracker follows (JStorm's cluster level): rates per
// second, cpu in cores and resident memory in bytes of every process
// (instances and daemons). A figure no topology reports is
// 0; Topologies counts the topologies with a sample.
type clusterMetrics struct {
	Topologies  int     `json:"topologies"`
	Throughput  float64 `json:"throughput"`
	ExecuteRate float64 `json:"execute_rate"`
	AckRate     float64 `json:"ack_rate"`
	FailRate    float64 `json:"fail_rate"`
	CPUCores    float64 `json:"cpu_cores"`
	RSSBytes    float64 `json:"rss_bytes"`
}

func (t *Tracker) clustersEP(_ context.Context, _ *query) (any, error) {
	out := []clusterJSON{}
	for _, n := range t.order {
		c := t.clusters[n].conf
		out = append(out, clusterJSON{Name: n, Role: c.Role, Environ: c.Environ, StateMgr: c.String("egret.statemgr"), Scheduler: c.String("egret.scheduler"),
			Metrics: t.clusterMetrics(n)})
	}
	return map[string]any{"clusters": out}, nil
}

// clusterMetrics sums the latest sample of the cluster's topologies.
func (t *Tracker) clusterMetrics(cluster string) clusterMetrics {
	t.mu.Lock()
	defer t.mu.Unlock()
	var m clusterMetrics
	add := func(dst *float64, v float64) {
		if point(v) != nil {
			*dst += v
		}
	}
	for k, tt := range t.tracks {
		if k.cluster != cluster || len(tt.fine) == 0 {
			continue
		}
		m.Topologies++
		last := tt.fine[len(tt.fine)-1]
		for comp, v := range last.comps {
			if v == nil {
				continue
			}
			if slices.Contains(tt.spouts, comp) {
				add(&m.Throughput, v[0])
			}
			add(&m.ExecuteRate, v[1])
			add(&m.AckRate, v[2])
			add(&m.FailRate, v[3])
			add(&m.CPUCores, v[9])
			add(&m.RSSBytes, v[10])
		}
		// The daemons (topology and stream managers, metrics managers,
		// executors, shells) count too.
		for k, r := range tt.console.dlast {
			m.RSSBytes += r.m[mRSS]
			if p, ok := tt.console.dbefore[k]; ok {
				if v, ok := rateOver(p, r, mCPUSeconds); ok {
					m.CPUCores += v
				}
			}
		}
	}
	return m
}

// ---- /topologies

type topologyJSON struct {
	Cluster    string `json:"cluster"`
	Role       string `json:"role"`
	Environ    string `json:"environ"`
	Name       string `json:"name"`
	ID         string `json:"id"`
	State      string `json:"state"`
	Containers int    `json:"containers"`
	Instances  int    `json:"instances"`
	Submitted  int64  `json:"submitted_unix"`
	User       string `json:"user"`
	Problem    string `json:"problem,omitempty"`
	// Throughput is the topology's spout emit rate (tuples/s) of the
	// latest timeline sample; null when unknown.
	Throughput *float64 `json:"throughput"`
}

type clusterProblem struct {
	Cluster string `json:"cluster"`
	Error   string `json:"error"`
}

func (t *Tracker) topologiesEP(ctx context.Context, q *query) (any, error) {
	out := []topologyJSON{}
	var problems []clusterProblem
	for _, n := range t.order {
		if q.cluster != nil && q.cluster.name != n {
			continue
		}
		c := t.clusters[n]
		infos, err := c.topologies(ctx, t.opts.ListCache)
		if err != nil {
			if q.cluster != nil {
				return nil, err
			}
			// One unreachable cluster does not hide the others.
			problems = append(problems, clusterProblem{Cluster: n, Error: oneLine(err.Error())})
			continue
		}
		for _, i := range infos {
			if q.role != "" && i.Role != q.role || q.environ != "" && i.Environ != q.environ {
				continue
			}
			var sub int64
			if !i.Submitted.IsZero() && i.ID != "" {
				sub = i.Submitted.Unix()
			}
			out = append(out, topologyJSON{Cluster: n, Role: i.Role, Environ: i.Environ, Name: i.Name, ID: i.ID, State: i.State,
				Containers: i.Containers, Instances: i.Instances, Submitted: sub, User: i.User, Problem: oneLine(i.Problem),
				Throughput: t.throughput(n, i.Name, i.ID)})
		}
	}
	if len(problems) > 0 {
		return map[string]any{"topologies": out, "problems": problems}, nil
	}
	return map[string]any{"topologies": out}, nil
}

// throughput is the summed emit rate of the spouts at the latest sample.
func (t *Tracker) throughput(cluster, name, id string) *float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	tt := t.tracks[trackKey{cluster, name}]
	if tt == nil || tt.id != id || len(tt.fine) == 0 || len(tt.spouts) == 0 {
		return nil
	}
	last := tt.fine[len(tt.fine)-1]
	var sum float64
	known := false
	for _, s := range tt.spouts {
		if v := last.comps[s]; v != nil && point(v[0]) != nil {
			sum += v[0]
			known = true
		}
	}
	if !known {
		return nil
	}
	return &sum
}

// ---- resolution of one topology

// resolved is what the state holds of one topology.
type resolved struct {
	topo *topology.Topology
	es   *egretpb.ExecutionState
}

// resolve checks that the topology exists in the cluster (and matches
// role and environ when given) and reads its definition and execution
// state.
func (t *Tracker) resolve(ctx context.Context, q *query) (*resolved, error) {
	var r resolved
	err := q.cluster.store(ctx, t.opts.Backends, func(s *state.Store) error {
		var err error
		if r.topo, err = s.Topology(ctx, q.name); err != nil {
			return err
		}
		r.es, err = s.ExecutionState(ctx, q.name)
		return err
	})
	if errors.Is(err, spi.ErrNotFound) {
		return nil, notFound("topology %q not found in cluster %q", q.name, q.cluster.name)
	}
	if err != nil {
		return nil, err
	}
	if q.environ != "" && r.es.GetEnviron() != q.environ {
		return nil, notFound("topology %q of cluster %q runs in environ %q, not %q", q.name, q.cluster.name, r.es.GetEnviron(), q.environ)
	}
	if q.role != "" && r.es.GetRole() != q.role {
		return nil, notFound("topology %q of cluster %q belongs to role %q, not %q", q.name, q.cluster.name, r.es.GetRole(), q.role)
	}
	if q.component != "" {
		if _, ok := r.topo.Component(q.component); !ok {
			return nil, notFound("topology %q has no component %q", q.name, q.component)
		}
	}
	return &r, nil
}

// checkTask checks the instance parameter (and the component, when both
// are given) against the packing plan.
func (t *Tracker) checkTask(ctx context.Context, q *query) error {
	if !q.hasTask {
		return nil
	}
	pp, err := t.packing(ctx, q)
	if err != nil {
		return err
	}
	for _, c := range pp.Containers {
		for _, in := range c.Instances {
			if in.TaskID == q.task {
				if q.component != "" && in.Component != q.component {
					return notFound("task %d of topology %q is of component %q, not %q", q.task, q.name, in.Component, q.component)
				}
				return nil
			}
		}
	}
	return notFound("topology %q has no instance (task) %d", q.name, q.task)
}

func (t *Tracker) packing(ctx context.Context, q *query) (*plan.PackingPlan, error) {
	var pp *plan.PackingPlan
	err := q.cluster.store(ctx, t.opts.Backends, func(s *state.Store) error {
		var err error
		pp, _, err = s.PackingPlan(ctx, q.name)
		return err
	})
	if errors.Is(err, spi.ErrNotFound) {
		return nil, notFound("topology %q of cluster %q has no packing plan", q.name, q.cluster.name)
	}
	return pp, err
}

// ---- /topologies/logicalplan

type streamJSON struct {
	ID     string   `json:"id"`
	Fields []string `json:"fields"`
	Direct bool     `json:"direct"`
}

type inputJSON struct {
	Component string   `json:"component"`
	Stream    string   `json:"stream"`
	Grouping  string   `json:"grouping"`
	Fields    []string `json:"fields,omitempty"`
}

type componentJSON struct {
	Name        string       `json:"name"`
	Kind        string       `json:"kind"`
	Parallelism int          `json:"parallelism"`
	Outputs     []streamJSON `json:"outputs"`
	Inputs      []inputJSON  `json:"inputs"`
}

type edgeJSON struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Stream   string   `json:"stream"`
	Grouping string   `json:"grouping"`
	Fields   []string `json:"fields,omitempty"`
}

func (t *Tracker) logicalPlanEP(ctx context.Context, q *query) (any, error) {
	r, err := t.resolve(ctx, q)
	if err != nil {
		return nil, err
	}
	comps := []componentJSON{}
	edges := []edgeJSON{}
	for _, c := range r.topo.Components {
		cj := componentJSON{Name: c.Name, Kind: c.Kind.String(), Parallelism: c.Parallelism, Outputs: []streamJSON{}, Inputs: []inputJSON{}}
		for _, s := range c.Outputs {
			cj.Outputs = append(cj.Outputs, streamJSON{ID: s.ID, Fields: nonNilStrings(s.Fields), Direct: s.Direct})
		}
		for _, in := range c.Inputs {
			g := in.Grouping.String()
			if in.Grouping == topology.Custom && in.CustomName != "" {
				g += ":" + in.CustomName
			}
			cj.Inputs = append(cj.Inputs, inputJSON{Component: in.Component, Stream: in.Stream, Grouping: g, Fields: in.Fields})
			edges = append(edges, edgeJSON{From: in.Component, To: c.Name, Stream: in.Stream, Grouping: g, Fields: in.Fields})
		}
		comps = append(comps, cj)
	}
	return map[string]any{"cluster": q.cluster.name, "topology": q.name, "id": r.topo.ID, "components": comps, "edges": edges}, nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ---- /topologies/packingplan

type resourcesJSON struct {
	CPU  float64 `json:"cpu"`
	RAM  int64   `json:"ram_bytes"`
	Disk int64   `json:"disk_bytes"`
}

func resJSON(r plan.Resources) resourcesJSON {
	return resourcesJSON{CPU: r.CPU, RAM: r.RAM, Disk: r.Disk}
}

type packedInstanceJSON struct {
	Task      int           `json:"task"`
	Component string        `json:"component"`
	Index     int           `json:"index"`
	Resources resourcesJSON `json:"resources"`
}

type packedContainerJSON struct {
	ID        int                  `json:"id"`
	Required  resourcesJSON        `json:"required"`
	Instances []packedInstanceJSON `json:"instances"`
}

func packedContainers(pp *plan.PackingPlan) []packedContainerJSON {
	out := []packedContainerJSON{}
	for _, c := range pp.Containers {
		pc := packedContainerJSON{ID: c.ID, Required: resJSON(c.Required), Instances: []packedInstanceJSON{}}
		for _, in := range c.Instances {
			pc.Instances = append(pc.Instances, packedInstanceJSON{Task: in.TaskID, Component: in.Component, Index: in.Index, Resources: resJSON(in.Resources)})
		}
		sort.Slice(pc.Instances, func(i, j int) bool { return pc.Instances[i].Task < pc.Instances[j].Task })
		out = append(out, pc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (t *Tracker) packingPlanEP(ctx context.Context, q *query) (any, error) {
	if _, err := t.resolve(ctx, q); err != nil {
		return nil, err
	}
	pp, err := t.packing(ctx, q)
	if err != nil {
		return nil, err
	}
	return map[string]any{"cluster": q.cluster.name, "topology": q.name, "id": pp.TopologyID, "containers": packedContainers(pp)}, nil
}

// ---- /topologies/physicalplan

type physInstanceJSON struct {
	Task      int           `json:"task"`
	Component string        `json:"component"`
	Index     int           `json:"index"`
	Resources resourcesJSON `json:"resources"`
	// Pid and Started (Unix seconds) of the running process as it last
	// reported; 0 when unknown. Restarts the tracker saw.
	Pid      int     `json:"pid"`
	Started  float64 `json:"started_unix"`
	Restarts int     `json:"restarts"`
}

type physContainerJSON struct {
	ID          int                `json:"id"`
	Host        string             `json:"host"`
	DataPort    int32              `json:"data_port"`
	MetricsPort int32              `json:"metrics_port"`
	Registered  bool               `json:"registered"`
	Instances   []physInstanceJSON `json:"instances"`
}

type tmanagerJSON struct {
	Host       string `json:"host"`
	ServerPort int32  `json:"server_port"`
	HTTPPort   int32  `json:"http_port"`
	Pid        int32  `json:"pid"`
}

func (t *Tracker) physicalPlanEP(ctx context.Context, q *query) (any, error) {
	r, err := t.resolve(ctx, q)
	if err != nil {
		return nil, err
	}
	var pp *egretpb.PhysicalPlan
	var tm *tmanagerJSON
	err = q.cluster.store(ctx, t.opts.Backends, func(s *state.Store) error {
		var err error
		if pp, err = s.PhysicalPlan(ctx, q.name); err != nil {
			return err
		}
		loc, err := s.TManagerLocation(ctx, q.name)
		if err == nil {
			tm = &tmanagerJSON{Host: loc.GetHost(), ServerPort: loc.GetServerPort(), HTTPPort: loc.GetHttpPort(), Pid: loc.GetPid()}
		} else if !errors.Is(err, spi.ErrNotFound) {
			return err
		}
		return nil
	})
	if errors.Is(err, spi.ErrNotFound) {
		return nil, notFound("topology %q of cluster %q has no physical plan yet: its containers are starting", q.name, q.cluster.name)
	}
	if err != nil {
		return nil, err
	}
	packing := plan.FromProto(pp.GetPacking())
	stmgrs := map[int]*egretpb.StMgrLocation{}
	for _, s := range pp.GetStmgrs() {
		stmgrs[int(s.GetContainer())] = s
	}
	// Live pids and start times, when the topology manager answers.
	live := map[int][2]float64{}
	if st, err := t.fetchStats(ctx, q.cluster, q.name); err == nil {
		for _, cs := range st.Components {
			for tk, ts := range cs.Tasks {
				if task, err := strconv.Atoi(tk); err == nil {
					live[task] = [2]float64{ts.Metrics["process.pid"], ts.Metrics["process.start.unix"]}
				}
			}
		}
	}
	procs := t.procs(q.cluster.name, q.name, r.topo.ID)
	containers := []physContainerJSON{}
	for _, pc := range packedContainers(packing) {
		c := physContainerJSON{ID: pc.ID, Instances: []physInstanceJSON{}}
		if s := stmgrs[pc.ID]; s != nil {
			c.Host, c.DataPort, c.MetricsPort, c.Registered = s.GetHost(), s.GetDataPort(), s.GetMetricsPort(), true
		}
		for _, in := range pc.Instances {
			pi := physInstanceJSON{Task: in.Task, Component: in.Component, Index: in.Index, Resources: in.Resources}
			if l, ok := live[in.Task]; ok {
				pi.Pid, pi.Started = int(l[0]), l[1]
			}
			if p, ok := procs[in.Task]; ok {
				pi.Restarts = p.restarts
				if pi.Pid == 0 {
					pi.Pid, pi.Started = int(p.pid), p.start
				}
			}
			c.Instances = append(c.Instances, pi)
		}
		containers = append(containers, c)
	}
	rc := pp.GetRuntimeConfig()
	if rc == nil {
		rc = map[string]string{}
	}
	return map[string]any{"cluster": q.cluster.name, "topology": q.name, "id": r.topo.ID, "version": pp.GetVersion(),
		"state": stateName(pp.GetState()), "tmanager": tm, "containers": containers, "runtime_config": rc}, nil
}

func stateName(s egretpb.TopologyState) string {
	switch s {
	case egretpb.TopologyState_TOPOLOGY_STATE_RUNNING:
		return "running"
	case egretpb.TopologyState_TOPOLOGY_STATE_PAUSED:
		return "deactivated"
	}
	return "unknown"
}

// ---- /topologies/executionstate

func (t *Tracker) executionStateEP(ctx context.Context, q *query) (any, error) {
	r, err := t.resolve(ctx, q)
	if err != nil {
		return nil, err
	}
	es := r.es
	var sched map[string]any
	err = q.cluster.store(ctx, t.opts.Backends, func(s *state.Store) error {
		loc, err := s.SchedulerLocation(ctx, q.name)
		if errors.Is(err, spi.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		sched = map[string]any{"http_endpoint": loc.GetHttpEndpoint(), "job_links": nonNilStrings(loc.GetJobLinks()), "pid": loc.GetPid()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"cluster": q.cluster.name, "topology": q.name, "id": es.GetTopologyId(),
		"role": es.GetRole(), "environ": es.GetEnviron(), "submitted_unix": es.GetSubmitTimeUnix(), "user": es.GetSubmitUser(),
		"package_uri": es.GetPackageUri(), "package_sha256": es.GetPackageSha256(), "egret_version": es.GetEgretVersion(),
		"scheduler": es.GetScheduler(), "deploy_deactivated": es.GetDeployDeactivated(), "scheduler_location": sched,
	}, nil
}

// ---- /topologies/healthmanager

type healthDecisionJSON struct {
	UnixNanos         int64  `json:"unix_nanos"`
	Component         string `json:"component"`
	Action            string `json:"action"`
	Reason            string `json:"reason"`
	BackPressureNanos int64  `json:"backpressure_nanos"`
	OldParallelism    int32  `json:"old_parallelism"`
	NewParallelism    int32  `json:"new_parallelism"`
	Error             string `json:"error"`
}

// healthManagerEP answers whether the topology runs a health manager and
// its recorded decisions, oldest first (from the state manager).
func (t *Tracker) healthManagerEP(ctx context.Context, q *query) (any, error) {
	r, err := t.resolve(ctx, q)
	if err != nil {
		return nil, err
	}
	decisions := []healthDecisionJSON{}
	err = q.cluster.store(ctx, t.opts.Backends, func(s *state.Store) error {
		hd, err := s.HealthDecisions(ctx, q.name)
		if errors.Is(err, spi.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if hd.GetTopologyId() != r.topo.ID {
			return nil // a previous submission's
		}
		for _, d := range hd.GetDecisions() {
			decisions = append(decisions, healthDecisionJSON{UnixNanos: d.GetUnixNanos(), Component: d.GetComponent(), Action: d.GetAction(),
				Reason: d.GetReason(), BackPressureNanos: d.GetBackpressureNanos(), OldParallelism: d.GetOldParallelism(),
				NewParallelism: d.GetNewParallelism(), Error: d.GetError()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"cluster": q.cluster.name, "topology": q.name, "enabled": r.topo.HealthMgr().Enabled, "decisions": decisions}, nil
}

// ---- /topologies/metrics

type taskMetricsJSON struct {
	Container int                `json:"container"`
	UnixNanos int64              `json:"unix_nanos"`
	Metrics   map[string]float64 `json:"metrics"`
}

type componentMetricsJSON struct {
	Metrics   map[string]float64          `json:"metrics"`
	Instances map[string]*taskMetricsJSON `json:"instances"`
}

func pick(m map[string]float64, names []string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if len(names) == 0 || contains(names, k) {
			out[k] = v
		}
	}
	return out
}

func (t *Tracker) metricsEP(ctx context.Context, q *query) (any, error) {
	if _, err := t.resolve(ctx, q); err != nil {
		return nil, err
	}
	if err := t.checkTask(ctx, q); err != nil {
		return nil, err
	}
	st, err := t.fetchStats(ctx, q.cluster, q.name)
	if err != nil {
		return nil, err
	}
	comps := map[string]*componentMetricsJSON{}
	totals := map[string]float64{}
	for c, cs := range st.Components {
		if q.component != "" && c != q.component {
			continue
		}
		cm := &componentMetricsJSON{Metrics: map[string]float64{}, Instances: map[string]*taskMetricsJSON{}}
		for tk, ts := range cs.Tasks {
			if q.hasTask && tk != strconv.Itoa(q.task) {
				continue
			}
			m := pick(ts.Metrics, q.metricNames)
			cm.Instances[tk] = &taskMetricsJSON{Container: int(ts.Container), UnixNanos: ts.UnixNanos, Metrics: m}
			for k, v := range m {
				cm.Metrics[k] += v
				totals[k] += v
			}
		}
		if q.hasTask && len(cm.Instances) == 0 {
			continue
		}
		comps[c] = cm
	}
	return map[string]any{"cluster": q.cluster.name, "topology": q.name, "id": st.TopologyID, "components": comps, "topology_metrics": totals}, nil
}

// ---- /topologies/metrics/timeline

func (t *Tracker) timelineEP(ctx context.Context, q *query) (any, error) {
	r, err := t.resolve(ctx, q)
	if err != nil {
		return nil, err
	}
	if err := t.checkTask(ctx, q); err != nil {
		return nil, err
	}
	series := TimelineSeries
	if len(q.metricNames) > 0 {
		for _, m := range q.metricNames {
			if !contains(TimelineSeries, m) {
				return nil, badRequest("the timeline has no series %q; it keeps %s", truncate(m, 40), strings.Join(TimelineSeries, ", "))
			}
		}
		series = q.metricNames
	}
	idx := make([]int, len(series))
	for i, s := range series {
		for j, n := range TimelineSeries {
			if n == s {
				idx[i] = j
			}
		}
	}
	res := q.resolution
	if res == "" {
		res = "fine"
	}
	step := t.opts.SampleInterval
	t.mu.Lock()
	defer t.mu.Unlock()
	var samples []sample
	tt := t.tracks[trackKey{q.cluster.name, q.name}]
	if tt != nil && tt.id == r.topo.ID {
		samples = tt.fine
		if res == "coarse" {
			samples, step = tt.coarse, coarseStep
		}
	}
	ts := make([]float64, len(samples))
	for i, s := range samples {
		ts[i] = float64(s.at.UnixMilli()) / 1e3
	}
	build := func(get func(sample) *values) map[string][]*float64 {
		out := map[string][]*float64{}
		for i, name := range series {
			col := make([]*float64, len(samples))
			for j, s := range samples {
				if v := get(s); v != nil {
					col[j] = point(v[idx[i]])
				}
			}
			out[name] = col
		}
		return out
	}
	comps := map[string]any{}
	for _, c := range r.topo.Components {
		if q.component != "" && c.Name != q.component {
			continue
		}
		name := c.Name
		comps[name] = build(func(s sample) *values { return s.comps[name] })
	}
	out := map[string]any{"cluster": q.cluster.name, "topology": q.name, "id": r.topo.ID, "resolution": res,
		"step_seconds": step.Seconds(), "timestamps": ts, "components": comps}
	if q.hasTask {
		task := q.task
		out["instance"] = map[string]any{"task": task, "series": build(func(s sample) *values { return s.tasks[task] })}
	}
	return out, nil
}

// ---- /topologies/exceptions and /exceptionsummary

type exceptionJSON struct {
	Component string `json:"component"`
	Task      int32  `json:"task"`
	Container int32  `json:"container"`
	Message   string `json:"message"`
	Stack     string `json:"stack"`
	Count     int64  `json:"count"`
	First     int64  `json:"first_unix_nanos"`
	Last      int64  `json:"last_unix_nanos"`
}

func (t *Tracker) exceptionList(ctx context.Context, q *query) ([]exceptionJSON, error) {
	if _, err := t.resolve(ctx, q); err != nil {
		return nil, err
	}
	if err := t.checkTask(ctx, q); err != nil {
		return nil, err
	}
	var raw struct {
		Exceptions map[string][]tmException `json:"exceptions"`
	}
	if err := t.getTM(ctx, q.cluster, q.name, "/exceptions", &raw); err != nil {
		return nil, err
	}
	out := []exceptionJSON{}
	for c, list := range raw.Exceptions {
		if q.component != "" && c != q.component {
			continue
		}
		for _, e := range list {
			if q.hasTask && int(e.Task) != q.task {
				continue
			}
			out = append(out, exceptionJSON{Component: c, Task: e.Task, Container: e.Container, Message: e.Message, Stack: e.Stack,
				Count: e.Count, First: e.FirstNanos, Last: e.LastNanos})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Last > out[j].Last })
	return out, nil
}

func (t *Tracker) exceptionsEP(ctx context.Context, q *query) (any, error) {
	list, err := t.exceptionList(ctx, q)
	if err != nil {
		return nil, err
	}
	return map[string]any{"cluster": q.cluster.name, "topology": q.name, "exceptions": list}, nil
}

type summaryJSON struct {
	Component string  `json:"component"`
	Message   string  `json:"message"`
	Count     int64   `json:"count"`
	Tasks     []int32 `json:"tasks"`
	First     int64   `json:"first_unix_nanos"`
	Last      int64   `json:"last_unix_nanos"`
	LastStack string  `json:"last_stack"`
}

func (t *Tracker) exceptionSummaryEP(ctx context.Context, q *query) (any, error) {
	list, err := t.exceptionList(ctx, q)
	if err != nil {
		return nil, err
	}
	type key struct{ comp, msg string }
	by := map[key]*summaryJSON{}
	var order []key
	for _, e := range list { // most recent first
		k := key{e.Component, e.Message}
		s := by[k]
		if s == nil {
			s = &summaryJSON{Component: e.Component, Message: e.Message, Tasks: []int32{}, First: e.First, Last: e.Last, LastStack: e.Stack}
			by[k] = s
			order = append(order, k)
		}
		s.Count += e.Count
		s.First = min(s.First, e.First)
		if !containsTask(s.Tasks, e.Task) {
			s.Tasks = append(s.Tasks, e.Task)
		}
	}
	out := []summaryJSON{}
	for _, k := range order {
		s := by[k]
		sort.Slice(s.Tasks, func(i, j int) bool { return s.Tasks[i] < s.Tasks[j] })
		out = append(out, *s)
	}
	return map[string]any{"cluster": q.cluster.name, "topology": q.name, "summary": out}, nil
}

func containsTask(s []int32, x int32) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
