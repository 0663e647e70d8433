package mesos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/mesos/mesostest"
)

// launchErr submits a 1-container job and returns Launch's error.
func (e *env) launchErr(t *testing.T, topology string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return e.sched(t, topology).Launch(ctx, e.job(topology, 1))
}

// requireClean checks that a failed launch left nothing behind.
func (e *env) requireClean(t *testing.T, topology string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(e.base, topology)); !os.IsNotExist(err) {
		t.Errorf("the working directory of %s is left after the failed launch: %v", topology, err)
	}
	for _, tv := range e.m.Tasks(FrameworkName(topology)) {
		if !terminal(tv.State) {
			t.Errorf("task %s is left %s after the failed launch", tv.ID, tv.State)
		}
	}
	for _, fw := range e.m.Frameworks(FrameworkName(topology)) {
		t.Errorf("framework %s is still registered after the failed launch", fw.ID)
	}
}

func oneLine(t *testing.T, err error, mentions ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("want an error")
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the error spans lines:\n%v", err)
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("the error %q does not mention %q", err, m)
		}
	}
}

func TestLaunchOffersTooSmall(t *testing.T) {
	e := newEnv(t, mesostest.Options{CPUs: 0.75}, spi.Config{KeyOfferTimeout: "300ms"})
	err := e.launchErr(t, "small")
	oneLine(t, err, "no offer was big enough", "cpus: needs 0.5", KeyOfferTimeout)
	if !errors.Is(err, spi.ErrCannotFit) {
		t.Errorf("error %v does not wrap spi.ErrCannotFit", err)
	}
	e.requireClean(t, "small")
}

func TestLaunchUnreachableMaster(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	e := newEnv(t, mesostest.Options{}, spi.Config{KeyMasterURI: "http://" + addr, KeySubscribeTimeout: "1s"})
	oneLine(t, e.launchErr(t, "unreachable"), "could not subscribe to the Mesos master at http://"+addr, KeySubscribeTimeout)
	e.requireClean(t, "unreachable")
}

func TestLaunchAuthenticationRefused(t *testing.T) {
	e := newEnv(t, mesostest.Options{Principal: "egret", Secret: "right"}, spi.Config{KeyPrincipal: "egret", KeySecret: "wrong"})
	oneLine(t, e.launchErr(t, "auth"), "refused the credentials of principal \"egret\"", "401", KeySecret)
	e.requireClean(t, "auth")

	// The right secret works.
	e.extra[KeySecret] = "right"
	if err := e.launchErr(t, "auth"); err != nil {
		t.Fatalf("launch with the right secret: %v", err)
	}
	if err := e.sched(t, "auth").Kill(context.Background(), "auth"); err != nil {
		t.Fatal(err)
	}
}

func TestLaunchUnknownRole(t *testing.T) {
	e := newEnv(t, mesostest.Options{Roles: []string{"*", "egret"}}, spi.Config{KeyRole: "nosuchrole"})
	oneLine(t, e.launchErr(t, "role"), `refused role "nosuchrole"`, "not present in the master's --roles", KeyRole)
	e.requireClean(t, "role")
}

func TestLaunchTaskNeverStarts(t *testing.T) {
	e := newEnv(t, mesostest.Options{}, nil)
	e.pkg = filepath.Join(t.TempDir(), "missing.tar.gz") // the fetcher fails
	oneLine(t, e.launchErr(t, "never"), "failed 3 times in a row", "REASON_CONTAINER_LAUNCH_FAILED")
	e.requireClean(t, "never")
}

func TestBadConfig(t *testing.T) {
	for _, c := range []struct {
		key, value, want string
	}{
		{KeyMasterURI, "mesos-master:5050", "is not the http(s):// address of a Mesos master"},
		{KeyRole, "a/b", "is not a Mesos role"},
		{KeyOfferTimeout, "soon", "is not a duration"},
		{KeyTManagerRAM, "-1", "must be positive"},
		{KeyBackoffMax, "10ms", "is below"},
		{KeySecret, "s3cret", KeyPrincipal + " is empty"},
	} {
		cfg := spi.Config{keyWorkDir: t.TempDir(), c.key: c.value}
		_, err := New(cfg, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s=%q: error %v, want one naming the key and saying %q", c.key, c.value, err, c.want)
		}
	}
	if _, err := New(spi.Config{}, nil); err == nil || !strings.Contains(err.Error(), keyWorkDir) {
		t.Errorf("no working directory: error %v", err)
	}
}

// TestSubscriptionDropAndMasterFailover: the framework subscribes again
// with its id after the stream breaks and after a new master is elected,
// reconciles, and the tasks keep running untouched.
func TestSubscriptionDropAndMasterFailover(t *testing.T) {
	e := newEnv(t, mesostest.Options{}, nil)
	const topo = "failover"
	if err := e.launchErr(t, topo); err != nil {
		t.Fatal(err)
	}
	before, _ := e.containers(context.Background(), topo)
	id := e.m.Frameworks(FrameworkName(topo))[0].ID
	for i, fault := range []func(){
		func() { e.m.DropSubscription(FrameworkName(topo)) },
		e.m.Failover,
	} {
		fault()
		waitFor(t, "the framework to subscribe again", 30*time.Second, func() (bool, string) {
			fws := e.m.Frameworks(FrameworkName(topo))
			return len(fws) == 1 && fws[0].Connected && fws[0].ID == id, "not yet"
		})
		waitFor(t, "the framework to reconcile", 30*time.Second, func() (bool, string) {
			for _, c := range e.m.Calls() {
				if c.Type == "RECONCILE" && c.FrameworkID == id {
					return true, ""
				}
			}
			return false, "no RECONCILE call"
		})
		after, _ := e.containers(context.Background(), topo)
		if len(after) != len(before) {
			t.Fatalf("fault %d: containers %v, before %v", i, after, before)
		}
		for c, task := range before {
			if after[c] != task {
				t.Errorf("fault %d: container %d changed task %s -> %s", i, c, task, after[c])
			}
		}
	}
	if err := e.sched(t, topo).Kill(context.Background(), topo); err != nil {
		t.Fatal(err)
	}
}

// TestKillWithoutFramework: with the framework process gone, kill
// subscribes as the framework and tears it down; the tasks end.
func TestKillWithoutFramework(t *testing.T) {
	e := newEnv(t, mesostest.Options{}, nil)
	const topo = "orphan"
	if err := e.launchErr(t, topo); err != nil {
		t.Fatal(err)
	}
	id := e.m.Frameworks(FrameworkName(topo))[0].ID
	e.killFrameworks()
	if err := e.sched(t, topo).Kill(context.Background(), topo); err != nil {
		t.Fatal(err)
	}
	if !e.m.Removed(id) {
		t.Errorf("framework %s was not torn down", id)
	}
	waitFor(t, "the tasks to end", 30*time.Second, func() (bool, string) {
		got, _ := e.containers(context.Background(), topo)
		return len(got) == 0, "tasks still run"
	})
	if _, err := os.Stat(filepath.Join(e.base, topo)); !os.IsNotExist(err) {
		t.Errorf("working directory left: %v", err)
	}
}

// TestSubscriptionLostBeforeSubscribed: the connection of the first
// subscription breaks after the master registered the framework and before
// its SUBSCRIBED event arrived, so the framework never learnt its id; then
// a subscription drops mid-stream. Neither leaves a second framework: the
// framework finds the one the master kept (by its topology id label) and
// fails over to it, and kill removes it.
func TestSubscriptionLostBeforeSubscribed(t *testing.T) {
	e := newEnv(t, mesostest.Options{}, nil)
	const topo = "lost"
	e.m.LoseNextSubscribed()
	if err := e.launchErr(t, topo); err != nil {
		t.Fatal(err)
	}
	fws := e.m.Frameworks(FrameworkName(topo))
	if len(fws) != 1 || !fws[0].Connected || fws[0].Subscriptions != 1 {
		t.Fatalf("frameworks after a subscription lost before SUBSCRIBED: %+v; want one, connected, subscribed once", fws)
	}
	id := fws[0].ID
	subscribes := 0
	for _, c := range e.m.Calls() {
		if c.Type == "SUBSCRIBE" {
			subscribes++
		}
	}
	if subscribes != 2 {
		t.Errorf("%d SUBSCRIBE calls; want 2 (the lost one, then the failover to its framework)", subscribes)
	}
	for range 3 {
		if n := e.m.DropSubscription(FrameworkName(topo)); n != 1 {
			t.Fatalf("dropped %d subscriptions", n)
		}
		waitFor(t, "the framework to subscribe again", 30*time.Second, func() (bool, string) {
			fws := e.m.Frameworks(FrameworkName(topo))
			return len(fws) == 1 && fws[0].Connected && fws[0].ID == id, fmt.Sprintf("%+v", fws)
		})
	}
	if got, _ := e.containers(context.Background(), topo); len(got) != 2 {
		t.Errorf("containers %v; want the topology manager's and one", got)
	}
	if err := e.sched(t, topo).Kill(context.Background(), topo); err != nil {
		t.Fatal(err)
	}
	if fws := e.m.Frameworks(""); len(fws) != 0 || !e.m.Removed(id) {
		t.Errorf("frameworks left after kill: %+v (removed %s: %v)", fws, id, e.m.Removed(id))
	}
}
