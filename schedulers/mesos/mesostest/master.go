package mesostest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/recordio"
	"github.com/mesos/mesos-go/api/v1/lib/resources"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"go.uber.org/zap"
)

// Media types of the scheduler API.
const (
	MediaProtobuf = "application/x-protobuf"
	MediaJSON     = "application/json"
)

// Path is the scheduler API endpoint.
const Path = "/api/v1/scheduler"

// Options configure the fake master and its agent.
type Options struct {
	// CPUs, MemMiB and DiskMiB are the agent's resources (defaults 64 CPUs,
	// 256 GiB, 1 TiB).
	CPUs, MemMiB, DiskMiB float64
	// Ports are the agent's port ranges (inclusive); default 64 ports that
	// were free when the master started.
	Ports [][2]uint64
	// Hostname is the agent's host name in offers (default 127.0.0.1).
	Hostname string
	// Roles, when set, are the only roles frameworks may subscribe with
	// (the master's --roles).
	Roles []string
	// Principal and Secret, when set, are the credentials every call must
	// carry (HTTP basic authentication).
	Principal, Secret string
	// HeartbeatInterval is the period of HEARTBEAT events (default 15s).
	HeartbeatInterval time.Duration
	// AllocationInterval is how often resources are offered (default 100ms).
	AllocationInterval time.Duration
	// UpdateRetryInterval is how often unacknowledged status updates are
	// resent (default 10s).
	UpdateRetryInterval time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL when a task has no
	// kill policy (default 3s, the command executor's).
	KillGrace time.Duration
	// WorkDir is the agent's work directory (default a temporary directory
	// of the test).
	WorkDir string
	Log     *zap.Logger
}

// Master is the fake master. Its exported methods are safe for concurrent
// use.
type Master struct {
	// URL is the master's base URL (http://127.0.0.1:port).
	URL string

	opts    Options
	srv     *httptest.Server
	agentID string
	total   mesos.Resources
	log     *zap.Logger

	mu         sync.Mutex
	frameworks map[string]*framework
	removed    map[string]bool
	offers     map[string]*offer
	tasks      map[string]*task // every task, by task id, terminal ones included
	calls      []Call
	seq        int
	rr         int // round robin position of the allocator
	// lostSubscribed is how many new registrations lose their stream
	// before SUBSCRIBED reaches them (LoseNextSubscribed).
	lostSubscribed int
	closed         bool

	done chan struct{}
	wg   sync.WaitGroup
}

// Call is one call the master received.
type Call struct {
	Type        string
	FrameworkID string
	ContentType string
	// Status is the HTTP status the master answered with.
	Status int
}

type framework struct {
	id      string
	info    mesos.FrameworkInfo
	stream  *stream // nil when disconnected
	filters []filter
	// suppressed stops offers until REVIVE.
	suppressed bool
	// failover fires when a disconnected framework did not come back.
	failover *time.Timer
	// registered is when the master first registered the framework.
	registered time.Time
	// subscriptions counts SUBSCRIBED events sent.
	subscriptions int
}

type filter struct {
	res   mesos.Resources
	until time.Time
}

type offer struct {
	id  string
	fw  string
	res mesos.Resources
}

// New starts a fake master for the test; it is closed, and every task
// process killed, when the test ends.
func New(t testing.TB, opts Options) *Master {
	t.Helper()
	if opts.WorkDir == "" {
		opts.WorkDir = t.TempDir()
	}
	m, err := Start(opts)
	if err != nil {
		t.Fatalf("start the fake Mesos master: %v", err)
	}
	t.Cleanup(m.Close)
	return m
}

// Start starts a fake master; Close stops it.
func Start(opts Options) (*Master, error) {
	if opts.CPUs == 0 {
		opts.CPUs = 64
	}
	if opts.MemMiB == 0 {
		opts.MemMiB = 256 << 10
	}
	if opts.DiskMiB == 0 {
		opts.DiskMiB = 1 << 20
	}
	if opts.Hostname == "" {
		opts.Hostname = "127.0.0.1"
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 15 * time.Second
	}
	if opts.AllocationInterval <= 0 {
		opts.AllocationInterval = 100 * time.Millisecond
	}
	if opts.UpdateRetryInterval <= 0 {
		opts.UpdateRetryInterval = 10 * time.Second
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = 3 * time.Second
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.WorkDir == "" {
		return nil, errors.New("mesostest: Options.WorkDir is required")
	}
	if len(opts.Ports) == 0 {
		ports, err := freePorts(64)
		if err != nil {
			return nil, err
		}
		opts.Ports = ports
	}
	m := &Master{
		opts:       opts,
		agentID:    newID() + "-S0",
		log:        opts.Log.Named("mesos-master"),
		frameworks: map[string]*framework{},
		removed:    map[string]bool{},
		offers:     map[string]*offer{},
		tasks:      map[string]*task{},
		done:       make(chan struct{}),
	}
	rb := resources.BuildRanges()
	for _, r := range opts.Ports {
		rb.Span(r[0], r[1])
	}
	m.total = mesos.Resources{
		resources.NewCPUs(opts.CPUs).Role("*").Resource,
		resources.NewMemory(opts.MemMiB).Role("*").Resource,
		resources.NewDisk(opts.DiskMiB).Role("*").Resource,
		resources.Build().Name(resources.NamePorts).Ranges(rb.Ranges).Role("*").Resource,
	}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serveHTTP))
	m.URL = m.srv.URL
	m.wg.Add(1)
	go m.loop()
	return m, nil
}

// freePorts returns n ports that were free a moment ago, as ranges.
func freePorts(n int) ([][2]uint64, error) {
	var ports []uint64
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("mesostest: find free ports: %w", err)
		}
		lns = append(lns, l)
		ports = append(ports, uint64(l.Addr().(*net.TCPAddr).Port))
	}
	slices.Sort(ports)
	var out [][2]uint64
	for _, p := range ports {
		if k := len(out); k > 0 && out[k-1][1]+1 == p {
			out[k-1][1] = p
			continue
		}
		out = append(out, [2]uint64{p, p})
	}
	return out, nil
}

// Close stops the master and kills every task process.
func (m *Master) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	close(m.done)
	var live []*task
	for _, t := range m.tasks {
		if !t.terminal() {
			live = append(live, t)
		}
	}
	for _, fw := range m.frameworks {
		m.disconnectLocked(fw, "")
		if fw.failover != nil {
			fw.failover.Stop()
		}
	}
	m.mu.Unlock()
	for _, t := range live {
		t.kill(0)
	}
	for _, t := range live {
		<-t.exited
	}
	m.srv.CloseClientConnections()
	m.srv.Close()
	m.wg.Wait()
}

// AgentID is the id of the one agent.
func (m *Master) AgentID() string { return m.agentID }

// loop offers resources and resends unacknowledged updates.
func (m *Master) loop() {
	defer m.wg.Done()
	alloc := time.NewTicker(m.opts.AllocationInterval)
	defer alloc.Stop()
	retry := time.NewTicker(m.opts.UpdateRetryInterval)
	defer retry.Stop()
	beat := time.NewTicker(m.opts.HeartbeatInterval)
	defer beat.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-alloc.C:
			m.allocate()
		case <-retry.C:
			m.mu.Lock()
			for _, t := range m.tasks {
				m.sendHeadLocked(t)
			}
			m.mu.Unlock()
		case <-beat.C:
			m.mu.Lock()
			for _, fw := range m.frameworks {
				if fw.stream != nil {
					fw.stream.send(&scheduler.Event{Type: scheduler.Event_HEARTBEAT})
				}
			}
			m.mu.Unlock()
		}
	}
}

// available returns the agent's resources neither used by a live task nor
// offered.
func (m *Master) availableLocked() mesos.Resources {
	avail := m.total.Clone()
	for _, t := range m.tasks {
		if !t.terminal() {
			avail.Subtract(t.info.Resources...)
		}
	}
	for _, o := range m.offers {
		avail.Subtract(o.res...)
	}
	return avail
}

// allocate offers the available resources to the next framework that
// wants them.
func (m *Master) allocate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	avail := m.availableLocked()
	if isEmpty(avail) {
		return
	}
	ids := make([]string, 0, len(m.frameworks))
	for id := range m.frameworks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	now := time.Now()
	for i := range ids {
		fw := m.frameworks[ids[(m.rr+i)%len(ids)]]
		if fw.stream == nil || fw.suppressed || m.hasOfferLocked(fw.id) || fw.filtered(avail, now) {
			continue
		}
		m.rr = (m.rr + i + 1) % len(ids)
		m.seq++
		o := &offer{id: fmt.Sprintf("%s-O%d", m.agentID, m.seq), fw: fw.id, res: avail.Clone()}
		m.offers[o.id] = o
		fw.stream.send(&scheduler.Event{Type: scheduler.Event_OFFERS, Offers: &scheduler.Event_Offers{Offers: []mesos.Offer{{
			ID:          mesos.OfferID{Value: o.id},
			FrameworkID: mesos.FrameworkID{Value: fw.id},
			AgentID:     mesos.AgentID{Value: m.agentID},
			Hostname:    m.opts.Hostname,
			Resources:   o.res.Clone(),
		}}}})
		return
	}
}

func isEmpty(rs mesos.Resources) bool {
	for i := range rs {
		if !rs[i].IsEmpty() {
			return false
		}
	}
	return true
}

func (m *Master) hasOfferLocked(fw string) bool {
	for _, o := range m.offers {
		if o.fw == fw {
			return true
		}
	}
	return false
}

// filtered reports whether a filter of fw covers avail.
func (fw *framework) filtered(avail mesos.Resources, now time.Time) bool {
	fw.filters = slices.DeleteFunc(fw.filters, func(f filter) bool { return !now.Before(f.until) })
	for _, f := range fw.filters {
		if resources.ContainsAll(f.res, avail) {
			return true
		}
	}
	return false
}

func (fw *framework) addFilter(res mesos.Resources, fs *mesos.Filters) {
	d := 5 * time.Second
	if fs != nil && fs.RefuseSeconds != nil {
		d = time.Duration(*fs.RefuseSeconds * float64(time.Second))
	}
	if d > 0 && !isEmpty(res) {
		fw.filters = append(fw.filters, filter{res: res, until: time.Now().Add(d)})
	}
}

// ---- HTTP ----

type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

func (m *Master) record(c Call) {
	m.mu.Lock()
	m.calls = append(m.calls, c)
	m.mu.Unlock()
}

func (m *Master) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == FrameworksPath {
		m.serveFrameworks(w, r)
		return
	}
	if r.URL.Path != Path {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Expecting 'POST', received '"+r.Method+"'", http.StatusMethodNotAllowed)
		return
	}
	call, ct, err := m.decode(r)
	rec := Call{ContentType: ct}
	if call != nil {
		rec.Type, rec.FrameworkID = call.Type.String(), call.GetFrameworkID().GetValue()
	}
	if err == nil {
		err = m.authenticate(r)
	}
	if err == nil && call.Type == scheduler.Call_SUBSCRIBE {
		var accept string
		if accept, err = acceptType(r, ct); err == nil {
			rec.Status = http.StatusOK
			m.record(rec)
			m.subscribe(w, r, call, accept)
			return
		}
	}
	if err == nil {
		err = m.handle(r, call)
	}
	var he *httpError
	switch {
	case err == nil:
		rec.Status = http.StatusAccepted
		w.WriteHeader(http.StatusAccepted)
	case errors.As(err, &he):
		rec.Status = he.code
		if he.code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="mesos"`)
		}
		http.Error(w, he.msg, he.code)
	default:
		rec.Status = http.StatusInternalServerError
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
	m.record(rec)
}

// decode reads the call in the request's content type.
func (m *Master) decode(r *http.Request) (*scheduler.Call, string, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil, ct, fail(http.StatusUnsupportedMediaType, "Expecting 'Content-Type' to be present")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != MediaProtobuf && mt != MediaJSON) {
		return nil, ct, fail(http.StatusUnsupportedMediaType, "Expecting 'Content-Type' of %s or %s", MediaJSON, MediaProtobuf)
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, 16<<20))
	if err != nil {
		return nil, mt, fail(http.StatusBadRequest, "Failed to read the request body: %v", err)
	}
	call := &scheduler.Call{}
	if mt == MediaProtobuf {
		err = call.Unmarshal(body)
	} else {
		err = json.Unmarshal(body, call)
	}
	if err != nil {
		return nil, mt, fail(http.StatusBadRequest, "Failed to parse body into Call protobuf: %v", err)
	}
	if why := validate(call); why != "" {
		return call, mt, fail(http.StatusBadRequest, "Failed to validate scheduler::Call: %s", why)
	}
	return call, mt, nil
}

// acceptType picks the encoding of the event stream from the Accept
// header; no header means the request's content type.
func acceptType(r *http.Request, contentType string) (string, error) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return contentType, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case MediaProtobuf, MediaJSON:
			return mt, nil
		case "*/*", "application/*":
			return contentType, nil
		}
	}
	return "", fail(http.StatusNotAcceptable, "Expecting 'Accept' to allow %s or %s", MediaJSON, MediaProtobuf)
}

func (m *Master) authenticate(r *http.Request) error {
	if m.opts.Principal == "" {
		return nil
	}
	user, pass, ok := r.BasicAuth()
	if !ok || user != m.opts.Principal || pass != m.opts.Secret {
		return fail(http.StatusUnauthorized, "Authentication failed")
	}
	return nil
}

// validate returns why the master's call validation would reject c (""
// when it would not), in the master's words.
func validate(c *scheduler.Call) string {
	need := func(present bool, field string) string {
		if !present {
			return fmt.Sprintf("Expecting '%s' to be present", field)
		}
		return ""
	}
	switch c.Type {
	case scheduler.Call_UNKNOWN:
		return "Expecting 'type' to be present"
	case scheduler.Call_SUBSCRIBE:
		if why := need(c.Subscribe != nil && c.Subscribe.FrameworkInfo != nil, "subscribe"); why != "" {
			return why
		}
		fi := c.Subscribe.FrameworkInfo
		if fi.User == "" || fi.Name == "" {
			return "Expecting 'framework_info.user' and 'framework_info.name' to be present"
		}
		if c.FrameworkID != nil && fi.ID != nil && c.FrameworkID.Value != fi.ID.Value {
			return "'framework_id' differs from 'subscribe.framework_info.id'"
		}
		return ""
	}
	if why := need(c.FrameworkID != nil && c.FrameworkID.Value != "", "framework_id"); why != "" {
		return why
	}
	switch c.Type {
	case scheduler.Call_ACCEPT:
		return need(c.Accept != nil, "accept")
	case scheduler.Call_DECLINE:
		return need(c.Decline != nil, "decline")
	case scheduler.Call_KILL:
		return need(c.Kill != nil, "kill")
	case scheduler.Call_ACKNOWLEDGE:
		if why := need(c.Acknowledge != nil, "acknowledge"); why != "" {
			return why
		}
		if len(c.Acknowledge.UUID) != 16 {
			return "Not a valid UUID"
		}
	case scheduler.Call_RECONCILE:
		return need(c.Reconcile != nil, "reconcile")
	}
	return ""
}

// frameworkFor checks a non-subscribe call's framework and stream.
func (m *Master) frameworkForLocked(r *http.Request, c *scheduler.Call) (*framework, error) {
	id := c.FrameworkID.Value
	if m.removed[id] {
		return nil, fail(http.StatusForbidden, "Framework has been removed")
	}
	fw := m.frameworks[id]
	if fw == nil {
		return nil, fail(http.StatusBadRequest, "Framework cannot be found")
	}
	if fw.stream == nil {
		return nil, fail(http.StatusForbidden, "Framework is not subscribed")
	}
	sid := r.Header.Get("Mesos-Stream-Id")
	if sid == "" {
		return nil, fail(http.StatusBadRequest, "All non-subscribe calls should include the 'Mesos-Stream-Id' header")
	}
	if sid != fw.stream.id {
		return nil, fail(http.StatusBadRequest, "The stream ID '%s' included in this request didn't match the stream ID currently associated with framework ID %s", sid, id)
	}
	return fw, nil
}

// handle runs a non-subscribe call.
func (m *Master) handle(r *http.Request, c *scheduler.Call) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	fw, err := m.frameworkForLocked(r, c)
	if err != nil {
		return err
	}
	switch c.Type {
	case scheduler.Call_TEARDOWN:
		m.removeLocked(fw, "")
	case scheduler.Call_ACCEPT:
		m.acceptLocked(fw, c.Accept)
	case scheduler.Call_DECLINE:
		for _, id := range c.Decline.OfferIDs {
			if o := m.offers[id.Value]; o != nil && o.fw == fw.id {
				delete(m.offers, o.id)
				fw.addFilter(o.res, c.Decline.Filters)
			}
		}
	case scheduler.Call_REVIVE:
		fw.filters, fw.suppressed = nil, false
	case scheduler.Call_SUPPRESS:
		fw.suppressed = true
	case scheduler.Call_KILL:
		t := m.tasks[c.Kill.TaskID.Value]
		if t == nil || t.fw != fw.id || t.terminal() {
			if t == nil || t.fw != fw.id {
				fw.stream.send(m.masterUpdate(c.Kill.TaskID.Value, mesos.TASK_LOST, mesos.REASON_TASK_UNKNOWN, "Attempted to kill an unknown task"))
			}
			break
		}
		grace := m.opts.KillGrace
		if kp := c.Kill.KillPolicy; kp != nil && kp.GracePeriod != nil {
			grace = time.Duration(kp.GracePeriod.Nanoseconds)
		} else if kp := t.info.KillPolicy; kp != nil && kp.GracePeriod != nil {
			grace = time.Duration(kp.GracePeriod.Nanoseconds)
		}
		go t.kill(grace)
	case scheduler.Call_ACKNOWLEDGE:
		t := m.tasks[c.Acknowledge.TaskID.Value]
		if t == nil || t.fw != fw.id || len(t.pending) == 0 || string(t.pending[0].UUID) != string(c.Acknowledge.UUID) {
			return nil // Mesos drops acknowledgements it cannot match
		}
		t.pending = t.pending[1:]
		m.sendHeadLocked(t)
	case scheduler.Call_RECONCILE:
		m.reconcileLocked(fw, c.Reconcile.Tasks)
	case scheduler.Call_MESSAGE, scheduler.Call_REQUEST, scheduler.Call_SHUTDOWN:
		// Accepted and ignored: the command executor has no use for them.
	default:
		return fail(http.StatusBadRequest, "Failed to validate scheduler::Call: unsupported call type %s", c.Type)
	}
	return nil
}

// masterUpdate is a status update generated by the master (no uuid: it is
// not retried and must not be acknowledged).
func (m *Master) masterUpdate(taskID string, state mesos.TaskState, reason mesos.TaskStatus_Reason, msg string) *scheduler.Event {
	return &scheduler.Event{Type: scheduler.Event_UPDATE, Update: &scheduler.Event_Update{Status: mesos.TaskStatus{
		TaskID:    mesos.TaskID{Value: taskID},
		State:     state.Enum(),
		Reason:    reason.Enum(),
		Source:    mesos.SOURCE_MASTER.Enum(),
		Message:   &msg,
		AgentID:   &mesos.AgentID{Value: m.agentID},
		Timestamp: now(),
	}}}
}

func now() *float64 {
	f := float64(time.Now().UnixNano()) / 1e9
	return &f
}

func (m *Master) reconcileLocked(fw *framework, ask []scheduler.Call_Reconcile_Task) {
	if len(ask) == 0 {
		for _, t := range m.sortedTasksLocked(fw.id) {
			if !t.terminal() {
				fw.stream.send(m.masterUpdate(t.id(), t.state, mesos.REASON_RECONCILIATION, "Reconciliation: Latest task state"))
			}
		}
		return
	}
	for _, a := range ask {
		t := m.tasks[a.TaskID.Value]
		if t == nil || t.fw != fw.id {
			fw.stream.send(m.masterUpdate(a.TaskID.Value, mesos.TASK_LOST, mesos.REASON_RECONCILIATION, "Reconciliation: Task is unknown"))
			continue
		}
		fw.stream.send(m.masterUpdate(t.id(), t.state, mesos.REASON_RECONCILIATION, "Reconciliation: Latest task state"))
	}
}

func (m *Master) sortedTasksLocked(fw string) []*task {
	var out []*task
	for _, t := range m.tasks {
		if fw == "" || t.fw == fw {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// ---- subscription ----

func (m *Master) subscribe(w http.ResponseWriter, r *http.Request, c *scheduler.Call, accept string) {
	fi := *c.Subscribe.FrameworkInfo
	flusher, _ := w.(http.Flusher)
	s := newStream(accept)
	w.Header().Set("Content-Type", accept)
	w.Header().Set("Mesos-Stream-Id", s.id)
	w.Header().Set("Cache-Control", "no-cache")

	m.mu.Lock()
	reject := m.admitLocked(&fi)
	if reject != "" {
		m.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		s.send(&scheduler.Event{Type: scheduler.Event_ERROR, Error: &scheduler.Event_Error{Message: reject}})
		s.close()
		s.pump(r.Context(), w, flusher)
		return
	}
	fw, err := m.attachLocked(fi, s, c.Subscribe)
	m.mu.Unlock()
	if err != nil {
		w.WriteHeader(http.StatusOK)
		s.send(&scheduler.Event{Type: scheduler.Event_ERROR, Error: &scheduler.Event_Error{Message: err.Error()}})
		s.close()
		s.pump(r.Context(), w, flusher)
		return
	}
	w.WriteHeader(http.StatusOK)
	s.pump(r.Context(), w, flusher)
	// The connection is gone (the client left, or the master closed the
	// stream).
	m.mu.Lock()
	if fw.stream == s {
		m.disconnectLocked(fw, "")
	}
	m.mu.Unlock()
}

// admitLocked returns why a subscription is refused ("" when it is not).
func (m *Master) admitLocked(fi *mesos.FrameworkInfo) string {
	roles := fi.Roles
	if len(roles) == 0 {
		roles = []string{fi.GetRole()}
	}
	if len(m.opts.Roles) > 0 {
		for _, role := range roles {
			if !slices.Contains(m.opts.Roles, role) {
				return fmt.Sprintf("Role '%s' is not present in the master's --roles", role)
			}
		}
	}
	if m.opts.Principal != "" && fi.GetPrincipal() != m.opts.Principal {
		return fmt.Sprintf("Framework principal '%s' does not match authenticated principal '%s'", fi.GetPrincipal(), m.opts.Principal)
	}
	if id := fi.GetID().GetValue(); id != "" && m.removed[id] {
		return "Framework has been removed"
	}
	return ""
}

// attachLocked registers or re-registers a framework on stream s and
// sends SUBSCRIBED.
func (m *Master) attachLocked(fi mesos.FrameworkInfo, s *stream, sub *scheduler.Call_Subscribe) (*framework, error) {
	id := fi.GetID().GetValue()
	fw := m.frameworks[id]
	switch {
	case id == "":
		m.seq++
		id = fmt.Sprintf("%s-%04d", strings.TrimSuffix(m.agentID, "-S0"), m.seq)
		fi.ID = &mesos.FrameworkID{Value: id}
		fw = &framework{id: id, registered: time.Now()}
		m.frameworks[id] = fw
		if m.lostSubscribed > 0 {
			// The connection breaks after the master registered the
			// framework and before SUBSCRIBED went out: the scheduler
			// never learns its id, and the master keeps the framework,
			// disconnected, for its failover timeout.
			m.lostSubscribed--
			fw.info, fw.stream = fi, s
			m.disconnectLocked(fw, "")
			return fw, nil
		}
	case fw == nil:
		// A framework id this master does not know: a scheduler that
		// subscribes to a newly elected master. Its tasks are kept.
		fw = &framework{id: id, registered: time.Now()}
		m.frameworks[id] = fw
	case fw.stream != nil:
		m.disconnectLocked(fw, "Framework failed over")
	}
	if fw.failover != nil {
		fw.failover.Stop()
		fw.failover = nil
	}
	fw.info = fi
	fw.stream = s
	fw.subscriptions++
	fw.suppressed = len(sub.SuppressedRoles) > 0
	hb := m.opts.HeartbeatInterval.Seconds()
	s.send(&scheduler.Event{Type: scheduler.Event_SUBSCRIBED, Subscribed: &scheduler.Event_Subscribed{
		FrameworkID:              &mesos.FrameworkID{Value: id},
		HeartbeatIntervalSeconds: &hb,
		MasterInfo:               &mesos.MasterInfo{ID: strings.TrimSuffix(m.agentID, "-S0"), IP: 0x0100007f, Port: ptr(uint32(5050)), Hostname: &m.opts.Hostname},
	}})
	for _, t := range m.sortedTasksLocked(id) {
		m.sendHeadLocked(t)
	}
	return fw, nil
}

// disconnectLocked closes fw's stream (after an ERROR event when msg is
// set) and starts its failover timeout.
func (m *Master) disconnectLocked(fw *framework, msg string) {
	if fw.stream == nil {
		return
	}
	if msg != "" {
		fw.stream.send(&scheduler.Event{Type: scheduler.Event_ERROR, Error: &scheduler.Event_Error{Message: msg}})
	}
	fw.stream.close()
	fw.stream = nil
	for id, o := range m.offers {
		if o.fw == fw.id {
			delete(m.offers, id)
		}
	}
	if m.closed {
		return
	}
	timeout := time.Duration(fw.info.GetFailoverTimeout() * float64(time.Second))
	fw.failover = time.AfterFunc(timeout, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if fw.stream == nil && m.frameworks[fw.id] == fw {
			m.log.Info("failover timeout passed; removing the framework", zap.String("framework", fw.id))
			m.removeLocked(fw, "")
		}
	})
}

// removeLocked removes a framework for good and kills its tasks.
func (m *Master) removeLocked(fw *framework, msg string) {
	m.disconnectLocked(fw, msg)
	if fw.failover != nil {
		fw.failover.Stop()
	}
	delete(m.frameworks, fw.id)
	m.removed[fw.id] = true
	for _, t := range m.tasks {
		if t.fw == fw.id && !t.terminal() {
			go t.kill(m.opts.KillGrace)
		}
	}
}

// ---- streams ----

// stream is one subscription's event stream.
type stream struct {
	id    string
	codec string
	mu    sync.Mutex
	queue [][]byte
	wake  chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newStream(codec string) *stream {
	return &stream{id: uuid4(), codec: codec, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// send queues an event; it never blocks.
func (s *stream) send(ev *scheduler.Event) {
	var b []byte
	var err error
	if s.codec == MediaProtobuf {
		b, err = ev.Marshal()
	} else {
		b, err = json.Marshal(ev)
	}
	if err != nil {
		panic(fmt.Sprintf("mesostest: encode %s event: %v", ev.Type, err))
	}
	s.mu.Lock()
	s.queue = append(s.queue, b)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// close ends the stream once the queued events are written.
func (s *stream) close() { s.once.Do(func() { close(s.done) }) }

// pump writes queued events as RecordIO records until the stream is closed
// and drained, or the client goes away.
func (s *stream) pump(ctx context.Context, w io.Writer, f http.Flusher) {
	rw := recordio.NewWriter(w)
	for {
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, b := range q {
			if err := rw.WriteFrame(b); err != nil {
				s.close()
				return
			}
		}
		if f != nil && len(q) > 0 {
			f.Flush()
		}
		select {
		case <-ctx.Done():
			s.close()
			return
		case <-s.wake:
		case <-s.done:
			s.mu.Lock()
			empty := len(s.queue) == 0
			s.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

func uuid4() string {
	b := uuidBytes()
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func uuidBytes() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return b
}

func newID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ---- observation and faults ----

// TaskView is the master's view of one task.
type TaskView struct {
	ID          string
	Name        string
	FrameworkID string
	State       mesos.TaskState
	PID         int
	Sandbox     string
	Labels      map[string]string
	Resources   mesos.Resources
	Info        mesos.TaskInfo
}

// Tasks returns the tasks of the frameworks named name ("" for all), in
// launch order.
func (m *Master) Tasks(name string) []TaskView {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []TaskView
	for _, t := range m.sortedTasksLocked("") {
		if name != "" && t.fwName != name {
			continue
		}
		v := TaskView{ID: t.id(), Name: t.info.Name, FrameworkID: t.fw, State: t.state, PID: t.pid, Sandbox: t.sandbox,
			Labels: map[string]string{}, Resources: t.info.Resources, Info: t.info}
		for _, l := range t.info.GetLabels().GetLabels() {
			v.Labels[l.Key] = l.GetValue()
		}
		out = append(out, v)
	}
	return out
}

// FrameworkView is the master's view of one framework.
type FrameworkView struct {
	ID            string
	Info          mesos.FrameworkInfo
	Connected     bool
	Subscriptions int
}

// Frameworks returns the registered frameworks named name ("" for all).
func (m *Master) Frameworks(name string) []FrameworkView {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []FrameworkView
	for _, fw := range m.frameworks {
		if name == "" || fw.info.Name == name {
			out = append(out, FrameworkView{ID: fw.id, Info: fw.info, Connected: fw.stream != nil, Subscriptions: fw.subscriptions})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Removed reports whether the framework id was removed (torn down, or its
// failover timeout passed).
func (m *Master) Removed(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removed[id]
}

// Calls returns the calls received so far.
func (m *Master) Calls() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// DropSubscription closes the subscription stream of every framework named
// name, as a network failure would; it reports how many it closed.
func (m *Master) DropSubscription(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, fw := range m.frameworks {
		if fw.info.Name == name && fw.stream != nil {
			m.disconnectLocked(fw, "")
			n++
		}
	}
	return n
}

// LoseNextSubscribed makes the connection of the next subscription that
// registers a new framework break after the master registered it and
// before its SUBSCRIBED event left: the framework exists, disconnected, until
// its failover timeout, and its scheduler never learnt its id.
func (m *Master) LoseNextSubscribed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lostSubscribed++
}

// Rescind rescinds the outstanding offers of the frameworks named name and
// reports how many.
func (m *Master) Rescind(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, o := range m.offers {
		fw := m.frameworks[o.fw]
		if fw == nil || fw.info.Name != name {
			continue
		}
		delete(m.offers, id)
		if fw.stream != nil {
			fw.stream.send(&scheduler.Event{Type: scheduler.Event_RESCIND, Rescind: &scheduler.Event_Rescind{OfferID: mesos.OfferID{Value: id}}})
		}
		n++
	}
	return n
}

// KillTask kills a task's process with SIGKILL, as a crash would; the task
// fails. It reports whether the task was running.
func (m *Master) KillTask(taskID string) bool {
	m.mu.Lock()
	t := m.tasks[taskID]
	m.mu.Unlock()
	if t == nil {
		return false
	}
	return t.crash()
}

// Failover simulates the election of a new leading master: every
// subscription stream is closed and every framework registration
// forgotten; tasks keep running, and frameworks must subscribe again with
// their ids and reconcile.
func (m *Master) Failover() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, fw := range m.frameworks {
		if fw.stream != nil {
			fw.stream.close()
			fw.stream = nil
		}
		if fw.failover != nil {
			fw.failover.Stop()
		}
		delete(m.frameworks, id)
	}
	clear(m.offers)
}

// SandboxEnv is what a task's process sees as its environment (the
// agent's plus these).
func sandboxEnv(t *task, agentID string) []string {
	env := append(os.Environ(),
		"MESOS_SANDBOX="+t.sandbox,
		"MESOS_DIRECTORY="+t.sandbox,
		"MESOS_FRAMEWORK_ID="+t.fw,
		"MESOS_EXECUTOR_ID="+t.id(),
		"MESOS_TASK_ID="+t.id(),
		"MESOS_AGENT_ID="+agentID,
	)
	for _, v := range t.info.GetCommand().GetEnvironment().GetVariables() {
		env = append(env, v.Name+"="+v.GetValue())
	}
	return env
}

func ptr[T any](v T) *T { return &v }
