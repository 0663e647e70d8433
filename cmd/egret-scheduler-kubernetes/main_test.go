package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/kubernetes"
	"github.com/egret-stream/egret/schedulers/kubernetes/kubetest"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

func TestMain(m *testing.M) { plugintest.Main(m, ".") }

// apiServer answers the few requests of these tests as the Kubernetes API
// server does (it is not one): GET of the StatefulSet "running" returns
// one that egret made, "forbidden" is refused, every other object does
// not exist, pod lists are empty and deletes succeed.
func apiServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		send := func(code int, v any) {
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(v)
		}
		status := func(code int, reason, msg string) {
			send(code, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason, "message": msg})
		}
		p := r.URL.Path
		switch {
		case strings.Contains(p, "/namespaces/forbidden/"):
			status(403, "Forbidden", fmt.Sprintf(`statefulsets.apps is forbidden: User "bob" cannot %s resource in the namespace "forbidden"`, strings.ToLower(r.Method)))
		case r.Method == http.MethodGet && strings.HasSuffix(p, "/statefulsets/running"):
			send(200, map[string]any{"kind": "StatefulSet", "apiVersion": "apps/v1",
				"metadata": map[string]any{"name": "running", "namespace": "ns", "labels": map[string]string{kubernetes.LabelTopology: "running", kubernetes.LabelManagedBy: "egret"}},
				"spec":     map[string]any{"replicas": 2}})
		case r.Method == http.MethodGet && strings.HasSuffix(p, "/pods"):
			send(200, map[string]any{"kind": "PodList", "apiVersion": "v1", "metadata": map[string]any{}, "items": []any{}})
		case r.Method == http.MethodGet:
			status(404, "NotFound", "not found")
		case r.Method == http.MethodDelete:
			send(200, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success"})
		default:
			_, _ = io.Copy(io.Discard, r.Body)
			status(405, "MethodNotAllowed", "not in this test")
		}
	}))
	t.Cleanup(srv.Close)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	doc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + srv.URL +
		"\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

// TestPlugin drives the egret-scheduler-kubernetes binary as an external
// plugin (under another name, so that no built-in is picked) against a
// stand-in API server: errors and their sentinels cross the boundary.
func TestPlugin(t *testing.T) {
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindScheduler, "kubernetesplugin", plugintest.Build(t, "."))
	loader := plugintest.NewLoader(t, dir)
	kc := apiServer(t)
	load := func(t *testing.T, ns string) spi.Scheduler {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := loader.LoadScheduler(ctx, "kubernetesplugin", spi.Config{
			kubernetes.KeyKubeconfig: kc, kubernetes.KeyNamespace: ns, "egret.package.core.bundle": "true",
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := plugins.ProcessOf(s); !ok {
			t.Fatal("not loaded as a plugin")
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	ctx := context.Background()
	job := spi.Job{Topology: "running", TopologyID: "running-1", PackageURI: "http://pkg.example/p.tar.gz",
		Plan: &plan.PackingPlan{Containers: []plan.Container{{ID: 1, Required: plan.Resources{CPU: 1, RAM: 1 << 30, Disk: 1 << 30}}}}}

	s := load(t, "ns")
	if err := s.Schedule(ctx, job); !errors.Is(err, spi.ErrExists) {
		t.Errorf("Schedule of a running topology: %v, want ErrExists", err)
	}
	if err := s.Restart(ctx, "never", 0); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("Restart of a topology that does not run: %v, want ErrNotFound", err)
	}
	if err := s.Restart(ctx, "running", 5); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("Restart(5) of a topology of containers 0..1: %v, want ErrNotFound", err)
	}
	if err := s.Kill(ctx, "never"); err != nil {
		t.Errorf("Kill of a topology never scheduled: %v", err)
	}
	bad := job
	bad.Topology = "Bad_Name"
	if err := s.Schedule(ctx, bad); err == nil || !strings.Contains(err.Error(), `topology name "Bad_Name" cannot name a StatefulSet`) {
		t.Errorf("Schedule with an invalid name: %v", err)
	}

	s = load(t, "forbidden")
	job.Topology = "fresh"
	err := s.Schedule(ctx, job)
	if err == nil || !strings.Contains(err.Error(), `in namespace "forbidden": forbidden: statefulsets.apps is forbidden: User "bob"`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("Schedule in a forbidden namespace: %v", err)
	}

	ctx2, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := loader.LoadScheduler(ctx2, "kubernetesplugin", spi.Config{kubernetes.KeyImagePullPolicy: "Sometimes"}); err == nil || !strings.Contains(err.Error(), kubernetes.KeyImagePullPolicy) {
		t.Errorf("bad config: %v", err)
	}
}

// TestConformanceAsPlugin runs the conformance suite against the plugin
// binary, a new plugin process per call as the CLI starts one, talking
// over HTTP to the fake cluster's facade (kubetest): the real REST client,
// the real plugin boundary, a fake API server and fake controllers.
func TestConformanceAsPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the plugin binary")
	}
	const ns = "egret-plugin"
	f := kubetest.NewCluster(t, ns)
	kc := kubetest.WriteKubeconfig(t, f.Serve(t).URL)
	dir := t.TempDir()
	plugintest.Install(t, dir, spi.KindScheduler, "kubernetesplugin", plugintest.Build(t, "."))
	loader := plugintest.NewLoader(t, dir)
	cfg := spi.Config{
		kubernetes.KeyKubeconfig: kc, kubernetes.KeyNamespace: ns, "egret.package.core.bundle": "true",
		kubernetes.KeyScheduleTimeout: "5s", kubernetes.KeyDeleteTimeout: "10s",
	}
	schedulertest.Run(t, schedulertest.Harness{
		New: func(t *testing.T, _ string) spi.Scheduler {
			// Not t.Context(): the suite also builds schedulers in
			// cleanups, when that context is already cancelled.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := loader.LoadScheduler(ctx, "kubernetesplugin", cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := s.(spi.Scalable); !ok {
				t.Error("the plugin's scheduler is not spi.Scalable")
			}
			return s
		},
		Containers:   f.Containers,
		StrictErrors: true,
		PollInterval: 20 * time.Millisecond,
		EditJob:      func(job *spi.Job) { job.PackageURI = "http://packages.example/p.tar.gz" },
		LoseContainer: func(ctx context.Context, topology string, container int) error {
			return f.CoreV1().Pods(ns).Delete(ctx, kubernetes.PodName(topology, container), metav1.DeleteOptions{})
		},
		Unplaceable: func(job *spi.Job) {
			for i := range job.Plan.Containers {
				job.Plan.Containers[i].Required.RAM = 1 << 40
			}
		},
	})
}
