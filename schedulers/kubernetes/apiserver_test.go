package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/kubernetes/kubetest"
)

// These tests use the real client-go REST client against small HTTP
// servers that answer as the API server does for the cases at hand (they
// are not an API server).

// writeKubeconfig writes a kubeconfig with one context per server
// (name → URL, with the given namespaces) and current as the current one.
func writeKubeconfig(t *testing.T, servers map[string]string, namespaces map[string]string, current string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters:\n")
	for name, url := range servers {
		fmt.Fprintf(&b, "- name: %s\n  cluster:\n    server: %s\n", name, url)
		if strings.HasPrefix(url, "https://") {
			b.WriteString("    insecure-skip-tls-verify: true\n")
		}
	}
	b.WriteString("users:\n- name: u\n  user:\n    token: t0ken\ncontexts:\n")
	for name := range servers {
		fmt.Fprintf(&b, "- name: %s\n  context:\n    cluster: %s\n    user: u\n", name, name)
		if ns := namespaces[name]; ns != "" {
			fmt.Fprintf(&b, "    namespace: %s\n", ns)
		}
	}
	fmt.Fprintf(&b, "current-context: %s\n", current)
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// apiLog records the requests a test server saw.
type apiLog struct {
	mu   sync.Mutex
	reqs []string // "METHOD path"
	auth []string
}

func (l *apiLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r.Method+" "+r.URL.Path)
	l.auth = append(l.auth, r.Header.Get("Authorization"))
}

func (l *apiLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason, "message": msg})
}

func newRealScheduler(t *testing.T, cfg spi.Config) *Scheduler {
	t.Helper()
	s, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	sc := s.(*Scheduler)
	sc.poll = 5 * time.Millisecond
	return sc
}

func TestKubeconfigContext(t *testing.T) {
	var hits sync.Map
	mk := func(name string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Store(name, r.URL.Path)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"StatefulSetList","apiVersion":"apps/v1","metadata":{},"items":[]}`)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	kc := writeKubeconfig(t, map[string]string{"a": mk("a"), "b": mk("b")}, map[string]string{"b": "team-b"}, "a")
	t.Setenv("KUBECONFIG", "")

	sc := newRealScheduler(t, spi.Config{KeyKubeconfig: kc})
	if err := sc.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p, ok := hits.Load("a"); !ok || p != "/apis/apps/v1/namespaces/default/statefulsets" {
		t.Errorf("the current context's server saw %v; want a list of the default namespace's StatefulSets", p)
	}
	sc = newRealScheduler(t, spi.Config{KeyKubeconfig: kc, KeyContext: "b"})
	if err := sc.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p, _ := hits.Load("b"); p != "/apis/apps/v1/namespaces/team-b/statefulsets" {
		t.Errorf("context b: server b saw %v; want the context's namespace team-b", p)
	}
	sc = newRealScheduler(t, spi.Config{KeyKubeconfig: kc, KeyContext: "b", KeyNamespace: "mine"})
	if sc.ns != "mine" {
		t.Errorf("namespace %q: %s does not win over the context's", sc.ns, KeyNamespace)
	}
	// $KUBECONFIG is read when the key is unset, as kubectl does.
	t.Setenv("KUBECONFIG", kc)
	sc = newRealScheduler(t, spi.Config{KeyContext: "b"})
	if sc.clientErr != nil || sc.ns != "team-b" {
		t.Errorf("with $KUBECONFIG: %v, namespace %q", sc.clientErr, sc.ns)
	}

	sc = newRealScheduler(t, spi.Config{KeyKubeconfig: kc, KeyContext: "nope"})
	err := sc.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), `context "nope" does not exist`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("unknown context: %v", err)
	}
	sc = newRealScheduler(t, spi.Config{KeyKubeconfig: filepath.Join(t.TempDir(), "missing")})
	if err := sc.Kill(context.Background(), "wordcount"); err == nil || !strings.Contains(err.Error(), KeyKubeconfig) {
		t.Errorf("missing kubeconfig: %v", err)
	}
}

// TestNoKubeconfig: without a kubeconfig and outside a pod, every call
// says so in one line, and a dry run still renders (in namespace default).
func TestNoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	sc := newRealScheduler(t, spi.Config{keyCoreBundle: "true"})
	err := sc.Schedule(context.Background(), testJob())
	if err == nil || !strings.Contains(err.Error(), "nor an in-cluster service account") || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v", err)
	}
	out, err := sc.RenderJob(testJob())
	if err != nil || !strings.Contains(string(out), "namespace: default") {
		t.Errorf("dry run without a cluster: %v", err)
	}
}

func TestUnreachableAPIServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	kc := writeKubeconfig(t, map[string]string{"gone": "https://" + addr}, nil, "gone")
	sc := newRealScheduler(t, testConfig(KeyKubeconfig, kc))
	for name, call := range map[string]func() error{
		"Schedule": func() error { return sc.Schedule(context.Background(), testJob()) },
		"Kill":     func() error { return sc.Kill(context.Background(), "wordcount") },
		"Restart":  func() error { return sc.Restart(context.Background(), "wordcount", 1) },
	} {
		err := call()
		if err == nil || !strings.Contains(err.Error(), "cannot reach the API server https://"+addr) || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v", name, err)
		}
		if errors.Is(err, spi.ErrNotFound) {
			t.Errorf("%s: an unreachable API server is not a missing topology: %v", name, err)
		}
	}
}

func TestRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	kc := writeKubeconfig(t, map[string]string{"slow": srv.URL}, nil, "slow")
	sc := newRealScheduler(t, testConfig(KeyKubeconfig, kc, KeyRequestTimeout, "200ms"))
	start := time.Now()
	err := sc.Check(context.Background())
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("a hanging API server: %v after %s", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "Timeout") && !strings.Contains(err.Error(), "deadline") {
		t.Errorf("the error does not say it timed out: %v", err)
	}
}

// TestForbiddenNamespace: an API server that forbids everything in the
// namespace; submit fails in one line and sends nothing but the lookup.
func TestForbiddenNamespace(t *testing.T) {
	var log apiLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		status(w, 403, "Forbidden", `statefulsets.apps "wordcount" is forbidden: User "alice" cannot get resource "statefulsets" in API group "apps" in the namespace "prod"`)
	}))
	t.Cleanup(srv.Close)
	kc := writeKubeconfig(t, map[string]string{"c": srv.URL}, nil, "c")
	sc := newRealScheduler(t, testConfig(KeyKubeconfig, kc, KeyNamespace, "prod"))
	err := sc.Schedule(context.Background(), testJob())
	if err == nil || !strings.Contains(err.Error(), `in namespace "prod": forbidden: statefulsets.apps "wordcount" is forbidden: User "alice"`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v", err)
	}
	for _, r := range log.all() {
		if !strings.HasPrefix(r, "GET ") {
			t.Errorf("a forbidden submit sent %s", r)
		}
	}
	if err := sc.Kill(context.Background(), "wordcount"); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("Kill: got %v", err)
	}
	if err := sc.Check(context.Background()); err == nil || !strings.Contains(err.Error(), `list StatefulSets in namespace "prod": forbidden`) {
		t.Errorf("Check: got %v", err)
	}
}

// TestForbiddenStatefulSet: the user may create ConfigMaps and Services
// but not StatefulSets; the submission removes what it created.
func TestForbiddenStatefulSet(t *testing.T) {
	var log apiLog
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/version":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"major":"1","minor":"34","gitVersion":"v1.34.4"}`)
		case r.Method == http.MethodGet:
			status(w, 404, "NotFound", "not found")
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/statefulsets") && r.URL.Query().Get("dryRun") == "":
			// The dry run passes, the real create is refused (as an
			// admission webhook may refuse the real create only).
			status(w, 403, "Forbidden", `statefulsets.apps is forbidden: User "alice" cannot create resource "statefulsets" in API group "apps" in the namespace "egret-test"`)
		case r.Method == http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", r.Header.Get("Content-Type"))
			w.WriteHeader(201)
			_, _ = w.Write(body)
		case r.Method == http.MethodDelete:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
		default:
			status(w, 405, "MethodNotAllowed", r.Method)
		}
	}))
	t.Cleanup(srv.Close)
	kc := writeKubeconfig(t, map[string]string{"c": srv.URL}, nil, "c")
	sc := newRealScheduler(t, testConfig(KeyKubeconfig, kc))
	err := sc.Schedule(context.Background(), testJob())
	if err == nil || !strings.Contains(err.Error(), "create StatefulSet wordcount in namespace \"egret-test\": forbidden") {
		t.Fatalf("got %v", err)
	}
	got := strings.Join(log.all(), "\n")
	for _, want := range []string{
		"POST /api/v1/namespaces/egret-test/configmaps", "POST /api/v1/namespaces/egret-test/services",
		"DELETE /api/v1/namespaces/egret-test/services/wordcount", "DELETE /api/v1/namespaces/egret-test/configmaps/wordcount-config",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("requests lack %q:\n%s", want, got)
		}
	}
	if !strings.Contains(log.auth[0], "Bearer t0ken") {
		t.Errorf("the kubeconfig's token was not sent over TLS: %q", log.auth[0])
	}
}

// TestUpdateRetriesOnConflict: the StatefulSet changes between the read
// and the write of an update; the update reads it again and succeeds.
func TestUpdateRetriesOnConflict(t *testing.T) {
	f := kubetest.NewCluster(t, testNS)
	kc := kubetest.WriteKubeconfig(t, f.Serve(t).URL)
	sc := newRealScheduler(t, testConfig(KeyKubeconfig, kc))
	runningJob(t, f, sc)
	var calls atomic.Int32
	f.BeforeUpdate = func(resource, name string) {
		if resource != "statefulsets" || calls.Add(1) > 1 {
			return
		}
		// Someone else writes the StatefulSet first.
		gvr := appsv1.SchemeGroupVersion.WithResource("statefulsets")
		obj, err := f.Tracker().Get(gvr, testNS, name)
		if err != nil {
			t.Error(err)
			return
		}
		sts := obj.(*appsv1.StatefulSet).DeepCopy()
		sts.ResourceVersion = "999999"
		sts.Labels["someone"] = "else"
		if err := f.Tracker().Update(gvr, sts, testNS); err != nil {
			t.Error(err)
		}
	}
	job := testJob()
	job.Plan.Containers = append(job.Plan.Containers, plan.Container{ID: 3, Required: plan.Resources{CPU: 1, RAM: 1 << 30, Disk: 1 << 30}})
	if err := sc.Update(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d updates sent, want 2 (a conflict, then the retry)", n)
	}
	sts, err := f.AppsV1().StatefulSets(testNS).Get(context.Background(), "wordcount", metav1.GetOptions{})
	if err != nil || *sts.Spec.Replicas != 4 || sts.Labels["someone"] != "else" {
		t.Errorf("after the retried update: %v, %v", sts, err)
	}
}
