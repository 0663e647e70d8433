package mesos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/encoding/codecs"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/apierrors"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/httpsched"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/httpguard"
	"github.com/egret-stream/egret/internal/procinfo"
)

// ServeConfig configures the framework service of one topology.
type ServeConfig struct {
	// WorkDir is the topology's working directory holding job.json and
	// cluster.json (written by Launch).
	WorkDir string
	// Ready, when set, is called with the control endpoint's URL once the
	// service serves.
	Ready func(topology, url string)
}

// Serve runs the Mesos framework of the topology in cfg.WorkDir until ctx
// ends (the tasks keep running: a later framework fails over to them) or
// the topology is killed through the control endpoint (every task killed,
// the framework torn down). A fatal error (the master refused or removed
// the framework) is also written to framework.error in the working
// directory.
func Serve(ctx context.Context, cfg ServeConfig, log *zap.Logger) (err error) {
	if log == nil {
		log = zap.NewNop()
	}
	dir := cfg.WorkDir
	defer func() {
		if err != nil {
			_ = os.WriteFile(filepath.Join(dir, errorFile), []byte(err.Error()+"\n"), 0o644)
		}
	}()
	var job spi.Job
	if err := readJSON(filepath.Join(dir, jobFile), &job); err != nil {
		return fmt.Errorf("mesos framework: read the job: %w", err)
	}
	var c spi.Config
	if err := readJSON(filepath.Join(dir, configFile), &c); err != nil {
		return fmt.Errorf("mesos framework: read the config: %w", err)
	}
	s, err := parseSettings(c)
	if err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(dir, errorFile))
	f := newFramework(s, job, dir, log.Named("mesos").With(zap.String("topology", job.Topology)))
	if err := f.load(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("mesos framework: listen: %w", err)
	}
	srv := &http.Server{Handler: f.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(httpguard.Listener(ln, log)) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
	}()
	ep := endpoint{URL: "http://" + ln.Addr().String(), PID: os.Getpid()}
	ep.Start, _ = procinfo.Start(ep.PID)
	if err := writeJSON(filepath.Join(dir, endpointFile), ep, 0o644); err != nil {
		return fmt.Errorf("mesos framework: publish the endpoint: %w", err)
	}
	defer os.Remove(filepath.Join(dir, endpointFile))
	f.log.Info("mesos framework serving", zap.String("url", ep.URL), zap.String("master", s.master), zap.String("framework_id", f.id))
	if cfg.Ready != nil {
		cfg.Ready(job.Topology, ep.URL)
	}
	if err := f.run(ctx); err != nil {
		// Written before the deferred calls remove the endpoint: the CLI
		// reads the error once it sees the endpoint gone.
		_ = os.WriteFile(filepath.Join(dir, errorFile), []byte(err.Error()+"\n"), 0o644)
		return err
	}
	return nil
}

// container is the framework's view of one container.
type container struct {
	id        int
	res       plan.Resources
	task      string // current task; "" while none is launched
	agent     string
	host      string
	ports     map[string]int
	state     string // the task's last state (TASK_RUNNING, ...), or "PENDING"
	message   string
	since     time.Time // when state was entered
	notBefore time.Time // no launch before (relaunch backoff)
	running   time.Time // when the current task reached TASK_RUNNING
	revived   bool      // a REVIVE was sent since it became pending

	failures      int // unasked ends in a row
	failedStarts  int // ends before ever running, in a row
	restarts      int
	restart       bool // a kill for a restart is under way: relaunch at once
	remove        bool // a kill for good is under way
	shortfall     string
	problem       string
	pendingReason string
}

const statePending = "PENDING"

// stableRun is how long a task must run for its container to count as
// started: a container whose tasks end sooner three times in a row has a
// problem (submit and update fail).
const stableRun = 10 * time.Second

// event is one item of a subscription stream.
type event struct {
	session int
	ev      *scheduler.Event
	err     error
}

// subscription is the outcome of a SUBSCRIBE call.
type subscription struct {
	session int
	resp    mesos.Response
	err     error
}

type framework struct {
	s      *settings
	log    *zap.Logger
	dir    string
	job    spi.Job
	caller calls.Caller
	host   string

	id          string
	attempt     int
	ctrs        map[int]*container
	started     time.Time
	session     int
	subscribing bool
	connected   bool
	subscribed  bool // ever
	cancel      context.CancelFunc
	retryAt     time.Time
	retryDelay  time.Duration
	heartbeat   time.Duration
	lastEvent   time.Time
	lastErr     error
	reconciling map[string]bool
	reconciled  time.Time
	killing     *killOp
	fatal       error
	done        bool

	ctrl   chan func()
	events chan event
	subs   chan subscription
	quit   chan struct{} // closed when run returns
}

// killOp is a kill under way.
type killOp struct {
	deadline time.Time
	replies  []chan error
}

func newFramework(s *settings, job spi.Job, dir string, log *zap.Logger) *framework {
	host, _ := os.Hostname()
	cli := httpcli.New(
		httpcli.Endpoint(s.master+"/api/v1/scheduler"),
		httpcli.Codec(codecs.ByMediaType[codecs.MediaTypeProtobuf]),
		httpcli.Do(httpcli.With(httpcli.Timeout(10*time.Second), basicAuth(s))),
	)
	f := &framework{
		s: s, log: log, dir: dir, job: job, host: host,
		caller:      httpsched.NewCaller(cli, httpsched.MaxRedirects(3)),
		ctrs:        map[int]*container{},
		reconciling: map[string]bool{},
		started:     time.Now(),
		retryDelay:  500 * time.Millisecond,
		ctrl:        make(chan func()),
		events:      make(chan event, 64),
		subs:        make(chan subscription, 1),
		quit:        make(chan struct{}),
	}
	for id, r := range s.wanted(job) {
		f.ctrs[id] = &container{id: id, res: r, state: statePending, since: f.started}
	}
	return f
}

func basicAuth(s *settings) httpcli.ConfigOpt {
	if s.principal == "" || s.secret == "" {
		return nil
	}
	return httpcli.BasicAuth(s.principal, s.secret)
}

// load reads the framework id and the tasks of an earlier run.
func (f *framework) load() error {
	var fs frameworkState
	switch err := readJSON(filepath.Join(f.dir, frameworkFile), &fs); {
	case err == nil:
		f.id = fs.FrameworkID
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("mesos framework: %w", err)
	}
	var ts tasksState
	switch err := readJSON(filepath.Join(f.dir, tasksFile), &ts); {
	case err == nil:
		f.attempt = ts.Attempt
		for id, t := range ts.Tasks {
			if c := f.ctrs[id]; c != nil && t != nil && t.Task != "" {
				c.task, c.agent, c.state = t.Task, t.Agent, "UNKNOWN"
				f.reconciling[t.Task] = true
			}
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("mesos framework: %w", err)
	}
	return nil
}

func (f *framework) saveTasks() {
	ts := tasksState{Attempt: f.attempt, Tasks: map[int]*taskState{}}
	for id, c := range f.ctrs {
		if c.task != "" {
			ts.Tasks[id] = &taskState{Task: c.task, Agent: c.agent}
		}
	}
	if err := writeJSON(filepath.Join(f.dir, tasksFile), ts, 0o644); err != nil {
		f.log.Error("could not save the task map; a restarted framework may not find every task", zap.Error(err))
	}
}

// run is the framework's loop: it alone touches the framework's state.
func (f *framework) run(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	defer func() {
		close(f.quit)
		if f.cancel != nil {
			f.cancel()
		}
	}()
	f.subscribeOwn(ctx)
	for !f.done && f.fatal == nil {
		select {
		case <-ctx.Done():
			f.log.Info("framework stopping; its tasks keep running until a new framework fails over to them")
			return nil
		case fn := <-f.ctrl:
			fn()
		case sub := <-f.subs:
			f.onSubscription(sub)
		case ev := <-f.events:
			if ev.session != f.session {
				continue
			}
			if ev.err != nil {
				f.disconnected(ev.err)
				continue
			}
			f.lastEvent = time.Now()
			f.onEvent(ev.ev)
		case now := <-tick.C:
			f.tick(ctx, now)
		}
	}
	return f.fatal
}

// subscribe sends SUBSCRIBE in the background.
func (f *framework) subscribe(ctx context.Context) {
	f.session++
	f.subscribing = true
	session := f.session
	info := f.frameworkInfo()
	call := calls.Subscribe(info)
	if f.id != "" {
		call = call.With(calls.SubscribeTo(f.id))
	}
	sctx, cancel := context.WithCancel(ctx)
	if f.cancel != nil {
		f.cancel()
	}
	f.cancel = cancel
	go func() {
		resp, err := f.caller.Call(sctx, call)
		select {
		case f.subs <- subscription{session: session, resp: resp, err: err}:
		case <-f.quit:
			if resp != nil {
				resp.Close()
			}
		}
	}()
}

// frameworkInfo is the FrameworkInfo the framework subscribes with.
func (f *framework) frameworkInfo() *mesos.FrameworkInfo {
	info := &mesos.FrameworkInfo{
		User:            f.s.user,
		Name:            FrameworkName(f.job.Topology),
		Role:            ptr(f.s.role),
		Checkpoint:      ptr(f.s.checkpoint),
		FailoverTimeout: ptr(f.s.failover.Seconds()),
		Labels: &mesos.Labels{Labels: []mesos.Label{
			{Key: LabelTopology, Value: ptr(f.job.Topology)},
			{Key: LabelTopologyID, Value: ptr(f.job.TopologyID)},
		}},
	}
	if f.host != "" {
		info.Hostname = ptr(f.host)
	}
	if f.s.principal != "" {
		info.Principal = ptr(f.s.principal)
	}
	if f.id != "" {
		info.ID = &mesos.FrameworkID{Value: f.id}
	}
	return info
}

func (f *framework) onSubscription(sub subscription) {
	if sub.session != f.session {
		if sub.resp != nil {
			sub.resp.Close()
		}
		return
	}
	f.subscribing = false
	if sub.err != nil {
		f.subscribeFailed(sub.err)
		return
	}
	f.lastEvent = time.Now()
	f.heartbeat = 0
	go func(session int, resp mesos.Response) {
		defer resp.Close()
		for {
			var ev scheduler.Event
			err := resp.Decode(&ev)
			e := event{session: session, ev: &ev, err: err}
			select {
			case f.events <- e:
			case <-f.quit:
				return
			}
			if err != nil {
				return
			}
		}
	}(sub.session, sub.resp)
}

// subscribeFailed handles a SUBSCRIBE call that got no stream.
func (f *framework) subscribeFailed(err error) {
	f.lastErr = err
	switch {
	case apierrors.CodeNotAuthenticated.Matches(err):
		f.fatal = f.unauthorized()
		return
	case apierrors.CodeUnsubscribed.Matches(err), apierrors.CodeMalformedRequest.Matches(err):
		f.fatal = fmt.Errorf("the Mesos master at %s refused the subscription: %v", f.s.master, err)
		return
	}
	f.log.Warn("could not subscribe to the Mesos master; retrying", zap.String("master", f.s.master), zap.Error(err), zap.Duration("after", f.retryDelay))
	f.scheduleRetry()
}

func (f *framework) unauthorized() error {
	return fmt.Errorf("the Mesos master at %s refused the credentials of principal %q (401 Unauthorized): check %s and %s", f.s.master, f.s.principal, KeyPrincipal, KeySecret)
}

func (f *framework) scheduleRetry() {
	f.retryAt = time.Now().Add(f.retryDelay)
	f.retryDelay = min(2*f.retryDelay, 15*time.Second)
}

// disconnected handles the end of the subscription stream.
func (f *framework) disconnected(err error) {
	if f.cancel != nil {
		f.cancel()
	}
	f.session++ // ignore the rest of the old stream
	f.connected = false
	f.lastErr = err
	f.log.Warn("the subscription to the Mesos master ended; subscribing again", zap.Error(err), zap.Duration("after", f.retryDelay))
	f.scheduleRetry()
}

func (f *framework) tick(ctx context.Context, now time.Time) {
	if !f.connected && !f.subscribing && !now.Before(f.retryAt) {
		if !f.subscribed && now.Sub(f.started) > f.s.subscribeTimeout {
			f.fatal = fmt.Errorf("could not subscribe to the Mesos master at %s within %s (%s): %v", f.s.master, f.s.subscribeTimeout, KeySubscribeTimeout, f.lastErr)
			return
		}
		f.subscribeOwn(ctx)
		return
	}
	if !f.connected {
		if f.killing != nil && now.After(f.killing.deadline) {
			f.finishKill(fmt.Errorf("could not reach the Mesos master at %s to tear down framework %s: %v", f.s.master, f.id, f.lastErr))
		}
		return
	}
	if f.heartbeat > 0 && now.Sub(f.lastEvent) > 5*f.heartbeat+time.Second {
		f.disconnected(fmt.Errorf("no event from the master for %s (heartbeats every %s)", now.Sub(f.lastEvent).Round(time.Second), f.heartbeat))
		return
	}
	if len(f.reconciling) > 0 && now.Sub(f.reconciled) > 10*time.Second {
		f.reconcile()
	}
	if f.killing != nil {
		if len(f.ctrs) == 0 || now.After(f.killing.deadline) {
			f.teardown()
		}
		return
	}
	revive := false
	for _, c := range f.ctrs {
		if c.task != "" && !c.running.IsZero() && now.Sub(c.running) > stableRun && c.failedStarts > 0 {
			c.failedStarts, c.problem = 0, ""
		}
		if f.ready(c, now) && !c.revived {
			c.revived, revive = true, true
		}
		if c.task == "" && !c.remove && c.problem == "" && c.shortfall != "" && now.Sub(c.since) > f.s.offerTimeout {
			c.problem = fmt.Sprintf("container %d: no offer was big enough for %s within %s (%s): %s", c.id, f.s.need(c.id, c.res), f.s.offerTimeout, KeyOfferTimeout, c.shortfall)
			f.log.Error("container cannot be placed", zap.String("problem", c.problem))
		}
	}
	if revive {
		f.call(calls.Revive())
	}
}

// ready reports whether c waits for an offer.
func (f *framework) ready(c *container, now time.Time) bool {
	return c.task == "" && !c.remove && !now.Before(c.notBefore)
}

// call sends a call other than SUBSCRIBE; failures are logged (a lost
// subscription shows on the stream).
func (f *framework) call(c *scheduler.Call) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := f.caller.Call(ctx, c.With(calls.Framework(f.id)))
	if resp != nil {
		resp.Close()
	}
	if err != nil {
		f.log.Warn("call failed", zap.Stringer("call", c.Type), zap.Error(err))
		return false
	}
	return true
}

func (f *framework) onEvent(ev *scheduler.Event) {
	switch ev.Type {
	case scheduler.Event_SUBSCRIBED:
		f.onSubscribed(ev.Subscribed)
	case scheduler.Event_OFFERS:
		f.onOffers(ev.GetOffers().GetOffers())
	case scheduler.Event_UPDATE:
		f.onUpdate(ev.GetUpdate().GetStatus())
	case scheduler.Event_RESCIND:
		f.log.Debug("offer rescinded", zap.String("offer", ev.GetRescind().GetOfferID().Value))
	case scheduler.Event_FAILURE:
		f.log.Warn("agent or executor failure", zap.String("agent", ev.GetFailure().GetAgentID().GetValue()), zap.String("executor", ev.GetFailure().GetExecutorID().GetValue()))
	case scheduler.Event_ERROR:
		f.onError(ev.GetError().GetMessage())
	case scheduler.Event_HEARTBEAT:
	}
}

func (f *framework) onError(msg string) {
	switch {
	case strings.Contains(msg, "has been removed"):
		f.fatal = fmt.Errorf("the Mesos master removed framework %s (torn down, or its failover timeout %s passed) and with it the topology's tasks: kill the topology and submit it again", f.id, f.s.failover)
	case strings.HasPrefix(msg, "Role "):
		f.fatal = fmt.Errorf("the Mesos master refused role %q: %s (set %s to a role the master knows)", f.s.role, msg, KeyRole)
	case strings.Contains(msg, "failed over"):
		f.fatal = fmt.Errorf("another scheduler subscribed as framework %s: this one stops", f.id)
	default:
		f.fatal = fmt.Errorf("the Mesos master sent an error: %s", msg)
	}
	if f.killing != nil && strings.Contains(msg, "has been removed") {
		// Nothing is left to kill.
		f.fatal = nil
		f.finishKill(nil)
	}
}

// setID records the framework id, in memory and in framework.json.
func (f *framework) setID(id string) {
	f.id = id
	if err := writeJSON(filepath.Join(f.dir, frameworkFile), frameworkState{FrameworkID: id, Master: f.s.master}, 0o644); err != nil {
		f.log.Error("could not save the framework id; a restarted framework cannot fail over", zap.Error(err))
	}
}

func (f *framework) onSubscribed(sub *scheduler.Event_Subscribed) {
	id := sub.GetFrameworkID().GetValue()
	if id != f.id {
		f.setID(id)
	}
	f.connected, f.subscribed = true, true
	f.retryDelay = 500 * time.Millisecond
	f.heartbeat = time.Duration(sub.GetHeartbeatIntervalSeconds() * float64(time.Second))
	f.log.Info("subscribed", zap.String("framework_id", id), zap.Duration("heartbeat", f.heartbeat))
	for _, c := range f.ctrs {
		if c.task != "" {
			f.reconciling[c.task] = true
		}
		c.revived = false
	}
	f.reconcile()
	if f.killing != nil {
		for _, c := range f.ctrs {
			if c.task != "" {
				f.call(calls.Kill(c.task, c.agent))
			}
		}
	}
}

// reconcile asks the master for the state of every task being
// reconciled.
func (f *framework) reconcile() {
	f.reconciled = time.Now()
	if len(f.reconciling) == 0 {
		return
	}
	tasks := map[string]string{}
	for id := range f.reconciling {
		agent := ""
		for _, c := range f.ctrs {
			if c.task == id {
				agent = c.agent
			}
		}
		tasks[id] = agent
	}
	f.call(calls.Reconcile(calls.ReconcileTasks(tasks)))
}

// onOffers launches the containers that wait for an offer and declines
// the rest.
func (f *framework) onOffers(offers []mesos.Offer) {
	now := time.Now()
	var ready []*container
	if f.killing == nil && len(f.reconciling) == 0 {
		for _, id := range sortedIDs(f.ctrs) {
			if c := f.ctrs[id]; f.ready(c, now) {
				ready = append(ready, c)
			}
		}
	}
	for _, o := range offers {
		avail := mesos.Resources(o.Resources).Clone()
		var launch []mesos.TaskInfo
		for _, c := range ready {
			if c.task != "" {
				continue
			}
			n := f.s.need(c.id, c.res)
			res, ports, short := take(avail, f.s.role, n)
			if short != nil {
				c.shortfall = fmt.Sprintf("offer %s on %s: %s", o.ID.Value, o.Hostname, strings.Join(short, "; "))
				continue
			}
			avail.Subtract(res...)
			f.attempt++
			ti := f.s.buildTask(taskSpec{job: f.job, container: c.id, taskID: TaskID(f.job.TopologyID, c.id, f.attempt),
				agentID: o.AgentID.Value, hostname: o.Hostname, resources: res, ports: ports})
			c.task, c.agent, c.host, c.ports = ti.TaskID.Value, o.AgentID.Value, o.Hostname, portsOf(ti)
			c.state, c.since, c.shortfall, c.problem, c.message = "TASK_STAGING", now, "", "", ""
			launch = append(launch, ti)
		}
		refuse := calls.RefuseSeconds(f.s.refuse)
		if len(launch) == 0 {
			f.call(calls.Decline(o.ID).With(refuse))
			continue
		}
		// Record the tasks before launching them: a framework restarted
		// after this point reconciles them.
		f.saveTasks()
		ok := f.call(calls.Accept(calls.OfferOperations{calls.OpLaunch(launch...)}.WithOffers(o.ID)).With(refuse))
		for _, ti := range launch {
			f.log.Info("launching", zap.String("task", ti.TaskID.Value), zap.String("host", o.Hostname), zap.Stringer("resources", mesos.Resources(ti.Resources)))
			if !ok {
				// Whether the master got it is unknown: ask.
				f.reconciling[ti.TaskID.Value] = true
			}
		}
	}
}

// onUpdate follows a task's status and acknowledges it.
func (f *framework) onUpdate(st mesos.TaskStatus) {
	id := st.TaskID.Value
	state := st.GetState()
	delete(f.reconciling, id)
	var c *container
	for _, x := range f.ctrs {
		if x.task == id {
			c = x
		}
	}
	switch {
	case c == nil:
		// A task of an earlier attempt, or of a container gone from the
		// plan: it must not run.
		if !terminal(state) {
			f.log.Warn("killing a task the framework does not run", zap.String("task", id), zap.Stringer("state", state))
			agent := st.GetAgentID().GetValue()
			f.call(calls.Kill(id, agent))
		}
	default:
		f.follow(c, st)
	}
	if len(st.UUID) > 0 {
		f.call(calls.Acknowledge(st.GetAgentID().GetValue(), id, st.UUID))
	}
}

// follow applies a status update of c's current task.
func (f *framework) follow(c *container, st mesos.TaskStatus) {
	now := time.Now()
	state := st.GetState()
	msg := st.GetMessage()
	if st.Reason != nil && st.GetReason() != mesos.REASON_RECONCILIATION {
		msg = strings.TrimSpace(st.GetReason().String() + ": " + msg)
	}
	if state.String() != c.state {
		c.since = now
	}
	c.state, c.message = state.String(), msg
	if st.AgentID != nil {
		c.agent = st.GetAgentID().Value
	}
	if state == mesos.TASK_RUNNING {
		if c.running.IsZero() {
			c.running = now
		}
		return
	}
	if !terminal(state) {
		return
	}
	ran := c.running
	f.log.Info("task ended", zap.Int("container", c.id), zap.String("task", c.task), zap.Stringer("state", state), zap.String("message", msg))
	c.task, c.running, c.revived, c.pendingReason = "", time.Time{}, false, state.String()
	switch {
	case c.remove:
		delete(f.ctrs, c.id)
	case c.restart:
		c.restart, c.notBefore = false, now
		c.restarts++
	case state == mesos.TASK_LOST && st.GetReason() == mesos.REASON_RECONCILIATION:
		// The master does not know the task (it was never launched, or is
		// long gone): launch it again at once.
		c.notBefore = now
	default:
		if !ran.IsZero() && now.Sub(ran) > 4*f.s.backoffMax {
			c.failures = 0
		}
		c.failures++
		if ran.IsZero() || now.Sub(ran) < stableRun {
			c.failedStarts++
			if c.failedStarts >= 3 {
				c.problem = fmt.Sprintf("container %d: its task failed %d times in a row within %s of starting; last: %s %s", c.id, c.failedStarts, stableRun, state, msg)
			}
		} else {
			c.failedStarts = 0
		}
		c.restarts++
		c.notBefore = now.Add(f.s.backoff(c.failures))
		f.log.Warn("relaunching a container whose task ended", zap.Int("container", c.id), zap.Duration("after", f.s.backoff(c.failures)))
	}
	f.saveTasks()
}

func terminal(s mesos.TaskState) bool {
	switch s {
	case mesos.TASK_FINISHED, mesos.TASK_FAILED, mesos.TASK_KILLED, mesos.TASK_LOST, mesos.TASK_ERROR,
		mesos.TASK_DROPPED, mesos.TASK_GONE, mesos.TASK_GONE_BY_OPERATOR, mesos.TASK_UNKNOWN:
		return true
	}
	return false
}

// ---- operations (run on the loop) ----

// kill kills every task and, once they ended, tears the framework down.
func (f *framework) kill(reply chan error) {
	if f.killing == nil {
		f.killing = &killOp{deadline: time.Now().Add(f.s.stopGrace + 30*time.Second)}
		for _, id := range sortedIDs(f.ctrs) {
			c := f.ctrs[id]
			c.remove = true
			if c.task == "" {
				delete(f.ctrs, id)
			} else if f.connected {
				f.call(calls.Kill(c.task, c.agent))
			}
		}
	}
	f.killing.replies = append(f.killing.replies, reply)
	if f.connected && len(f.ctrs) == 0 {
		f.teardown()
	}
}

func (f *framework) teardown() {
	if len(f.ctrs) > 0 {
		f.log.Warn("tearing down with tasks that did not end in time", zap.Int("tasks", len(f.ctrs)))
	}
	if !f.call(&scheduler.Call{Type: scheduler.Call_TEARDOWN}) {
		f.finishKill(fmt.Errorf("could not tear down framework %s at the Mesos master %s: %v", f.id, f.s.master, f.lastErr))
		return
	}
	f.log.Info("framework torn down", zap.String("framework_id", f.id))
	_ = os.Remove(filepath.Join(f.dir, frameworkFile))
	_ = os.Remove(filepath.Join(f.dir, tasksFile))
	f.finishKill(nil)
}

func (f *framework) finishKill(err error) {
	for _, r := range f.killing.replies {
		r <- err
	}
	f.killing.replies = nil
	f.done = true
}

// notSubscribedError: the framework cannot act on its tasks until it has
// subscribed again.
type notSubscribedError struct {
	master string
	last   error
}

func (e *notSubscribedError) Error() string {
	return fmt.Sprintf("the framework is not subscribed to the Mesos master at %s (%v); try again", e.master, e.last)
}

// restart kills the task of one container (all with spi.AllContainers);
// each is relaunched at once.
func (f *framework) restart(which int) error {
	var targets []*container
	if which == spi.AllContainers {
		for _, id := range sortedIDs(f.ctrs) {
			targets = append(targets, f.ctrs[id])
		}
	} else {
		c := f.ctrs[which]
		if c == nil || c.remove {
			return fmt.Errorf("topology %q has no container %d (containers %v): %w", f.job.Topology, which, sortedIDs(f.ctrs), spi.ErrNotFound)
		}
		targets = append(targets, c)
	}
	if !f.connected {
		return &notSubscribedError{master: f.s.master, last: f.lastErr}
	}
	for _, c := range targets {
		if c.task == "" {
			continue // not launched yet: it starts anew anyway
		}
		c.restart = true
		if !f.call(calls.Kill(c.task, c.agent)) {
			// The master did not take the kill (it is failing over):
			// nothing restarts, and the caller tries again.
			c.restart = false
			return &notSubscribedError{master: f.s.master, last: fmt.Errorf("the kill of container %d's task %s failed", c.id, c.task)}
		}
	}
	return nil
}

// update adopts a new job: new containers are launched, containers gone
// from the plan killed, containers whose resources changed relaunched;
// the others keep running.
func (f *framework) update(job spi.Job) error {
	if job.Topology != f.job.Topology {
		return fmt.Errorf("the job is for topology %q, this framework runs %q", job.Topology, f.job.Topology)
	}
	if err := checkJob(job); err != nil {
		return err
	}
	// The running package stays: the new plan's containers run it too.
	job.PackageURI, job.PackageSHA256, job.TopologyID = f.job.PackageURI, f.job.PackageSHA256, f.job.TopologyID
	if err := writeJSON(filepath.Join(f.dir, jobFile), job, 0o644); err != nil {
		return fmt.Errorf("save the job: %w", err)
	}
	f.job = job
	now := time.Now()
	want := f.s.wanted(job)
	for id, c := range f.ctrs {
		r, keep := want[id]
		switch {
		case !keep:
			c.remove = true
			if c.task == "" {
				delete(f.ctrs, id)
			} else {
				f.call(calls.Kill(c.task, c.agent))
			}
		case r != c.res:
			c.res = r
			if c.task != "" {
				c.restart = true
				f.call(calls.Kill(c.task, c.agent))
			}
		}
	}
	for id, r := range want {
		if _, ok := f.ctrs[id]; !ok {
			f.ctrs[id] = &container{id: id, res: r, state: statePending, since: now}
		}
	}
	return nil
}

// ContainerStatus is the framework's view of one container (GET /status).
type ContainerStatus struct {
	Container int            `json:"container"`
	Task      string         `json:"task,omitempty"`
	State     string         `json:"state"`
	Since     time.Time      `json:"since"`
	Agent     string         `json:"agent,omitempty"`
	Host      string         `json:"host,omitempty"`
	Ports     map[string]int `json:"ports,omitempty"`
	Restarts  int            `json:"restarts"`
	Message   string         `json:"message,omitempty"`
	// Waiting says why a container without a task has none (the last
	// offer that was too small, or the relaunch backoff).
	Waiting string `json:"waiting,omitempty"`
	// Problem is set when the container cannot run: no offer was big
	// enough within egret.mesos.offer.timeout, or its task failed again
	// and again before running.
	Problem string `json:"problem,omitempty"`
}

// Status is GET /status.
type Status struct {
	Topology    string            `json:"topology"`
	FrameworkID string            `json:"framework_id,omitempty"`
	Master      string            `json:"master"`
	Connected   bool              `json:"connected"`
	LastError   string            `json:"last_error,omitempty"`
	Containers  []ContainerStatus `json:"containers"`
}

func (f *framework) status() Status {
	st := Status{Topology: f.job.Topology, FrameworkID: f.id, Master: f.s.master, Connected: f.connected}
	if f.lastErr != nil && !f.connected {
		st.LastError = f.lastErr.Error()
	}
	now := time.Now()
	for _, id := range sortedIDs(f.ctrs) {
		c := f.ctrs[id]
		cs := ContainerStatus{Container: id, Task: c.task, State: c.state, Since: c.since, Agent: c.agent, Host: c.host,
			Restarts: c.restarts, Message: c.message, Problem: c.problem}
		if c.task == "" {
			cs.State = statePending
			cs.Ports, cs.Host = nil, ""
			switch {
			case now.Before(c.notBefore):
				cs.Waiting = fmt.Sprintf("relaunch backoff until %s after %s", c.notBefore.Format(time.RFC3339), c.pendingReason)
			case c.shortfall != "":
				cs.Waiting = "no offer big enough yet: " + c.shortfall
			default:
				cs.Waiting = "waiting for an offer"
			}
		} else {
			cs.Ports = c.ports
		}
		st.Containers = append(st.Containers, cs)
	}
	return st
}
