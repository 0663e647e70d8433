package tmanager

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/proto/egretpb"
)

var (
	running = egretpb.TopologyState_TOPOLOGY_STATE_RUNNING
	paused  = egretpb.TopologyState_TOPOLOGY_STATE_PAUSED
)

func TestRegistrationBuildsAndBroadcastsPlan(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t)

	loc, err := e.st.TManagerLocation(context.Background(), testName)
	if err != nil {
		t.Fatal(err)
	}
	if loc.GetTopologyId() != testID || loc.GetHost() != "127.0.0.1" || loc.GetServerPort() == 0 || loc.GetHttpPort() == 0 {
		t.Fatalf("location node = %v", loc)
	}
	if n, _ := e.admin.Get(context.Background(), state.Path(state.TManagersDir, testName)); !n.Ephemeral {
		t.Fatal("the location node is not ephemeral")
	}

	s1 := dial(t, m.ep.ServerAddr)
	if resp := s1.register(1, 7001); resp.GetError() != "" || resp.GetPplan() != nil {
		t.Fatalf("first registration: %v", resp)
	}
	if code, _ := m.do(t, "GET", "/pplan", "", ""); code != 404 {
		t.Fatalf("GET /pplan before every stmgr registered: %d, want 404", code)
	}
	if h := m.health(t); h.Complete || len(h.Registered) != 1 {
		t.Fatalf("health with one of two registered: %+v", h)
	}
	s2 := dial(t, m.ep.ServerAddr)
	resp := s2.register(2, 7002)
	if resp.GetError() != "" || resp.GetPplan().GetVersion() != 1 {
		t.Fatalf("completing registration: %v", resp)
	}
	p1, p2 := s1.plan(1), s2.plan(1)
	if !proto.Equal(p1, p2) || !proto.Equal(p1, resp.GetPplan()) {
		t.Fatal("stream managers received different plans")
	}
	if got := describe(p1); got != "v1 RUNNING 1@127.0.0.1:7001 2@127.0.0.1:7002" {
		t.Fatalf("plan = %s", got)
	}
	if p1.GetTopology().GetId() != testID || len(p1.GetPacking().GetContainers()) != 2 {
		t.Fatalf("plan topology/packing = %v / %v", p1.GetTopology(), p1.GetPacking())
	}
	if st := e.statePlan(t); !proto.Equal(st, p1) {
		t.Fatalf("/pplans holds %s, broadcast %s", describe(st), describe(p1))
	}
	if h := m.health(t); !h.Complete || h.Version != 1 || h.State != "RUNNING" {
		t.Fatalf("health after registration: %+v", h)
	}
	code, body := m.do(t, "GET", "/pplan", "", "")
	if code != 200 || body["version"] != "1" || body["state"] != "TOPOLOGY_STATE_RUNNING" {
		t.Fatalf("GET /pplan: %d %v", code, body)
	}
	// Heartbeats are answered.
	if r := s1.heartbeat(1); r.GetError() != "" {
		t.Fatalf("heartbeat: %s", r.GetError())
	}
}

func TestDeployDeactivatedStartsPaused(t *testing.T) {
	e := newEnv(t, true)
	m := e.start(t)
	_, pp := registerAll(t, m, 2, 1)
	if pp.GetState() != paused {
		t.Fatalf("state = %v, want PAUSED", pp.GetState())
	}
	if e.statePlan(t).GetState() != paused {
		t.Fatal("stored plan is not PAUSED")
	}
}

func TestActivateDeactivateOverHTTP(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t)

	if code, body := m.do(t, "POST", "/deactivate", "", ""); code != 409 || !strings.Contains(body["error"].(string), "not running yet") {
		t.Fatalf("deactivate before registration: %d %v", code, body)
	}
	ss, _ := registerAll(t, m, 2, 1)

	code, body := m.do(t, "POST", "/deactivate", "", "")
	if code != 200 || body["state"] != "PAUSED" || body["version"] != 2.0 || body["changed"] != true {
		t.Fatalf("deactivate: %d %v", code, body)
	}
	for _, s := range ss {
		if pp := s.plan(2); pp.GetState() != paused {
			t.Fatalf("plan 2 state %v", pp.GetState())
		}
	}
	if e.statePlan(t).GetState() != paused {
		t.Fatal("stored plan not PAUSED")
	}
	// Idempotent: no new version.
	code, body = m.do(t, "POST", "/deactivate", "", "")
	if code != 200 || body["version"] != 2.0 || body["changed"] != false {
		t.Fatalf("second deactivate: %d %v", code, body)
	}
	ss[0].noPlanPending(1)

	code, body = m.do(t, "POST", "/activate?topology_id="+testID, "", "")
	if code != 200 || body["state"] != "RUNNING" || body["version"] != 3.0 {
		t.Fatalf("activate: %d %v", code, body)
	}
	for _, s := range ss {
		if pp := s.plan(3); pp.GetState() != running {
			t.Fatalf("plan 3 state %v", pp.GetState())
		}
	}
	if code, _ := m.do(t, "POST", "/activate?topology_id=other-1", "", ""); code != 400 {
		t.Fatalf("activate with another topology id: %d, want 400", code)
	}
	if code, _ := m.do(t, "GET", "/activate", "", ""); code != 405 {
		t.Fatalf("GET /activate: %d, want 405", code)
	}
	if code, _ := m.do(t, "GET", "/nope", "", ""); code != 404 {
		t.Fatalf("GET /nope: %d, want 404", code)
	}
}

func TestRuntimeConfig(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t)
	ss, _ := registerAll(t, m, 2, 1)

	code, body := m.do(t, "POST", "/runtime-config", "application/x-www-form-urlencoded", "count.rate=100&debug=true")
	if code != 200 || body["version"] != 2.0 {
		t.Fatalf("form update: %d %v", code, body)
	}
	if pp := ss[1].plan(2); pp.GetRuntimeConfig()["count.rate"] != "100" || pp.GetRuntimeConfig()["debug"] != "true" {
		t.Fatalf("runtime config %v", pp.GetRuntimeConfig())
	}
	code, body = m.do(t, "POST", "/runtime-config", "application/json", `{"count.rate": 250, "debug": null, "mode": "fast"}`)
	if code != 200 || body["version"] != 3.0 {
		t.Fatalf("json update: %d %v", code, body)
	}
	pp := ss[0].plan(3)
	want := map[string]string{"count.rate": "250", "mode": "fast"}
	if got := pp.GetRuntimeConfig(); len(got) != 2 || got["count.rate"] != want["count.rate"] || got["mode"] != want["mode"] {
		t.Fatalf("runtime config %v, want %v", got, want)
	}
	if e.statePlan(t).GetRuntimeConfig()["mode"] != "fast" {
		t.Fatal("runtime config not stored")
	}

	for _, tc := range []struct{ name, ct, body string }{
		{"malformed json", "application/json", `{"a": `},
		{"json array", "application/json", `["a"]`},
		{"nested value", "application/json", `{"a": {"b": 1}}`},
		{"trailing data", "application/json", `{"a": "1"} {"b": "2"}`},
		{"empty form", "application/x-www-form-urlencoded", ``},
		{"bad escape", "application/x-www-form-urlencoded", `a=%zz`},
		{"space in key", "application/json", `{"a b": "1"}`},
		{"repeated key", "application/x-www-form-urlencoded", `a=1&a=2`},
		{"oversized body", "application/x-www-form-urlencoded", "a=" + strings.Repeat("x", maxBodyBytes+10)},
		{"bad topology setting", "application/x-www-form-urlencoded", "count.rate=5&topology.max.spout.pending=abc"},
		{"bad topology setting in json", "application/json", `{"topology.message.timeout": 30}`},
		{"setting fixed at submission", "application/json", `{"topology.containers": 3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := m.do(t, "POST", "/runtime-config", tc.ct, tc.body); code != 400 || body["error"] == "" {
				t.Fatalf("%d %v, want 400 with an error", code, body)
			}
		})
	}
	if _, body := m.do(t, "POST", "/runtime-config", "application/x-www-form-urlencoded", "topology.max.spout.pending=abc"); body["error"] != `runtime setting topology.max.spout.pending: "abc" is not an integer` {
		t.Errorf("error %q", body["error"])
	}
	ss[0].noPlanPending(1)
	if h := m.health(t); h.Version != 3 {
		t.Fatalf("rejected updates changed the version: %d", h.Version)
	}
}

func TestReRegistrationAfterRestart(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t)
	ss, _ := registerAll(t, m, 2, 1)

	// Container 2's stream manager restarts on another port while its old
	// connection is still open: the new registration replaces it.
	n2 := dial(t, m.ep.ServerAddr)
	if resp := n2.register(2, 8002); resp.GetPplan().GetVersion() != 2 {
		t.Fatalf("re-registration response: %v", resp)
	}
	ss[1].waitClosed()
	for _, s := range []*fakeStmgr{ss[0], n2} {
		if got := describe(s.plan(2)); got != "v2 RUNNING 1@127.0.0.1:7001 2@127.0.0.1:8002" {
			t.Fatalf("plan after restart = %s", got)
		}
	}
	if got := describe(e.statePlan(t)); got != "v2 RUNNING 1@127.0.0.1:7001 2@127.0.0.1:8002" {
		t.Fatalf("stored plan = %s", got)
	}

	// Container 1's stream manager dies (connection closed), then comes back.
	_ = ss[0].conn.Close()
	waitFor(t, "container 1 to be forgotten", func() bool { return !m.health(t).Complete })
	n1 := dial(t, m.ep.ServerAddr)
	n1.register(1, 8001)
	if got := describe(n2.plan(3)); got != "v3 RUNNING 1@127.0.0.1:8001 2@127.0.0.1:8002" {
		t.Fatalf("plan after second restart = %s", got)
	}
	n1.plan(3)
	// A heartbeat naming another container than the registered one is refused.
	if r := n1.heartbeat(2); !strings.Contains(r.GetError(), "container 1") {
		t.Fatalf("heartbeat naming another container: %v", r)
	}
}

func TestRegistrationRejected(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t)
	ok := dial(t, m.ep.ServerAddr)
	ok.register(1, 7001)

	for _, tc := range []struct {
		name      string
		id        string
		container int
		port      int
		want      string
	}{
		{"wrong topology id", "wordcount-old", 2, 7002, "does not match"},
		{"container not in plan", testID, 9, 7009, "not in the packing plan"},
		{"container zero", testID, 0, 7000, "not in the packing plan"},
		{"bad port", testID, 2, 0, "not a valid host and port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dial(t, m.ep.ServerAddr)
			resp := s.registerAs(tc.id, tc.container, tc.port)
			if !strings.Contains(resp.GetError(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", resp.GetError(), tc.want)
			}
			s.waitClosed()
		})
	}
	// Unregistered heartbeat: refused, connection kept.
	s := dial(t, m.ep.ServerAddr)
	if r := s.heartbeat(2); !strings.Contains(r.GetError(), "register first") && !strings.Contains(r.GetError(), "StMgrRegisterRequest") {
		t.Fatalf("unregistered heartbeat: %v", r)
	}
	if r := ok.heartbeat(1); r.GetError() != "" {
		t.Fatalf("the registered stmgr was affected: %v", r)
	}
	if h := m.health(t); len(h.Registered) != 1 || h.Registered[0] != 1 {
		t.Fatalf("registered = %v", h.Registered)
	}
}

func TestHeartbeatEviction(t *testing.T) {
	e := newEnv(t, false)
	clk := newFakeClock()
	m := e.start(t, withClock(clk), withSettings(KeyHeartbeatTimeout, "5s", KeyHeartbeatInterval, "1s"))
	if clk.tickerCount() == 0 {
		t.Fatal("no eviction ticker")
	}
	ss, _ := registerAll(t, m, 2, 1)

	clk.Advance(3 * time.Second)
	if r := ss[0].heartbeat(1); r.GetError() != "" {
		t.Fatal(r.GetError())
	}
	// Container 2 has been silent for 6s, container 1 for 3s: only 2 goes,
	// although its TCP connection is open.
	clk.Advance(3 * time.Second)
	ss[1].waitClosed()
	h := m.health(t)
	if h.Complete || len(h.Registered) != 1 || h.Registered[0] != 1 {
		t.Fatalf("after eviction: %+v", h)
	}
	if r := ss[0].heartbeat(1); r.GetError() != "" {
		t.Fatalf("container 1 evicted too: %s", r.GetError())
	}
	found := false
	for _, entry := range m.logs.FilterMessage("evicted silent stream manager").All() {
		found = found || entry.ContextMap()["container"] == int64(2)
	}
	if !found {
		t.Fatal("no eviction logged for container 2")
	}
	// It comes back and a new version is broadcast.
	n2 := dial(t, m.ep.ServerAddr)
	n2.register(2, 9002)
	if got := describe(ss[0].plan(2)); got != "v2 RUNNING 1@127.0.0.1:7001 2@127.0.0.1:9002" {
		t.Fatalf("plan = %s", got)
	}
}

func TestSecondTManagerWaitsForTheLocation(t *testing.T) {
	e := newEnv(t, false)
	first := e.start(t)
	second := e.launch(t, withSettings(KeyEstablishTimeout, "60s"))

	waitFor(t, "the second topology manager to find the location held", func() bool {
		return second.logs.FilterMessage("another topology manager holds the location; waiting for it to go away").Len() > 0
	})
	select {
	case <-second.ready:
		t.Fatal("the second topology manager became ready while the first session lives")
	default:
	}
	// The first topology manager's session ends: its node goes, it exits,
	// and the second one takes the location.
	_ = first.session.Close()
	if err := first.wait(t); !isLost(err) {
		t.Fatalf("first Run returned %v, want ErrLocationLost", err)
	}
	select {
	case <-second.ready:
	case <-second.done:
		t.Fatalf("second exited: %v", second.err)
	case <-time.After(waitMax):
		t.Fatal("the second topology manager did not take the location")
	}
	loc, err := e.st.TManagerLocation(context.Background(), testName)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(second.ep.ServerAddr, ":"+itoa(int(loc.GetServerPort()))) {
		t.Fatalf("location %v does not point at the second topology manager %s", loc, second.ep.ServerAddr)
	}
	registerAll(t, second, 2, 1)
}

func TestEstablishGivesUp(t *testing.T) {
	e := newEnv(t, false)
	e.start(t)
	second := e.launch(t, withSettings(KeyEstablishTimeout, "300ms"), func(c *Config) { c.Limits.EstablishRetryInterval = 20 * time.Millisecond })
	err := second.wait(t)
	if !errors.Is(err, ErrLocationHeld) || !strings.Contains(err.Error(), KeyEstablishTimeout) {
		t.Fatalf("Run returned %v, want ErrLocationHeld naming %s", err, KeyEstablishTimeout)
	}
}

func TestOwnNodeDeletedStopsRun(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t)
	registerAll(t, m, 2, 1)
	if err := e.admin.Delete(context.Background(), state.Path(state.TManagersDir, testName), spi.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := m.wait(t); !isLost(err) {
		t.Fatalf("Run returned %v, want ErrLocationLost", err)
	}
}

func TestSessionExpiryStopsRun(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t)
	m.session.Expire()
	if err := m.wait(t); !isLost(err) {
		t.Fatalf("Run returned %v, want ErrLocationLost", err)
	}
}

func TestShutdownReleasesLocationAndRestartContinuesVersions(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t)
	ss, _ := registerAll(t, m, 2, 1)
	if code, _ := m.do(t, "POST", "/deactivate", "", ""); code != 200 {
		t.Fatal("deactivate failed")
	}
	ss[0].plan(2)
	m.cancel()
	if err := m.wait(t); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	ss[0].waitClosed()
	if _, err := e.st.TManagerLocation(context.Background(), testName); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("location after shutdown: %v, want not found", err)
	}
	// A new topology manager (the old session still open) takes over at
	// once and continues the version sequence and the PAUSED state.
	m2 := e.start(t)
	_, pp := registerAll(t, m2, 2, 3)
	if pp.GetState() != paused {
		t.Fatalf("state after restart = %v, want PAUSED", pp.GetState())
	}
}

func TestPackingPlanChange(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t)
	ss, _ := registerAll(t, m, 2, 1)
	ctx := context.Background()

	// Scale up: words gets a third task in a new container 3.
	if err := e.st.UpdatePackingPlan(ctx, testTopology(3, 2), threeContainers(), spi.AnyVersion); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new packing plan", func() bool { return len(m.health(t).Expected) == 3 })
	ss[0].noPlanPending(1)
	s3 := dial(t, m.ep.ServerAddr)
	if resp := s3.register(3, 7003); resp.GetPplan().GetVersion() != 2 {
		t.Fatalf("container 3 registration: %v", resp)
	}
	for _, s := range append(ss, s3) {
		pp := s.plan(2)
		if got := describe(pp); got != "v2 RUNNING 1@127.0.0.1:7001 2@127.0.0.1:7002 3@127.0.0.1:7003" {
			t.Fatalf("plan = %s", got)
		}
		if par := pp.GetTopology().GetComponents()[0].GetParallelism(); par != 3 {
			t.Fatalf("words parallelism %d, want 3", par)
		}
		if n := len(pp.GetPacking().GetContainers()); n != 3 {
			t.Fatalf("packing has %d containers", n)
		}
	}

	// Scale down: container 3 is removed; its stream manager is dropped
	// and the plan follows at once (1 and 2 are registered).
	if err := e.st.UpdatePackingPlan(ctx, testTopology(2, 2), twoContainers(), spi.AnyVersion); err != nil {
		t.Fatal(err)
	}
	s3.waitClosed()
	pp := ss[0].plan(3)
	if got := describe(pp); got != "v3 RUNNING 1@127.0.0.1:7001 2@127.0.0.1:7002" {
		t.Fatalf("plan after scale-down = %s", got)
	}
	if par := pp.GetTopology().GetComponents()[0].GetParallelism(); par != 2 {
		t.Fatalf("words parallelism %d, want 2", par)
	}
	if got := describe(e.statePlan(t)); got != describe(pp) {
		t.Fatalf("stored plan = %s", got)
	}
}

func TestInvalidPackingPlanIgnored(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t)
	ss, _ := registerAll(t, m, 2, 1)
	bad := twoContainers()
	bad.Containers[1].Instances[0].Component = "nosuch"
	if err := e.st.UpdatePackingPlan(context.Background(), testTopology(2, 2), bad, spi.AnyVersion); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the invalid plan to be logged", func() bool {
		return m.logs.FilterMessage("ignoring an invalid packing plan").Len() > 0
	})
	ss[0].noPlanPending(1)
	if h := m.health(t); !h.Complete || len(h.Expected) != 2 {
		t.Fatalf("health after an invalid plan: %+v", h)
	}
}

func TestStartRejectsAnotherSubmission(t *testing.T) {
	e := newEnv(t, false)
	m := e.launch(t, func(c *Config) { c.TopologyID = "wordcount-other" })
	if err := m.wait(t); err == nil || !strings.Contains(err.Error(), "wordcount-other") {
		t.Fatalf("Run returned %v, want an id mismatch error", err)
	}
}

func TestConfigErrors(t *testing.T) {
	sess := newEnv(t, false).store.NewSession()
	defer sess.Close()
	base := Config{TopologyName: testName, TopologyID: testID, StateManager: sess}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no name", func(c *Config) { c.TopologyName = "" }, "topology name is required"},
		{"no id", func(c *Config) { c.TopologyID = "" }, "topology id is required"},
		{"no state manager", func(c *Config) { c.StateManager = nil }, "state manager"},
		{"bad port", func(c *Config) { c.HTTPPort = 70000 }, "ports must be"},
		{"bad duration", func(c *Config) { c.Settings = spi.Config{KeyHeartbeatTimeout: "soon"} }, KeyHeartbeatTimeout},
		{"bad size", func(c *Config) { c.Settings = spi.Config{KeyMaxFrameBytes: "huge"} }, KeyMaxFrameBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mod(&cfg)
			err := Run(context.Background(), cfg, zapNop())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
