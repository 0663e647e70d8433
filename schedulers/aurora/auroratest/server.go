package auroratest

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/egret-stream/egret/schedulers/aurora/auroraapi"
)

// Option configures a Server.
type Option func(*Server)

// WithCluster names the fake's cluster (default "devcluster"), sent in
// every response's ServerInfo.
func WithCluster(name string) Option { return func(s *Server) { s.cluster = name } }

// WithCredentials turns authentication on: requests must carry HTTP basic
// credentials user:password. With roles, the user may only act on jobs of
// those roles.
func WithCredentials(user, password string, roles ...string) Option {
	return func(s *Server) { s.user, s.password, s.userRoles = user, password, roles }
}

// WithUsers lists the Unix accounts of the agent: tasks of another role
// fail when their sandbox is created. Without it every role has one.
func WithUsers(users ...string) Option { return func(s *Server) { s.users = users } }

// WithCapacity sets the agent's size (default: room for anything).
func WithCapacity(cpus float64, ramMb, diskMb int64) Option {
	return func(s *Server) { s.capacity = resources{cpus, ramMb, diskMb} }
}

// WithRescheduleDelay sets how long a service task that ended by itself is
// THROTTLED before its replacement is PENDING (default 500ms).
func WithRescheduleDelay(d time.Duration) Option { return func(s *Server) { s.reschedule = d } }

// WithSandboxRoot sets the directory holding the task sandboxes (default:
// a temporary directory of the test).
func WithSandboxRoot(dir string) Option { return func(s *Server) { s.root = dir } }

// Request is one API request the fake received.
type Request struct {
	// Method is the Thrift call, for example "createJob".
	Method string
	// Body is the request body as sent (a Thrift message).
	Body []byte
	// Binary tells that Body is in the binary protocol, not JSON.
	Binary bool
}

// Decode reads the request's arguments into args, for example a
// *auroraapi.AuroraSchedulerManagerCreateJobArgs.
func (r Request) Decode(args thrift.TStruct) error {
	buf := thrift.NewTMemoryBuffer()
	_, _ = buf.Write(r.Body)
	var p thrift.TProtocol = thrift.NewTJSONProtocol(buf)
	if r.Binary {
		p = thrift.NewTBinaryProtocolConf(buf, nil)
	}
	ctx := context.Background()
	if _, _, _, err := p.ReadMessageBegin(ctx); err != nil {
		return err
	}
	return args.Read(ctx, p)
}

type resources struct {
	cpus          float64
	ramMb, diskMb int64
}

// Server is the fake Aurora scheduler and its agent.
type Server struct {
	// URL is the scheduler's address (the API is at URL + "/api").
	URL string

	addr       string
	cluster    string
	user       string
	password   string
	userRoles  []string
	users      []string
	capacity   resources
	reschedule time.Duration
	root       string
	hostname   string
	envs       *regexp.Regexp
	proc       thrift.TProcessor

	srvMu sync.Mutex
	srv   *http.Server

	mu          sync.Mutex
	closed      bool
	tasks       []*task
	requests    []Request
	unavailable int
}

// New starts a fake Aurora scheduler; t's cleanup stops it and every task.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		cluster:    "devcluster",
		reschedule: 500 * time.Millisecond,
		hostname:   "127.0.0.1",
		envs:       regexp.MustCompile(`^(prod|devel|test|staging\d*)$`),
		capacity:   resources{1 << 20, 1 << 40, 1 << 40},
	}
	for _, o := range opts {
		o(s)
	}
	if s.root == "" {
		s.root = t.TempDir()
	}
	s.proc = auroraapi.NewAuroraSchedulerManagerProcessor(&api{s})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("auroratest: listen: %v", err)
	}
	s.addr = ln.Addr().String()
	s.URL = "http://" + s.addr
	s.serve(ln)
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(ln net.Listener) {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.srvMu.Lock()
	s.srv = srv
	s.srvMu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Stop takes the API down (connections are refused) as in a scheduler
// failover; the tasks keep running.
func (s *Server) Stop() {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.srv != nil {
		_ = s.srv.Close()
		s.srv = nil
	}
}

// Start serves the API again on the same address after Stop.
func (s *Server) Start() error {
	s.srvMu.Lock()
	running := s.srv != nil
	s.srvMu.Unlock()
	if running {
		return nil
	}
	var ln net.Listener
	var err error
	// The old listener's port may take a moment to be free again.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if ln, err = net.Listen("tcp", s.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("auroratest: listen again on %s: %w", s.addr, err)
	}
	s.serve(ln)
	return nil
}

// Unavailable makes the next n API requests fail with HTTP 503, as a
// scheduler answers while it has no leader (during a failover).
func (s *Server) Unavailable(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavailable = n
}

// Close stops the API and kills every task, waiting until their processes
// are gone.
func (s *Server) Close() {
	s.Stop()
	s.mu.Lock()
	s.closed = true
	var runners []*task
	for _, t := range s.tasks {
		if t.runner {
			t.requestKill()
			t.signal(true)
			runners = append(runners, t)
		}
	}
	s.mu.Unlock()
	for _, t := range runners {
		<-t.done
	}
}

// Requests returns the API requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "HTTP method "+r.Method+" is not supported by this URL", http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	down := s.unavailable > 0
	if down {
		s.unavailable--
	}
	s.mu.Unlock()
	if down {
		http.Error(w, "No leader found while handling request.", http.StatusServiceUnavailable)
		return
	}
	user, pass, ok := r.BasicAuth()
	if s.user != "" && (!ok || user != s.user || pass != s.password) {
		w.Header().Set("WWW-Authenticate", `Basic realm="Apache Aurora Scheduler"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	binary := false
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		switch {
		case err != nil:
			http.Error(w, "bad Content-Type: "+err.Error(), http.StatusUnsupportedMediaType)
			return
		case mt == "application/vnd.apache.thrift.binary":
			binary = true
		case mt == "application/json" || mt == "application/x-thrift" || mt == "application/vnd.apache.thrift.json":
		default:
			http.Error(w, "Unsupported Content-Type "+mt, http.StatusUnsupportedMediaType)
			return
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	in, out := thrift.NewTMemoryBuffer(), thrift.NewTMemoryBuffer()
	_, _ = in.Write(body)
	var iprot, oprot thrift.TProtocol = thrift.NewTJSONProtocol(in), thrift.NewTJSONProtocol(out)
	if binary {
		iprot, oprot = thrift.NewTBinaryProtocolConf(in, nil), thrift.NewTBinaryProtocolConf(out, nil)
	}
	req := Request{Body: body, Binary: binary}
	if b := thrift.NewTMemoryBuffer(); true {
		_, _ = b.Write(body)
		var p thrift.TProtocol = thrift.NewTJSONProtocol(b)
		if binary {
			p = thrift.NewTBinaryProtocolConf(b, nil)
		}
		req.Method, _, _, _ = p.ReadMessageBegin(r.Context())
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	ctx := context.WithValue(r.Context(), userKey{}, user)
	if _, perr := s.proc.Process(ctx, iprot, oprot); perr != nil && out.Len() == 0 {
		http.Error(w, perr.Error(), http.StatusBadRequest)
		return
	}
	if binary {
		w.Header().Set("Content-Type", "application/vnd.apache.thrift.binary")
	} else {
		w.Header().Set("Content-Type", "application/vnd.apache.thrift.json")
	}
	_, _ = w.Write(out.Bytes())
}

type userKey struct{}

// ---- the API ----

// api implements the calls; each takes s.mu.
type api struct{ s *Server }

var _ auroraapi.AuroraSchedulerManager = (*api)(nil)

func (s *Server) response(code auroraapi.ResponseCode, msgs ...string) *auroraapi.Response {
	r := &auroraapi.Response{ResponseCode: code, ServerInfo: &auroraapi.ServerInfo{ClusterName: s.cluster}, Details: []*auroraapi.ResponseDetail{}}
	for _, m := range msgs {
		r.Details = append(r.Details, &auroraapi.ResponseDetail{Message: m})
	}
	return r
}

func (s *Server) invalid(format string, args ...any) *auroraapi.Response {
	return s.response(auroraapi.ResponseCode_INVALID_REQUEST, fmt.Sprintf(format, args...))
}

// permitted answers AUTH_FAILED when the caller may not act on the role.
func (s *Server) permitted(ctx context.Context, rpc string, k *auroraapi.JobKey) *auroraapi.Response {
	if s.user == "" || len(s.userRoles) == 0 || slices.Contains(s.userRoles, k.GetRole()) {
		return nil
	}
	user, _ := ctx.Value(userKey{}).(string)
	return s.response(auroraapi.ResponseCode_AUTH_FAILED, fmt.Sprintf("Subject %s is not permitted to thrift.AuroraSchedulerManager:%s:%s:%s:%s.",
		user, rpc, k.GetRole(), k.GetEnvironment(), k.GetName()))
}

var goodIdentifier = regexp.MustCompile(`^[\w\-.]+$`)

func validKey(k *auroraapi.JobKey) bool {
	return k != nil && goodIdentifier.MatchString(k.Role) && goodIdentifier.MatchString(k.Environment) && goodIdentifier.MatchString(k.Name)
}

// javaKey renders a job key as Aurora's Java code prints it.
func javaKey(k *auroraapi.JobKey) string {
	if k == nil {
		return "null"
	}
	return fmt.Sprintf("JobKey(role:%s, environment:%s, name:%s)", k.Role, k.Environment, k.Name)
}

// javaQuery renders the set fields of a task query roughly as Aurora's
// Java code prints it.
func javaQuery(q *auroraapi.TaskQuery) string {
	var parts []string
	for _, k := range q.JobKeys {
		parts = append(parts, "jobKeys:"+javaKey(k))
	}
	if len(q.Statuses) > 0 {
		parts = append(parts, fmt.Sprintf("statuses:%v", q.Statuses))
	}
	return "TaskQuery(" + strings.Join(parts, ", ") + ")"
}

func canonical(k *auroraapi.JobKey) string { return k.Role + "/" + k.Environment + "/" + k.Name }

func (a *api) CreateJob(ctx context.Context, job *auroraapi.JobConfiguration) (*auroraapi.Response, error) {
	s := a.s
	if job == nil || job.TaskConfig == nil {
		return s.invalid("Job configuration must have taskConfig set."), nil
	}
	if job.InstanceCount <= 0 {
		return s.invalid("Instance count must be positive."), nil
	}
	if !validKey(job.Key) {
		return s.invalid("Job key %s is invalid.", javaKey(job.Key)), nil
	}
	if !s.envs.MatchString(job.Key.Environment) {
		return s.invalid("Job environment %s doesn't match: %s", job.Key.Environment, s.envs), nil
	}
	if r := s.permitted(ctx, "createJob", job.Key); r != nil {
		return r, nil
	}
	tc := job.TaskConfig
	if tc.Job != nil && !validKey(tc.Job) {
		return s.invalid("Job key %s is invalid.", javaKey(tc.Job)), nil
	}
	if tc.ExecutorConfig == nil {
		return s.invalid("Configuration may not be null."), nil
	}
	if tc.ExecutorConfig.Name == "" {
		return s.invalid("Executor name may not be left unset."), nil
	}
	if tc.ExecutorConfig.Name != auroraapi.AURORA_EXECUTOR_NAME {
		return s.invalid("Configuration for executor '%s' doesn't exist.", tc.ExecutorConfig.Name), nil
	}
	if msg := checkResources(tc); msg != "" {
		return s.invalid("%s", msg), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.activeLocked(job.Key, nil)) > 0 {
		return s.invalid("Job %s already exists", canonical(job.Key)), nil
	}
	if tc.Container == nil { // Aurora's default
		tc.Container = &auroraapi.Container{Mesos: &auroraapi.MesosContainer{}}
	}
	if job.Owner != nil && !goodIdentifier.MatchString(job.Owner.User) {
		return s.invalid("Job user contains illegal characters: %s", job.Owner.User), nil
	}
	cfg := clone(tc)
	cfg.Job = clone(job.Key)
	for i := int32(0); i < job.InstanceCount; i++ {
		s.newTaskLocked(cfg, i, "", auroraapi.ScheduleStatus_PENDING)
	}
	s.scheduleLocked()
	return s.response(auroraapi.ResponseCode_OK), nil
}

// checkResources applies ConfigurationManager's resource checks.
func checkResources(tc *auroraapi.TaskConfig) string {
	count := map[string]int{}
	r := taskResources(tc)
	for _, res := range tc.Resources {
		switch {
		case res.IsSetNumCpus():
			count["cpus"]++
		case res.IsSetRamMb():
			count["mem"]++
		case res.IsSetDiskMb():
			count["disk"]++
		}
	}
	var multi []string
	for _, k := range []string{"cpus", "disk", "mem"} {
		if count[k] > 1 {
			multi = append(multi, k)
		}
	}
	switch {
	case len(multi) > 0:
		return "Multiple resource values are not supported for " + strings.Join(multi, ", ")
	case !(r.cpus > 0):
		return "num_cpus must be greater than 0.0"
	case r.ramMb <= 0:
		return "ram_mb must be greater than 0.0"
	case r.diskMb <= 0:
		return "disk_mb must be greater than 0.0"
	}
	return ""
}

func taskResources(tc *auroraapi.TaskConfig) resources {
	var r resources
	for _, res := range tc.GetResources() {
		switch {
		case res.IsSetNumCpus():
			r.cpus = res.GetNumCpus()
		case res.IsSetRamMb():
			r.ramMb = res.GetRamMb()
		case res.IsSetDiskMb():
			r.diskMb = res.GetDiskMb()
		}
	}
	return r
}

func (a *api) KillTasks(ctx context.Context, job *auroraapi.JobKey, instances []int32, _ string) (*auroraapi.Response, error) {
	s := a.s
	if !validKey(job) {
		return s.invalid("Job key %s is invalid.", javaKey(job)), nil
	}
	if r := s.permitted(ctx, "killTasks", job); r != nil {
		return r, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	killed := 0
	for _, t := range s.activeLocked(job, instances) {
		if s.killLocked(t, auroraapi.ScheduleStatus_KILLING, "Killed by "+userOf(ctx)) {
			killed++
		}
	}
	if killed == 0 {
		return s.response(auroraapi.ResponseCode_OK, "No tasks to kill."), nil
	}
	return s.response(auroraapi.ResponseCode_OK), nil
}

func (a *api) RestartShards(ctx context.Context, job *auroraapi.JobKey, shardIds []int32) (*auroraapi.Response, error) {
	s := a.s
	if !validKey(job) {
		return s.invalid("Job key %s is invalid.", javaKey(job)), nil
	}
	if len(shardIds) == 0 {
		return s.response(auroraapi.ResponseCode_ERROR, "Internal error: shardIds must not be empty"), nil
	}
	if r := s.permitted(ctx, "restartShards", job); r != nil {
		return r, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.activeLocked(job, shardIds)
	if len(ts) != len(dedup(shardIds)) {
		return s.invalid("Not all requested shards are active."), nil
	}
	for _, t := range ts {
		s.killLocked(t, auroraapi.ScheduleStatus_RESTARTING, "Restarted by "+userOf(ctx))
	}
	return s.response(auroraapi.ResponseCode_OK), nil
}

func (a *api) AddInstances(ctx context.Context, key *auroraapi.InstanceKey, count int32) (*auroraapi.Response, error) {
	s := a.s
	if key == nil || !validKey(key.JobKey) {
		return s.invalid("Job key %s is invalid.", javaKey(key.GetJobKey())), nil
	}
	if count <= 0 {
		return s.invalid("Instance count must be positive."), nil
	}
	if r := s.permitted(ctx, "addInstances", key.JobKey); r != nil {
		return r, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.activeLocked(key.JobKey, nil)
	var template *task
	last := int32(-1)
	for _, t := range cur {
		id := t.st.AssignedTask.InstanceId
		if id == key.InstanceId && template == nil {
			template = t
		}
		last = max(last, id)
	}
	if template == nil {
		return s.invalid("No active task found for a given instance ID."), nil
	}
	for i := int32(1); i <= count; i++ {
		s.newTaskLocked(template.st.AssignedTask.Task, last+i, "", auroraapi.ScheduleStatus_PENDING)
	}
	s.scheduleLocked()
	return s.response(auroraapi.ResponseCode_OK), nil
}

func (a *api) GetTasksWithoutConfigs(_ context.Context, q *auroraapi.TaskQuery) (*auroraapi.Response, error) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*auroraapi.ScheduledTask{}
	for _, t := range s.tasks {
		if matches(t.st, q) {
			c := clone(t.st)
			if ec := c.AssignedTask.Task.ExecutorConfig; ec != nil {
				ec.Data = ""
			}
			out = append(out, c)
		}
	}
	r := s.response(auroraapi.ResponseCode_OK)
	r.Result_ = &auroraapi.Result_{ScheduleStatusResult_: &auroraapi.ScheduleStatusResult_{Tasks: out}}
	return r, nil
}

func (a *api) GetPendingReason(_ context.Context, q *auroraapi.TaskQuery) (*auroraapi.Response, error) {
	s := a.s
	if q == nil {
		return s.response(auroraapi.ResponseCode_ERROR, "Internal error: query is null"), nil
	}
	if len(q.Statuses) > 0 {
		return s.invalid("Statuses is not supported in %s", javaQuery(q)), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	reasons := []*auroraapi.PendingReason{}
	for _, t := range s.tasks {
		if t.st.Status != auroraapi.ScheduleStatus_PENDING || !matches(t.st, q) {
			continue
		}
		reasons = append(reasons, &auroraapi.PendingReason{TaskId: t.st.AssignedTask.TaskId, Reason: s.vetoesLocked(t)})
	}
	r := s.response(auroraapi.ResponseCode_OK)
	r.Result_ = &auroraapi.Result_{GetPendingReasonResult_: &auroraapi.GetPendingReasonResult_{Reasons: reasons}}
	return r, nil
}

func userOf(ctx context.Context) string {
	if u, _ := ctx.Value(userKey{}).(string); u != "" {
		return u
	}
	return "UNSECURE"
}

// matches applies a TaskQuery (its set fields are ANDed).
func matches(t *auroraapi.ScheduledTask, q *auroraapi.TaskQuery) bool {
	if q == nil {
		return true
	}
	k := t.AssignedTask.Task.Job
	if q.Role != "" && q.Role != k.Role || q.Environment != "" && q.Environment != k.Environment || q.JobName != "" && q.JobName != k.Name {
		return false
	}
	if len(q.JobKeys) > 0 && !slices.ContainsFunc(q.JobKeys, func(j *auroraapi.JobKey) bool { return sameKey(j, k) }) {
		return false
	}
	if len(q.TaskIds) > 0 && !slices.Contains(q.TaskIds, t.AssignedTask.TaskId) {
		return false
	}
	if len(q.Statuses) > 0 && !slices.Contains(q.Statuses, t.Status) {
		return false
	}
	if len(q.InstanceIds) > 0 && !slices.Contains(q.InstanceIds, t.AssignedTask.InstanceId) {
		return false
	}
	return true
}

func sameKey(a, b *auroraapi.JobKey) bool {
	return a != nil && b != nil && a.Role == b.Role && a.Environment == b.Environment && a.Name == b.Name
}

func dedup(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// clone deep-copies a generated Thrift struct through the binary protocol.
func clone[T any, P interface {
	*T
	thrift.TStruct
}](v P) P {
	if v == nil {
		return nil
	}
	ctx := context.Background()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTBinaryProtocolConf(buf, nil)
	if err := v.Write(ctx, p); err != nil {
		panic(fmt.Sprintf("auroratest: copy %T: %v", v, err)) // cannot happen: the struct was built here
	}
	out := P(new(T))
	if err := out.Read(ctx, p); err != nil {
		panic(fmt.Sprintf("auroratest: copy %T: %v", v, err))
	}
	return out
}
