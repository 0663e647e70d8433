package nomadtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Node is a client node of the fake cluster.
type Node struct {
	Name       string
	Datacenter string
	// Capacity.
	CPU, MemoryMB, DiskMB int
	// Drivers the node offers (default raw_exec, exec, docker).
	Drivers []string
	// Attributes as in ${attr.<name>} (default kernel.name=linux,
	// cpu.arch=amd64).
	Attributes map[string]string
	// Consul: the node runs a Consul agent, so groups with Consul services
	// can be placed on it. A stock Nomad agent (nomad agent -dev) has none.
	Consul bool
}

// Option configures a Server.
type Option func(*Server)

// WithToken turns ACLs on: every request must carry this X-Nomad-Token.
func WithToken(token string) Option { return func(s *Server) { s.token = token } }

// WithNodes replaces the default node (one large node in dc1).
func WithNodes(nodes ...Node) Option { return func(s *Server) { s.SetNodes(nodes...) } }

// WithRegion names the fake's region (default "global").
func WithRegion(region string) Option { return func(s *Server) { s.region = region } }

// WithPendingEvals makes every evaluation read as "pending" for its first
// n reads, as while Nomad's scheduler workers are busy.
func WithPendingEvals(n int) Option { return func(s *Server) { s.pendingReads = n } }

// Request is one request the fake received.
type Request struct {
	Method, Path string
	Query        url.Values
	Token        string
	Body         []byte
}

// Server is the fake Nomad agent.
type Server struct {
	// URL is the agent's address (NOMAD_ADDR).
	URL string

	srv          *httptest.Server
	fetch        *http.Client // downloads artifacts
	token        string
	region       string
	pendingReads int

	mu         sync.Mutex
	index      uint64
	nodes      []*node
	jobs       map[jobKey]*jobState
	allocs     []*alloc
	evals      map[string]*evalState
	deploys    map[string]*api.Deployment
	requests   []Request
	registered [][]byte
}

type jobKey struct{ ns, id string }

type jobState struct {
	job *api.Job
}

type node struct {
	Node
	id string
}

type alloc struct {
	stub *api.AllocationListStub
	// restarting counts the listings left that show the allocation and
	// its tasks pending after a restart in place, as a Nomad client
	// reports them while the task starts again; while it is not zero a
	// restart is refused (Task not running), which ends it.
	restarting int
	// stale: listings show the allocation pending although its task
	// runs (a server that has not yet learnt from the client that the
	// task restarted runs again); a restart is accepted and ends it.
	stale          bool
	jobCreateIndex uint64
	node           *node
	cpu, mem, disk int
}

type evalState struct {
	eval  *api.Evaluation
	reads int
}

// New starts a fake Nomad agent that stops when t ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{region: "global", jobs: map[jobKey]*jobState{}, evals: map[string]*evalState{}, deploys: map[string]*api.Deployment{}, fetch: &http.Client{Timeout: 30 * time.Second}}
	s.SetNodes(Node{Name: "node-1", CPU: 1 << 20, MemoryMB: 1 << 20, DiskMB: 1 << 20})
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(s.routes())
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Close stops the server (New's cleanup does too); later requests cannot
// connect.
func (s *Server) Close() { s.srv.Close() }

// SetNodes replaces the cluster's nodes. Running allocations stay where
// they are.
func (s *Server) SetNodes(nodes ...Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = nil
	for i, n := range nodes {
		if n.Datacenter == "" {
			n.Datacenter = "dc1"
		}
		if n.Drivers == nil {
			n.Drivers = []string{"raw_exec", "exec", "docker"}
		}
		if n.Attributes == nil {
			n.Attributes = map[string]string{"kernel.name": "linux", "cpu.arch": "amd64"}
		}
		// What a Nomad 1.6.5 client fingerprints, and Consul's version
		// when it runs a Consul agent.
		for k, v := range map[string]string{"nomad.version": "1.6.5", "nomad.service_discovery": "true", "os.signals": "SIGHUP,SIGINT,SIGKILL,SIGQUIT,SIGTERM,SIGUSR1,SIGUSR2"} {
			if _, ok := n.Attributes[k]; !ok {
				n.Attributes[k] = v
			}
		}
		if n.Consul {
			n.Attributes["consul.version"] = "1.16.0"
		}
		if n.Name == "" {
			n.Name = fmt.Sprintf("node-%d", i+1)
		}
		s.nodes = append(s.nodes, &node{Node: n, id: newID()})
	}
}

// Jobs returns copies of the registered (not purged) jobs, by namespace
// and ID.
func (s *Server) Jobs() []*api.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]jobKey, 0, len(s.jobs))
	for k := range s.jobs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].ns < keys[j].ns || keys[i].ns == keys[j].ns && keys[i].id < keys[j].id
	})
	out := make([]*api.Job, 0, len(keys))
	for _, k := range keys {
		out = append(out, clone(s.jobs[k].job))
	}
	return out
}

// Allocations returns copies of every allocation, terminal ones included.
func (s *Server) Allocations() []*api.AllocationListStub {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*api.AllocationListStub, 0, len(s.allocs))
	for _, a := range s.allocs {
		out = append(out, clone(a.stub))
	}
	return out
}

// startingListings is how many listings show a task restarted in place
// as starting: the task starts again within them.
const startingListings = 2

// ListStale makes the running allocations of task group group list as
// pending, their tasks too, as a Nomad server lists them until it learns
// from the client that a restarted task runs again; a restart is accepted
// (the task runs) and ends it.
func (s *Server) ListStale(group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.allocs {
		if a.stub.TaskGroup == group && a.stub.ClientStatus == api.AllocClientStatusRunning {
			a.stale = true
		}
	}
}

// Registered returns the "Job" object of every register request body, in
// order, as the client sent it.
func (s *Server) Registered() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.registered)
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// ---- HTTP ----

// apiError is an error answer: status and body text.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) *apiError {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// multiError is Nomad's answer to an invalid job: HTTP 500 with the
// go-multierror rendering of the (nested) errors, over many lines.
func multiError(errs []string) *apiError {
	return &apiError{code: http.StatusInternalServerError, msg: formatErrors(errs)}
}

type handler func(r *http.Request, ns string, body []byte) (any, *apiError)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for pattern, h := range map[string]handler{
		"PUT /v1/jobs":                            s.register,
		"POST /v1/jobs":                           s.register,
		"GET /v1/jobs":                            s.list,
		"GET /v1/job/{id}":                        s.info,
		"DELETE /v1/job/{id}":                     s.deregister,
		"GET /v1/job/{id}/allocations":            s.jobAllocations,
		"GET /v1/job/{id}/evaluations":            s.jobEvaluations,
		"GET /v1/evaluation/{id}":                 s.evaluation,
		"GET /v1/deployment/{id}":                 s.deployment,
		"PUT /v1/client/allocation/{id}/restart":  s.restart,
		"POST /v1/client/allocation/{id}/restart": s.restart,
	} {
		mux.HandleFunc(pattern, s.serve(h))
	}
	return mux
}

func (s *Server) serve(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		token := r.Header.Get("X-Nomad-Token")
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Token: token, Body: body})
		s.mu.Unlock()

		if s.token != "" && token != s.token {
			msg := "Permission denied"
			if token != "" {
				msg = "ACL token not found"
			}
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		if reg := r.URL.Query().Get("region"); reg != "" && reg != s.region {
			http.Error(w, "No path to region", http.StatusInternalServerError)
			return
		}
		ns := r.URL.Query().Get("namespace")
		if ns == "" {
			ns = "default"
		}
		out, aerr := h(r, ns, body)
		if aerr != nil {
			http.Error(w, aerr.msg, aerr.code)
			return
		}
		b, err := json.Marshal(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		s.mu.Lock()
		index := s.index
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
		w.Header().Set("X-Nomad-KnownLeader", "true")
		w.Header().Set("X-Nomad-LastContact", "0")
		_, _ = w.Write(b)
	}
}

func (s *Server) register(r *http.Request, ns string, body []byte) (any, *apiError) {
	var req api.JobRegisterRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, errorf(http.StatusBadRequest, "Failed to decode request: %v", err)
	}
	if req.Job == nil {
		return nil, errorf(http.StatusBadRequest, "Job must be specified")
	}
	var raw struct{ Job json.RawMessage }
	_ = json.Unmarshal(body, &raw)
	job := req.Job
	if job.Namespace != nil && *job.Namespace != "" {
		ns = *job.Namespace
	}
	job.Namespace = &ns
	// What Nomad's HTTP endpoint does first: fill in the defaults and push
	// the job's update block into every group.
	job.Canonicalize()
	if errs := validateJob(job); len(errs) > 0 {
		return nil, multiError(errs)
	}
	// Nomad keeps only stagger and max_parallel at the job level; a job
	// read back carries them with every other update field zero.
	job.Update = jobLevelUpdate(job.Update)
	serverDefaults(job)
	setups := s.setupTasks(r.Context(), job)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.registered = append(s.registered, raw.Job)
	key := jobKey{ns, *job.ID}
	cur := s.jobs[key]
	if req.EnforceIndex {
		const prefix = "Enforcing job modify index"
		switch {
		case cur != nil && req.JobModifyIndex == 0:
			return nil, errorf(http.StatusInternalServerError, "%s 0: job already exists", prefix)
		case cur != nil && req.JobModifyIndex != *cur.job.JobModifyIndex:
			return nil, errorf(http.StatusInternalServerError, "%s %d: job exists with conflicting job modify index: %d", prefix, req.JobModifyIndex, *cur.job.JobModifyIndex)
		case cur == nil && req.JobModifyIndex != 0:
			return nil, errorf(http.StatusInternalServerError, "%s %d: job does not exist", prefix, req.JobModifyIndex)
		}
	}
	s.index++
	idx := s.index
	now := time.Now().UnixNano()
	job.Stop = ptr(false)
	job.Status = ptr("pending")
	job.SubmitTime = &now
	job.ModifyIndex, job.JobModifyIndex = ptr(idx), ptr(idx)
	if job.Type == nil {
		job.Type = ptr(api.JobTypeService)
	}
	if job.Priority == nil {
		job.Priority = ptr(50)
	}
	var prev *api.Job
	if cur != nil && !*cur.job.Stop {
		prev = cur.job
	}
	if cur != nil {
		job.CreateIndex = cur.job.CreateIndex
		job.Version = ptr(*cur.job.Version + 1)
	} else {
		job.CreateIndex, job.Version = ptr(idx), ptr(uint64(0))
	}
	s.jobs[key] = &jobState{job: job}
	ev := s.reconcileLocked(job, prev, "job-register", setups)
	return &api.JobRegisterResponse{EvalID: ev.ID, EvalCreateIndex: ev.CreateIndex, JobModifyIndex: idx}, nil
}

// reconcileLocked brings the allocations in line with job (prev is the
// running version it replaces, nil for a new or restarted job) and returns
// the evaluation that did it.
func (s *Server) reconcileLocked(job, prev *api.Job, trigger string, setups map[string]taskSetup) *api.Evaluation {
	ns, id := *job.Namespace, *job.ID
	ev := &api.Evaluation{
		ID: newID(), Priority: *job.Priority, Type: *job.Type, TriggeredBy: trigger, Namespace: ns, JobID: id,
		JobModifyIndex: *job.JobModifyIndex, Status: "complete", CreateIndex: s.index, ModifyIndex: s.index,
		CreateTime: time.Now().UnixNano(), ModifyTime: time.Now().UnixNano(), QueuedAllocations: map[string]int{},
	}
	destructiveAll := prev != nil && !reflect.DeepEqual(prev.Meta, job.Meta)
	live := map[string][]*alloc{}
	for _, a := range s.allocs {
		if a.stub.Namespace == ns && a.stub.JobID == id && a.stub.DesiredStatus == api.AllocDesiredStatusRun {
			live[a.stub.TaskGroup] = append(live[a.stub.TaskGroup], a)
		}
	}
	keep := map[string]bool{}
	if !*job.Stop {
		for _, tg := range job.TaskGroups {
			name := *tg.Name
			old := groupByName(prev, name)
			if old != nil && !destructiveAll && sameGroup(old, tg) && len(live[name]) > 0 {
				keep[name] = true
				for _, a := range live[name] {
					a.stub.JobVersion = *job.Version
					a.jobCreateIndex = *job.CreateIndex
				}
				continue
			}
			if m := s.placeLocked(job, tg, ev.ID, setups); m != nil {
				if ev.FailedTGAllocs == nil {
					ev.FailedTGAllocs = map[string]*api.AllocationMetric{}
				}
				ev.FailedTGAllocs[name] = m
				ev.QueuedAllocations[name] = count(tg)
			}
		}
	}
	for name, as := range live {
		if keep[name] {
			continue
		}
		for _, a := range as {
			if a.stub.CreateIndex == s.index {
				continue // placed by this evaluation
			}
			s.stopLocked(a, "alloc not needed due to job update")
		}
	}
	if prev != nil && !*job.Stop && *job.Type == api.JobTypeService {
		s.deployLocked(job, ev)
	}
	if len(ev.FailedTGAllocs) > 0 {
		blocked := &api.Evaluation{ID: newID(), Priority: ev.Priority, Type: ev.Type, TriggeredBy: "queued-allocs", Namespace: ns,
			JobID: id, Status: "blocked", PreviousEval: ev.ID, CreateIndex: s.index, ModifyIndex: s.index}
		ev.BlockedEval = blocked.ID
		s.evals[blocked.ID] = &evalState{eval: blocked, reads: s.pendingReads}
	}
	s.evals[ev.ID] = &evalState{eval: ev}
	s.refreshStatusLocked(job)
	return ev
}

// deployLocked records the deployment of an updated service job that
// placed allocations: Nomad's deployment watcher waits until they are
// healthy (the fake knows at once), and the evaluation names it.
func (s *Server) deployLocked(job *api.Job, ev *api.Evaluation) {
	var placed []*alloc
	for _, a := range s.allocs {
		if a.stub.Namespace == *job.Namespace && a.stub.JobID == *job.ID && a.stub.CreateIndex == s.index && a.stub.DesiredStatus == api.AllocDesiredStatusRun {
			placed = append(placed, a)
		}
	}
	if len(placed) == 0 {
		return
	}
	d := &api.Deployment{ID: newID(), Namespace: *job.Namespace, JobID: *job.ID, JobVersion: *job.Version,
		JobModifyIndex: *job.JobModifyIndex, JobCreateIndex: *job.CreateIndex, Status: api.DeploymentStatusSuccessful,
		StatusDescription: "Deployment completed successfully", CreateIndex: s.index, ModifyIndex: s.index}
	for _, a := range placed {
		if a.stub.ClientStatus != api.AllocClientStatusRunning || !*a.stub.DeploymentStatus.Healthy {
			d.Status, d.StatusDescription = api.DeploymentStatusFailed, "Failed due to unhealthy allocations"
		}
	}
	s.deploys[d.ID] = d
	ev.DeploymentID = d.ID
}

// placeLocked places the allocations of tg, or returns why it cannot.
func (s *Server) placeLocked(job *api.Job, tg *api.TaskGroup, evalID string, setups map[string]taskSetup) *api.AllocationMetric {
	cpu, mem, disk := asks(tg)
	m := &api.AllocationMetric{NodesAvailable: map[string]int{}, ConstraintFiltered: map[string]int{},
		DimensionExhausted: map[string]int{}, ResourcesExhausted: map[string]*api.Resources{}, NodesInPool: len(s.nodes), NodePool: "default"}
	for i := 0; i < count(tg); i++ {
		var chosen *node
		for _, n := range s.nodes {
			if !slices.Contains(job.Datacenters, n.Datacenter) && !slices.Contains(job.Datacenters, "*") {
				continue
			}
			if i == 0 {
				m.NodesAvailable[n.Datacenter]++
				m.NodesEvaluated++
			}
			if why := s.infeasible(job, tg, n); why != "" {
				if i == 0 {
					m.NodesFiltered++
					m.ConstraintFiltered[why]++
				}
				continue
			}
			ucpu, umem, udisk := s.usedLocked(n)
			dim := ""
			switch {
			case ucpu+cpu > n.CPU:
				dim = "cpu"
			case umem+mem > n.MemoryMB:
				dim = "memory"
			case udisk+disk > n.DiskMB:
				dim = "disk"
			}
			if dim != "" {
				if i == 0 {
					m.NodesExhausted++
					m.DimensionExhausted[dim]++
				}
				continue
			}
			chosen = n
			break
		}
		if chosen == nil {
			for _, t := range tg.Tasks {
				m.ResourcesExhausted[t.Name] = t.Resources
			}
			m.CoalescedFailures = count(tg) - i - 1
			return m
		}
		s.newAllocLocked(job, tg, chosen, i, evalID, cpu, mem, disk, setups)
	}
	return nil
}

// infeasible returns the constraint that rules n out for tg ("" if none),
// named as Nomad names it in ConstraintFiltered.
func (s *Server) infeasible(job *api.Job, tg *api.TaskGroup, n *node) string {
	for _, t := range tg.Tasks {
		if !slices.Contains(n.Drivers, t.Driver) {
			return "missing drivers"
		}
	}
	var cs []*api.Constraint
	cs = append(cs, job.Constraints...)
	cs = append(cs, tg.Constraints...)
	for _, c := range cs {
		attr, ok := strings.CutPrefix(c.LTarget, "${attr.")
		if !ok {
			continue
		}
		attr = strings.TrimSuffix(attr, "}")
		op := c.Operand
		if op == "" {
			op = "="
		}
		v, has := n.Attributes[attr]
		switch {
		case (op == "=" || op == "==" || op == "is") && v != c.RTarget, (op == "!=" || op == "not") && v == c.RTarget:
			return fmt.Sprintf("%s %s %s", c.LTarget, op, c.RTarget)
		case (op == "semver" || op == "version") && !has: // versions are not compared: present is enough
			return fmt.Sprintf("%s %s %s", c.LTarget, op, c.RTarget)
		case op == "set_contains" && !containsAll(v, c.RTarget):
			return fmt.Sprintf("%s %s %s", c.LTarget, op, c.RTarget)
		}
	}
	return ""
}

func (s *Server) usedLocked(n *node) (cpu, mem, disk int) {
	for _, a := range s.allocs {
		if a.node == n && a.stub.DesiredStatus == api.AllocDesiredStatusRun {
			cpu += a.cpu
			mem += a.mem
			disk += a.disk
		}
	}
	return
}

func (s *Server) newAllocLocked(job *api.Job, tg *api.TaskGroup, n *node, i int, evalID string, cpu, mem, disk int, setups map[string]taskSetup) {
	now := time.Now()
	states := map[string]*api.TaskState{}
	status := api.AllocClientStatusRunning
	for _, t := range tg.Tasks {
		setup, ok := setups[*tg.Name+"/"+t.Name]
		if !ok {
			setup.events = []*api.TaskEvent{{Type: "Received", Time: now.UnixNano()}, {Type: "Started", Time: now.UnixNano()}}
		}
		st := &api.TaskState{State: "running", StartedAt: now.UTC(), Events: setup.events}
		if setup.failed {
			st.State, st.Failed, st.StartedAt, st.FinishedAt = "dead", true, time.Time{}, now.UTC()
			status = api.AllocClientStatusFailed
		}
		states[t.Name] = st
	}
	// Nothing listens in the fake: a check that deployments wait for
	// never passes, so the allocation never turns healthy.
	healthy := status == api.AllocClientStatusRunning
	for _, svc := range tg.Services {
		for _, c := range svc.Checks {
			if c.OnUpdate != "ignore" {
				healthy = false
			}
		}
	}
	a := &alloc{
		stub: &api.AllocationListStub{
			ID: newID(), EvalID: evalID, Name: fmt.Sprintf("%s.%s[%d]", *job.ID, *tg.Name, i), Namespace: *job.Namespace,
			NodeID: n.id, NodeName: n.Name, JobID: *job.ID, JobType: *job.Type, JobVersion: *job.Version, TaskGroup: *tg.Name,
			DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: status, TaskStates: states,
			DeploymentStatus: &api.AllocDeploymentStatus{Healthy: &healthy},
			CreateIndex:      s.index, ModifyIndex: s.index, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
		},
		jobCreateIndex: *job.CreateIndex, node: n, cpu: cpu, mem: mem, disk: disk,
	}
	s.allocs = append(s.allocs, a)
}

func (s *Server) stopLocked(a *alloc, why string) {
	now := time.Now()
	a.stub.DesiredStatus, a.stub.DesiredDescription = api.AllocDesiredStatusStop, why
	a.stub.ClientStatus = api.AllocClientStatusComplete
	for _, st := range a.stub.TaskStates {
		st.State, st.FinishedAt = "dead", now.UTC()
		st.Events = append(st.Events, &api.TaskEvent{Type: "Killed", Time: now.UnixNano()})
	}
	a.stub.ModifyIndex, a.stub.ModifyTime = s.index, now.UnixNano()
}

func (s *Server) refreshStatusLocked(job *api.Job) {
	switch {
	case *job.Stop:
		job.Status = ptr("dead")
	default:
		job.Status = ptr("pending")
		for _, a := range s.allocs {
			if a.stub.JobID == *job.ID && a.stub.Namespace == *job.Namespace && a.stub.ClientStatus == api.AllocClientStatusRunning {
				job.Status = ptr("running")
			}
		}
	}
}

func (s *Server) list(r *http.Request, ns string, _ []byte) (any, *apiError) {
	prefix := r.URL.Query().Get("prefix")
	withMeta := r.URL.Query().Get("meta") == "true"
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*api.JobListStub{}
	for k, js := range s.jobs {
		if (k.ns != ns && ns != "*") || !strings.HasPrefix(k.id, prefix) {
			continue
		}
		j := js.job
		st := &api.JobListStub{ID: *j.ID, Name: *j.Name, Namespace: *j.Namespace, Datacenters: j.Datacenters, Type: *j.Type,
			Priority: *j.Priority, Stop: *j.Stop, Status: *j.Status, CreateIndex: *j.CreateIndex, ModifyIndex: *j.ModifyIndex,
			JobModifyIndex: *j.JobModifyIndex, SubmitTime: *j.SubmitTime}
		if withMeta {
			st.Meta = j.Meta
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (s *Server) info(r *http.Request, ns string, _ []byte) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	js := s.jobs[jobKey{ns, r.PathValue("id")}]
	if js == nil {
		return nil, errorf(http.StatusNotFound, "job not found")
	}
	return js.job, nil
}

func (s *Server) deregister(r *http.Request, ns string, _ []byte) (any, *apiError) {
	purge := r.URL.Query().Get("purge") == "true"
	s.mu.Lock()
	defer s.mu.Unlock()
	key := jobKey{ns, r.PathValue("id")}
	js := s.jobs[key]
	if js == nil {
		return nil, errorf(http.StatusNotFound, "job not found")
	}
	s.index++
	job := js.job
	job.Stop = ptr(true)
	job.ModifyIndex, job.JobModifyIndex = ptr(s.index), ptr(s.index)
	ev := s.reconcileLocked(job, nil, "job-deregister", nil)
	if purge {
		delete(s.jobs, key)
	}
	return &api.JobDeregisterResponse{EvalID: ev.ID, EvalCreateIndex: ev.CreateIndex, JobModifyIndex: s.index}, nil
}

func (s *Server) jobAllocations(r *http.Request, ns string, _ []byte) (any, *apiError) {
	all := r.URL.Query().Get("all") == "true"
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	var create uint64
	if js := s.jobs[jobKey{ns, id}]; js != nil {
		create = *js.job.CreateIndex
	}
	out := []*api.AllocationListStub{}
	for _, a := range s.allocs {
		if a.stub.Namespace != ns || a.stub.JobID != id {
			continue
		}
		if !all && create != 0 && a.jobCreateIndex != create {
			continue
		}
		if a.restarting > 0 || a.stale {
			a.restarting = max(a.restarting-1, 0)
			pending := *a.stub
			pending.ClientStatus = api.AllocClientStatusPending
			pending.TaskStates = map[string]*api.TaskState{}
			for name, st := range a.stub.TaskStates {
				starting := *st
				starting.State = "pending"
				pending.TaskStates[name] = &starting
			}
			out = append(out, &pending)
			continue
		}
		out = append(out, a.stub)
	}
	return out, nil
}

func (s *Server) jobEvaluations(r *http.Request, ns string, _ []byte) (any, *apiError) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*api.Evaluation{}
	for _, e := range s.evals {
		if e.eval.Namespace == ns && e.eval.JobID == id {
			out = append(out, e.eval)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreateIndex < out[j].CreateIndex })
	return out, nil
}

func (s *Server) evaluation(r *http.Request, _ string, _ []byte) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.evals[r.PathValue("id")]
	if e == nil {
		return nil, errorf(http.StatusNotFound, "eval not found")
	}
	if e.reads < s.pendingReads && e.eval.Status == "complete" {
		e.reads++
		pending := *e.eval
		pending.Status, pending.FailedTGAllocs, pending.BlockedEval = "pending", nil, ""
		return &pending, nil
	}
	return e.eval, nil
}

func (s *Server) deployment(r *http.Request, _ string, _ []byte) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.deploys[r.PathValue("id")]
	if d == nil {
		return nil, errorf(http.StatusNotFound, "deployment not found")
	}
	return d, nil
}

func (s *Server) restart(r *http.Request, _ string, body []byte) (any, *apiError) {
	var req api.AllocationRestartRequest
	if len(body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return nil, errorf(http.StatusBadRequest, "Failed to decode request: %v", err)
		}
	}
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	var a *alloc
	for _, x := range s.allocs {
		if x.stub.ID == id {
			a = x
		}
	}
	if a == nil {
		return nil, errorf(http.StatusNotFound, "Unknown allocation %q", id)
	}
	if a.stub.ClientStatus != api.AllocClientStatusRunning || a.restarting > 0 {
		a.restarting = 0
		return nil, errorf(http.StatusInternalServerError, "Task not running")
	}
	if req.TaskName != "" && a.stub.TaskStates[req.TaskName] == nil {
		return nil, errorf(http.StatusInternalServerError, "Task not running")
	}
	a.stale = false
	s.index++
	now := time.Now()
	for name, st := range a.stub.TaskStates {
		if req.TaskName != "" && name != req.TaskName {
			continue
		}
		st.Restarts++
		st.LastRestart = now.UTC()
		st.Events = append(st.Events, &api.TaskEvent{Type: "Restart Signaled", Time: now.UnixNano(), DisplayMessage: "User requested task to restart"})
	}
	a.stub.ModifyIndex, a.stub.ModifyTime = s.index, now.UnixNano()
	a.restarting = startingListings
	return struct{}{}, nil
}

// ---- helpers ----

// jobLevelUpdate is the job-level update block Nomad stores: stagger and
// max_parallel, every other field zero.
func jobLevelUpdate(u *api.UpdateStrategy) *api.UpdateStrategy {
	out := &api.UpdateStrategy{Stagger: ptr(time.Duration(0)), MaxParallel: ptr(0), HealthCheck: ptr(""),
		MinHealthyTime: ptr(time.Duration(0)), HealthyDeadline: ptr(time.Duration(0)), ProgressDeadline: ptr(time.Duration(0)),
		Canary: ptr(0), AutoRevert: ptr(false), AutoPromote: ptr(false)}
	if u != nil && deref(u.MaxParallel, 0) > 0 {
		out.Stagger, out.MaxParallel = ptr(deref(u.Stagger, 0)), ptr(*u.MaxParallel)
	}
	return out
}

func groupByName(j *api.Job, name string) *api.TaskGroup {
	if j == nil {
		return nil
	}
	for _, tg := range j.TaskGroups {
		if tg.Name != nil && *tg.Name == name {
			return tg
		}
	}
	return nil
}

// sameGroup reports whether two versions of a group are identical (no
// update needed).
func sameGroup(a, b *api.TaskGroup) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func count(tg *api.TaskGroup) int {
	if tg.Count == nil {
		return 1
	}
	return *tg.Count
}

// asks sums a group's resources: cpu MHz, memory MB, disk MB.
func asks(tg *api.TaskGroup) (cpu, mem, disk int) {
	for _, t := range tg.Tasks {
		if t.Resources == nil {
			cpu += 100
			mem += 300
			continue
		}
		cpu += deref(t.Resources.CPU, 100)
		mem += deref(t.Resources.MemoryMB, 300)
	}
	disk = 300
	if tg.EphemeralDisk != nil && tg.EphemeralDisk.SizeMB != nil {
		disk = *tg.EphemeralDisk.SizeMB
	}
	return
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func clone[T any](v *T) *T {
	b, _ := json.Marshal(v)
	out := new(T)
	_ = json.Unmarshal(b, out)
	return out
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// containsAll reports whether the comma-separated set has every item of
// the comma-separated want.
func containsAll(set, want string) bool {
	have := strings.Split(set, ",")
	for _, w := range strings.Split(want, ",") {
		if !slices.Contains(have, strings.TrimSpace(w)) {
			return false
		}
	}
	return true
}
