package plugins_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/plugins/internal/fakes"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/proto/pluginpb"
	"github.com/egret-stream/egret/statemgr/memory"
	"github.com/egret-stream/egret/statemgr/statemgrtest"
	"github.com/egret-stream/egret/uploaders/localfs"
	"github.com/egret-stream/egret/uploaders/uploadertest"
)

// The state manager conformance suite through the gRPC adapters: every
// session is its own connection to a session of one shared memory store.
func TestStateManagerConformanceInProcess(t *testing.T) {
	store := memory.NewStore()
	statemgrtest.Run(t, func(t *testing.T) spi.StateManager {
		return plugintest.StateManager(t, store.Factory(), nil)
	})
}

// RunExpiry through the adapters: a "crash" stops the plugin's gRPC server
// and crashes its memory session, as the death of a plugin process would.
func TestStateManagerExpiryInProcess(t *testing.T) {
	store := memory.NewStore(memory.WithSessionTimeout(500 * time.Millisecond))
	type conn struct {
		server  *goplugin.GRPCServer
		session *memory.Session
	}
	conns := map[spi.StateManager]conn{}
	statemgrtest.RunExpiry(t,
		func(t *testing.T) spi.StateManager {
			var c conn
			p := &plugins.StateManagerPlugin{Factory: func(spi.Config, *zap.Logger) (spi.StateManager, error) {
				c.session = store.NewSession()
				return c.session, nil
			}}
			client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{spi.KindStateManager: p})
			t.Cleanup(func() { server.Stop(); _ = client.Close() })
			sm, err := plugins.DispenseStateManager(context.Background(), client, "memory", nil)
			if err != nil {
				t.Fatal(err)
			}
			c.server = server
			conns[sm] = c
			return sm
		},
		func(t *testing.T, sm spi.StateManager) {
			c := conns[sm]
			c.server.Stop()
			c.session.Crash()
		})
}

func TestUploaderConformanceInProcess(t *testing.T) {
	uploadertest.Run(t, func(t *testing.T) spi.Uploader {
		return plugintest.Uploader(t, localfs.New, spi.Config{localfs.KeyDirectory: filepath.Join(t.TempDir(), "repo")})
	})
}

func TestSessionTimeoutAndConfigCrossTheBoundary(t *testing.T) {
	var got spi.Config
	sm := plugintest.StateManager(t, func(cfg spi.Config, _ *zap.Logger) (spi.StateManager, error) {
		got = cfg
		return memory.NewStore(memory.WithSessionTimeout(1234 * time.Millisecond)).NewSession(), nil
	}, spi.Config{"egret.statemgr.root.path": "/tmp/x", "empty": ""})
	if d := sm.SessionTimeout(); d != 1234*time.Millisecond {
		t.Errorf("SessionTimeout() = %v, want 1.234s", d)
	}
	if want := (spi.Config{"egret.statemgr.root.path": "/tmp/x", "empty": ""}); !reflect.DeepEqual(got, want) {
		t.Errorf("plugin got config %v, want %v", got, want)
	}
}

func TestMultiOpsAndErrors(t *testing.T) {
	ctx := testCtx(t)
	sm := plugintest.StateManager(t, memory.NewStore().Factory(), nil)
	if err := sm.Multi(ctx,
		spi.Op{Kind: spi.OpCreate, Path: "/a", Data: []byte("1")},
		spi.Op{Kind: spi.OpCheck, Path: "/a", Version: 0},
		spi.Op{Kind: spi.OpSet, Path: "/a", Data: []byte("2"), Version: 0},
	); err != nil {
		t.Fatal(err)
	}
	err := sm.Multi(ctx,
		spi.Op{Kind: spi.OpCreate, Path: "/b"},
		spi.Op{Kind: spi.OpSet, Path: "/a", Data: []byte("3"), Version: 7},
	)
	if !errors.Is(err, spi.ErrVersionConflict) || !strings.Contains(err.Error(), "/a") {
		t.Fatalf("conflicting multi: %v, want ErrVersionConflict naming /a", err)
	}
	if _, err := sm.Get(ctx, "/b"); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("a failed multi left /b behind: %v", err)
	}
	if err := sm.Multi(ctx, spi.Op{Kind: 99, Path: "/c"}); err == nil || !strings.Contains(err.Error(), "unknown op kind") {
		t.Fatalf("unknown op kind: %v", err)
	}
}

func TestNotConfigured(t *testing.T) {
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{
		spi.KindStateManager: &plugins.StateManagerPlugin{Factory: memory.NewStore().Factory()},
	})
	t.Cleanup(func() { server.Stop(); _ = client.Close() })
	_, err := pluginpb.NewStateManagerClient(client.Conn).Get(context.Background(), &pluginpb.PathRequest{Path: "/"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "Configure") {
		t.Fatalf("Get before Configure: %v, want FailedPrecondition saying to call Configure", err)
	}
	if _, err := plugins.DispenseStateManager(context.Background(), client, "x", nil); err != nil {
		t.Fatal(err)
	}
	_, err = plugins.DispenseStateManager(context.Background(), client, "x", nil)
	if err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("second Configure: %v, want an error", err)
	}
}

func TestConfigureErrorReachesHost(t *testing.T) {
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{
		spi.KindScheduler: &plugins.SchedulerPlugin{Factory: fakes.NewRecorder},
	})
	t.Cleanup(func() { server.Stop(); _ = client.Close() })
	_, err := plugins.DispenseScheduler(context.Background(), client, "rec", spi.Config{"test.fail": "no cluster named moon"})
	if err == nil || !strings.Contains(err.Error(), "no cluster named moon") || !strings.Contains(err.Error(), `"rec"`) {
		t.Fatalf("Configure with a failing factory: %v", err)
	}
}

func TestClosedAdapters(t *testing.T) {
	ctx := testCtx(t)
	u := plugintest.Uploader(t, localfs.New, spi.Config{localfs.KeyDirectory: t.TempDir()})
	s := plugintest.Scheduler(t, fakes.NewRecorder, nil)
	for _, c := range []interface{ Close() error }{u, s} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	if _, err := u.Upload(ctx, spi.Package{Path: "/nonexistent"}); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("Upload after Close: %v", err)
	}
	if err := s.Kill(ctx, "x"); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("Kill after Close: %v", err)
	}
}

func testJob() spi.Job {
	return spi.Job{
		Topology: "wordcount", TopologyID: "wordcount-1a2b", Cluster: "local", Role: "alice", Environ: "prod",
		PackageURI: "file:///repo/wordcount.tar.gz", PackageSHA256: "abc123",
		Plan: &plan.PackingPlan{TopologyID: "wordcount-1a2b", Containers: []plan.Container{
			{ID: 1, Instances: []plan.Instance{{Component: "word", TaskID: 1, Resources: plan.Resources{CPU: 0.5, RAM: 1 << 20, Disk: 1 << 30}}}, Required: plan.Resources{CPU: 1, RAM: 2 << 20, Disk: 2 << 30}},
			{ID: 2, Instances: []plan.Instance{{Component: "count", TaskID: 2}, {Component: "count", TaskID: 3, Index: 1}}},
		}},
		Config: spi.Config{"egret.cluster": "local", "b": "2"},
	}
}

const wantJob = "id=wordcount-1a2b cluster=local role=alice environ=prod uri=file:///repo/wordcount.tar.gz sha=abc123 containers=2 config=b,egret.cluster"

// exerciseScheduler runs every call of s and checks what the recorder saw.
func exerciseScheduler(t *testing.T, s spi.Scheduler, launch, scale bool) {
	t.Helper()
	ctx := testCtx(t)
	_, isLauncher := s.(spi.Launcher)
	_, isScalable := s.(spi.Scalable)
	if isLauncher != launch || isScalable != scale {
		t.Fatalf("%T: Launcher %v Scalable %v, want %v %v", s, isLauncher, isScalable, launch, scale)
	}
	job := testJob()
	want := []string{}
	if launch {
		if err := s.(spi.Launcher).Launch(ctx, job); err != nil {
			t.Fatal(err)
		}
		want = append(want, "launch "+wantJob)
	}
	if err := s.Schedule(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx, "wordcount", spi.AllContainers); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(ctx, "wordcount", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, job); err != nil {
		t.Fatal(err)
	}
	want = append(want, "schedule "+wantJob, "restart -1", "restart 2", "update "+wantJob)
	if scale {
		sc := s.(spi.Scalable)
		if err := sc.AddContainers(ctx, "wordcount", job.Plan.Containers); err != nil {
			t.Fatal(err)
		}
		if err := sc.RemoveContainers(ctx, "wordcount", job.Plan.Containers[1:]); err != nil {
			t.Fatal(err)
		}
		err := sc.AddContainers(ctx, "wordcount", []plan.Container{{ID: 9}})
		if err == nil || !strings.Contains(err.Error(), "container 9 has no instances") {
			t.Fatalf("AddContainers of an empty container: %v", err)
		}
		want = append(want, "add [1 2]", "remove [2]")
	}
	if err := s.Kill(ctx, "wordcount"); err != nil {
		t.Fatal(err)
	}
	want = append(want, "kill")
	links, err := s.JobLinks(ctx, "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(links, want) {
		t.Fatalf("recorded calls:\n%q\nwant\n%q", links, want)
	}
	err = s.Restart(ctx, "never-scheduled", 1)
	if !errors.Is(err, spi.ErrNotFound) || !strings.Contains(err.Error(), "never-scheduled") {
		t.Fatalf("Restart of an unknown topology: %v, want ErrNotFound naming it", err)
	}
}

func TestSchedulerCapabilitiesInProcess(t *testing.T) {
	for _, tc := range []struct {
		name          string
		f             spi.SchedulerFactory
		launch, scale bool
	}{
		{"basic", fakes.NewRecorder, false, false},
		{"launcher", fakes.Launching, true, false},
		{"scalable", fakes.Scalable, false, true},
		{"both", fakes.NewLaunchingRecorder, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exerciseScheduler(t, plugintest.Scheduler(t, tc.f, nil), tc.launch, tc.scale)
		})
	}
}

// The scheduler RPCs of a capability the plugin lacks answer Unsupported
// (a host never calls them: its value lacks the method).
func TestMissingCapabilityRPCs(t *testing.T) {
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{
		spi.KindScheduler: &plugins.SchedulerPlugin{Factory: fakes.NewRecorder},
	})
	t.Cleanup(func() { server.Stop(); _ = client.Close() })
	if _, err := plugins.DispenseScheduler(context.Background(), client, "basic", nil); err != nil {
		t.Fatal(err)
	}
	rpc := pluginpb.NewSchedulerClient(client.Conn)
	_, err := rpc.Launch(context.Background(), &pluginpb.Job{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("Launch on a library-mode scheduler: %v, want Unimplemented", err)
	}
	_, err = rpc.AddContainers(context.Background(), &pluginpb.ContainersRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("AddContainers on a non-scalable scheduler: %v, want Unimplemented", err)
	}
}

func wordcount() *topology.Topology {
	return &topology.Topology{
		Name: "wordcount", ID: "wordcount-1",
		Config: map[string]string{"topology.workers": "2"},
		Components: []topology.Component{
			{Name: "word", Kind: topology.Spout, Parallelism: 2, Outputs: []topology.Stream{{ID: "default", Fields: []string{"word"}}}},
			{Name: "count", Kind: topology.Bolt, Parallelism: 3,
				Inputs: []topology.Input{{Component: "word", Stream: "default", Grouping: topology.Fields, Fields: []string{"word"}}}},
		},
	}
}

func samePlan(t *testing.T, got, want *plan.PackingPlan) {
	t.Helper()
	if !proto.Equal(got.ToProto(), want.ToProto()) {
		t.Fatalf("plan\n%+v\nwant\n%+v", got, want)
	}
}

// exercisePacking checks p against the in-process algorithm.
func exercisePacking(t *testing.T, p spi.Packing, repack bool) {
	t.Helper()
	local, _ := fakes.NewRepackingPerComponent(spi.Config{"test.max.tasks": "3"})
	got, err := p.Pack(wordcount())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := local.Pack(wordcount())
	samePlan(t, got, want)
	if err := got.Validate(wordcount()); err != nil {
		t.Fatal(err)
	}

	big := wordcount()
	big.Components[1].Parallelism = 4
	_, err = p.Pack(big)
	if !errors.Is(err, spi.ErrCannotFit) || !strings.Contains(err.Error(), `"count"`) {
		t.Fatalf("Pack of a topology that does not fit: %v, want ErrCannotFit naming count", err)
	}
	if _, err := p.Pack(nil); err == nil {
		t.Fatal("Pack(nil) succeeded")
	}

	rp, ok := p.(spi.Repacking)
	if ok != repack {
		t.Fatalf("%T implements Repacking: %v, want %v", p, ok, repack)
	}
	if !repack {
		return
	}
	got, err = rp.Repack(wordcount(), want, map[string]int{"word": 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, _ = local.(spi.Repacking).Repack(wordcount(), want, map[string]int{"word": 1}, 0)
	samePlan(t, got, want)
	_, err = rp.Repack(wordcount(), want, map[string]int{"nope": 1}, 0)
	if !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("Repack of an unknown component: %v, want ErrNotFound", err)
	}
}

func TestPackingInProcess(t *testing.T) {
	cfg := spi.Config{"test.max.tasks": "3"}
	t.Run("repacking", func(t *testing.T) {
		exercisePacking(t, plugintest.Packing(t, fakes.NewRepackingPerComponent, cfg), true)
	})
	t.Run("packonly", func(t *testing.T) {
		exercisePacking(t, plugintest.Packing(t, fakes.NewPerComponent, cfg), false)
	})
}

// A plugin set without a factory (the host's) refuses Configure.
func TestHostSidePluginSetRefusesConfigure(t *testing.T) {
	p := &plugins.UploaderPlugin{}
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{spi.KindUploader: p})
	t.Cleanup(func() { server.Stop(); _ = client.Close() })
	_, err := plugins.DispenseUploader(context.Background(), client, "x", nil)
	if err == nil || !strings.Contains(err.Error(), "no implementation") {
		t.Fatalf("Configure of a host-side plugin set: %v", err)
	}
}
