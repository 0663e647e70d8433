package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/egret-stream/egret/internal/k8stest"
	"github.com/egret-stream/egret/internal/zktest"
)

// These tests run topologies in real pods: internal/k8stest's real node
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the
// kubelet with containerd and runc, the CNI bridge, a cluster DNS), egret's
// own image built by `egret image build` and imported into the node's
// containerd, ZooKeeper and the package server on the pods' gateway.

// k8sNS is the tests' namespace: it enforces the restricted Pod Security
// Standard, so egret's pods must meet it.
const k8sNS = "egret-e2e"

// staticBinary builds a package with CGO_ENABLED=0 (the image has no C
// library): the egret of the image and the topologies that run in pods.
func staticBinary(t *testing.T, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	key := "static/" + name
	if p, ok := built[key]; ok {
		return p
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "egret-e2e-bin-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = dir
	}
	out := filepath.Join(buildDir, "static", name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, packages[name])
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", packages[name], err, b)
	}
	built[key] = out
	return out
}

// k8sEnv is a real cluster with egret's image on its node, a namespace
// enforcing the restricted profile, ZooKeeper and a package server the
// pods reach, and the egret cluster "kubernetes" configured for them.
type k8sEnv struct {
	k    *k8stest.Cluster
	c    *cluster
	pkgs string
}

const k8sImage = "egret.local/egret:e2e"

func startK8s(t *testing.T) *k8sEnv {
	t.Helper()
	// The image: the static egret, built as users build it.
	img := filepath.Join(t.TempDir(), "egret-image.tar")
	egretStatic := staticBinary(t, "egret")
	if out, err := exec.Command(egretStatic, "image", "build", "--binary", egretStatic, "--tag", k8sImage, "-o", img).CombinedOutput(); err != nil {
		t.Fatalf("egret image build: %v\n%s", err, out)
	}
	k := k8stest.Require(t, k8stest.Options{Nodes: k8stest.Kubelet, Images: []string{img}})
	if _, err := k.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: k8sNS, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// ZooKeeper listens on every interface: the pods reach it at the gateway.
	zk := zktest.Start(t)
	_, zkPort, _ := strings.Cut(zk, ":")
	pkgs := t.TempDir()
	port := freePort(t)
	srv := exec.Command(binary(t, "egret"), "serve-packages", "--dir", pkgs, "--addr", fmt.Sprintf("%s:%d", k8stest.PodGateway, port))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	c := newCluster(t, "kubernetes",
		"egret.kubernetes.kubeconfig="+k.Kubeconfig,
		"egret.kubernetes.namespace="+k8sNS,
		"egret.kubernetes.image="+k8sImage,
		"egret.kubernetes.schedule.timeout=2m",
		"egret.package.core.bundle=false", // the image's egret
		fmt.Sprintf("egret.uploader.http.uri=http://%s:%d/packages/", k8stest.PodGateway, port),
		fmt.Sprintf("egret.statemgr.connection.string=%s:%s", k8stest.PodGateway, zkPort),
		"egret.statemgr.session.timeout=10s",
		// Small pods: the node has the machine's 2 CPUs.
		"egret.kubernetes.tmanager.cpu=0.2", "egret.kubernetes.tmanager.ram=256MiB", "egret.kubernetes.tmanager.disk=512MiB",
		"egret.packing.default.instance.cpu=0.1", "egret.packing.default.instance.ram=128MiB", "egret.packing.default.instance.disk=64MiB",
		"egret.packing.padding.cpu=0.1", "egret.packing.padding.ram=256MiB", "egret.packing.padding.disk=256MiB",
		"egret.packing.overhead.cpu=0.1",
	)
	c.zk = zk
	return &k8sEnv{k: k, c: c, pkgs: pkgs}
}

// pod returns a pod of the namespace (nil if it does not exist).
func (e *k8sEnv) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := e.k.Client.CoreV1().Pods(k8sNS).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stats reads the topology manager's /stats at pod 0's address (the
// host cannot resolve the pods' DNS names; the pods can).
func (e *k8sEnv) stats(topology string) map[string]map[string]float64 {
	p, err := e.k.Client.CoreV1().Pods(k8sNS).Get(context.Background(), topology+"-0", metav1.GetOptions{})
	if err != nil || p.Status.PodIP == "" {
		return nil
	}
	var s struct {
		Components map[string]struct {
			Sums map[string]float64 `json:"sums"`
		} `json:"components"`
	}
	if getJSON(fmt.Sprintf("http://%s:6002/stats", p.Status.PodIP), &s) != nil {
		return nil
	}
	out := map[string]map[string]float64{}
	for c, v := range s.Components {
		out[c] = v.Sums
	}
	return out
}

// waitCounting waits until the count bolts' executed tuples rise.
func (e *k8sEnv) waitCounting(t *testing.T, topology, what string) {
	t.Helper()
	first := -1.0
	waitFor(t, "counts rising in the pods "+what, 3*time.Minute, func() bool {
		n := e.stats(topology)["count"]["instance.executed"]
		if n > 0 && first < 0 {
			first = n
		}
		return first > 0 && n > first
	})
}

// instanceProcs returns the host pids of the instance processes of a
// pod's container (the pods share the host's kernel: their processes are
// in the host's /proc, in the pod's cgroup).
func instanceProcs(t *testing.T, pod *corev1.Pod) []int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil || !bytes.Contains(cg, []byte("pod"+string(pod.UID))) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmdline, []byte("\x00--instance\x00")) {
			out = append(out, pid)
		}
	}
	return out
}

// assertK8sNothingLeft: no object of the topology, no pod, no process in
// a pod, no package and no state.
func (e *k8sEnv) assertNothingLeft(t *testing.T, topology string) {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: "egret.io/topology=" + topology}
	waitFor(t, "the topology's pods to end", 2*time.Minute, func() bool {
		l, err := e.k.Client.CoreV1().Pods(k8sNS).List(ctx, sel)
		return err == nil && len(l.Items) == 0
	})
	if l, _ := e.k.Client.AppsV1().StatefulSets(k8sNS).List(ctx, sel); len(l.Items) != 0 {
		t.Errorf("StatefulSets left: %d", len(l.Items))
	}
	if l, _ := e.k.Client.CoreV1().Services(k8sNS).List(ctx, sel); len(l.Items) != 0 {
		t.Errorf("Services left: %d", len(l.Items))
	}
	if l, _ := e.k.Client.CoreV1().ConfigMaps(k8sNS).List(ctx, sel); len(l.Items) != 0 {
		t.Errorf("ConfigMaps left: %d", len(l.Items))
	}
	if left, _ := os.ReadDir(e.pkgs); len(left) != 0 {
		t.Errorf("packages left on the package server: %v", left)
	}
	if names, err := e.c.store().Topologies(ctx); err != nil || len(names) != 0 {
		t.Errorf("state left: %v %v", names, err)
	}
}

// TestKubernetesRealPods submits word count to the real cluster: it runs
// in pods of egret's image (init container download, restricted security
// context, container index from the pod-index label, the daemons finding
// each other by the headless Service's DNS names), its counts rise; an
// instance killed with kill -9 inside a pod is restarted by its executor,
// a deleted pod is recreated by the StatefulSet controller, and the counts
// rise again each time; kill leaves nothing.
func TestKubernetesRealPods(t *testing.T) {
	e := startK8s(t)
	c := e.c
	start := time.Now()
	out := c.mustEgret("submit", "kubernetes", staticBinary(t, "wordcount"), "--", "--containers", "2")
	if !strings.Contains(out, `submitted topology "wordcount"`) {
		t.Fatalf("submit output:\n%s", out)
	}
	for i := 0; i <= 2; i++ {
		name := fmt.Sprintf("wordcount-%d", i)
		waitFor(t, "pod "+name+" running", 3*time.Minute, func() bool {
			p := e.pod(t, name)
			return p != nil && p.Status.Phase == corev1.PodRunning
		})
	}
	e.waitCounting(t, "wordcount", "after submit")
	t.Logf("submit to counting: %s", time.Since(start).Round(time.Millisecond))

	// kill -9 of an instance inside pod 1: its executor restarts it.
	p1 := e.pod(t, "wordcount-1")
	victims := instanceProcs(t, p1)
	if len(victims) == 0 {
		t.Fatalf("no instance process found in pod wordcount-1")
	}
	if err := syscall.Kill(victims[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed instance to be restarted in its pod", 2*time.Minute, func() bool {
		now := instanceProcs(t, p1)
		return len(now) == len(victims) && !containsInt(now, victims[0])
	})
	e.waitCounting(t, "wordcount", "after kill -9 of an instance in a pod")

	// Deleting pod 2: the StatefulSet controller creates it again.
	p2 := e.pod(t, "wordcount-2")
	if err := e.k.Client.CoreV1().Pods(k8sNS).Delete(context.Background(), "wordcount-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitFor(t, "pod wordcount-2 recreated and running", 3*time.Minute, func() bool {
		p := e.pod(t, "wordcount-2")
		return p != nil && p.UID != p2.UID && p.Status.Phase == corev1.PodRunning
	})
	t.Logf("deleted pod replaced in %s", time.Since(deleted).Round(time.Millisecond))
	e.waitCounting(t, "wordcount", "after deleting a pod")

	if out := c.mustEgret("kill", "kubernetes", "wordcount"); !strings.Contains(out, `killed topology "wordcount"`) {
		t.Errorf("kill output %q", out)
	}
	e.assertNothingLeft(t, "wordcount")
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
