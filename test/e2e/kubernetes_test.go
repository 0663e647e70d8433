package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/egret-stream/egret/bench/topologies/eocount/eocount"
	"github.com/egret-stream/egret/internal/k8stest"
	"github.com/egret-stream/egret/internal/zktest"
)

// These tests run topologies in real pods: internal/k8stest's real node
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the
// kubelet with containerd and runc, the CNI bridge, a cluster DNS), egret's
// own image built by `egret image build` and imported into the node's
// containerd, ZooKeeper and the package server on the pods' gateway.

// staticBinary builds a package with CGO_ENABLED=0 (the image has no C
// library): the egret of the image and the topologies that run in pods.
func staticBinary(t *testing.T, name string) string {
	t.Helper()
	return build(t, name, "static", "CGO_ENABLED=0")
}

// k8sEnv is a real cluster with egret's image on its node, ZooKeeper and
// a package server the pods reach at the gateway.
type k8sEnv struct {
	k    *k8stest.Cluster
	zk   string
	uri  string // the package server's upload URI
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
	// ZooKeeper listens on every interface: the pods reach it at the gateway.
	zk := zktest.Start(t)
	pkgs := t.TempDir()
	port := freePort(t)
	srv := exec.Command(binary(t, "egret"), "serve-packages", "--dir", pkgs, "--addr", fmt.Sprintf("%s:%d", k8stest.PodGateway, port))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	return &k8sEnv{k: k, zk: zk, pkgs: pkgs, uri: fmt.Sprintf("http://%s:%d/packages/", k8stest.PodGateway, port)}
}

// k8sCluster is the egret cluster "kubernetes" of namespace ns, created
// here (enforcing the restricted Pod Security Standard when restricted).
type k8sCluster struct {
	*cluster
	e  *k8sEnv
	ns string
}

func (e *k8sEnv) cluster(t *testing.T, ns string, restricted bool, props ...string) *k8sCluster {
	t.Helper()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if restricted {
		nsObj.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}
	}
	if _, err := e.k.Client.CoreV1().Namespaces().Create(context.Background(), nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, zkPort, _ := strings.Cut(e.zk, ":")
	c := newCluster(t, "kubernetes", append([]string{
		"egret.kubernetes.kubeconfig=" + e.k.Kubeconfig,
		"egret.kubernetes.namespace=" + ns,
		"egret.kubernetes.image=" + k8sImage,
		"egret.kubernetes.schedule.timeout=2m",
		"egret.package.core.bundle=false", // the image's egret
		"egret.uploader.http.uri=" + e.uri,
		fmt.Sprintf("egret.statemgr.connection.string=%s:%s", k8stest.PodGateway, zkPort),
		"egret.statemgr.session.timeout=10s",
		// Small pods: the node has the machine's 2 CPUs.
		"egret.kubernetes.tmanager.cpu=0.2", "egret.kubernetes.tmanager.ram=256MiB", "egret.kubernetes.tmanager.disk=512MiB",
		"egret.packing.default.instance.cpu=0.1", "egret.packing.default.instance.ram=128MiB", "egret.packing.default.instance.disk=64MiB",
		"egret.packing.padding.cpu=0.1", "egret.packing.padding.ram=256MiB", "egret.packing.padding.disk=256MiB",
		"egret.packing.overhead.cpu=0.1",
	}, props...)...)
	c.zk = e.zk
	c.static = true
	c.pods = &podProcs{client: e.k.Client, ns: ns}
	// The CLI talks to the topology manager at its pod's DNS name: run it
	// as on a machine of the cluster's network (its DNS; the host routes
	// to the pods), with the cluster's resolv.conf bind-mounted in a
	// mount namespace of its own.
	resolv, err := e.k.ResolvConf(ns)
	if err != nil {
		t.Fatal(err)
	}
	c.wrap = []string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, resolv}
	return &k8sCluster{cluster: c, e: e, ns: ns}
}

// pod returns a pod of the namespace (nil if it does not exist).
func (c *k8sCluster) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := c.e.k.Client.CoreV1().Pods(c.ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitCounting waits until the count bolts' executed tuples rise, as
// egret metrics reports them.
func (c *k8sCluster) waitCounting(t *testing.T, topology, what string) {
	t.Helper()
	first := -1.0
	waitFor(t, "counts rising in the pods "+what, 3*time.Minute, func() bool {
		var st struct{ Components map[string]map[string]float64 }
		out, _, code := c.egret("metrics", "kubernetes", topology, "--output", "json")
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
			return false
		}
		n := st.Components["count"]["instance.executed"]
		if n > 0 && first < 0 {
			first = n
		}
		return first > 0 && n > first
	})
}

// instanceProcs returns the host pids of the instance processes of a
// pod's container; task >= 0: only that task's.
func instanceProcs(t *testing.T, pod *corev1.Pod, task int) []int {
	t.Helper()
	var out []int
	for _, pid := range podPids(pod.UID) {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if bytes.Contains(cmdline, []byte("\x00--instance\x00")) && (task < 0 || bytes.Contains(cmdline, []byte("\x00--task\x00"+strconv.Itoa(task)+"\x00"))) {
			out = append(out, pid)
		}
	}
	return out
}

// assertK8sNothingLeft: no object of the topology, no pod, no process in
// a pod, no package and no state.
func (c *k8sCluster) assertNothingLeft(t *testing.T, topology string) {
	t.Helper()
	ctx := context.Background()
	e := c.e
	sel := metav1.ListOptions{LabelSelector: "egret.io/topology=" + topology}
	waitFor(t, "the topology's pods to end", 2*time.Minute, func() bool {
		l, err := e.k.Client.CoreV1().Pods(c.ns).List(ctx, sel)
		return err == nil && len(l.Items) == 0
	})
	if l, _ := e.k.Client.AppsV1().StatefulSets(c.ns).List(ctx, sel); len(l.Items) != 0 {
		t.Errorf("StatefulSets left: %d", len(l.Items))
	}
	if l, _ := e.k.Client.CoreV1().Services(c.ns).List(ctx, sel); len(l.Items) != 0 {
		t.Errorf("Services left: %d", len(l.Items))
	}
	if l, _ := e.k.Client.CoreV1().ConfigMaps(c.ns).List(ctx, sel); len(l.Items) != 0 {
		t.Errorf("ConfigMaps left: %d", len(l.Items))
	}
	if left, _ := os.ReadDir(e.pkgs); len(left) != 0 {
		t.Errorf("packages left on the package server: %v", left)
	}
	if names, err := c.store().Topologies(ctx); err != nil || len(names) != 0 {
		t.Errorf("state left: %v %v", names, err)
	}
}

// TestKubernetesRealPods runs topologies in real pods of egret's image on
// one real cluster, one case after the other.
func TestKubernetesRealPods(t *testing.T) {
	e := startK8s(t)
	t.Run("wordcount", func(t *testing.T) { k8sWordCount(t, e) })
	t.Run("effectively-once", func(t *testing.T) { k8sEffectivelyOnce(t, e) })
}

// k8sWordCount submits word count in a namespace enforcing the restricted
// Pod Security Standard: it runs in pods (init container download,
// container index from the pod-index label, the daemons finding each other
// by the headless Service's DNS names), its counts rise; an instance
// killed with kill -9 inside a pod is restarted by its executor, a deleted
// pod is recreated by the StatefulSet controller, and the counts rise
// again each time; kill leaves nothing.
func k8sWordCount(t *testing.T, e *k8sEnv) {
	c := e.cluster(t, "egret-e2e", true)
	start := time.Now()
	out := c.mustEgret("submit", "kubernetes", c.bin(t, "wordcount"), "--", "--containers", "2")
	if !strings.Contains(out, `submitted topology "wordcount"`) {
		t.Fatalf("submit output:\n%s", out)
	}
	for i := 0; i <= 2; i++ {
		name := fmt.Sprintf("wordcount-%d", i)
		waitFor(t, "pod "+name+" running", 3*time.Minute, func() bool {
			p := c.pod(t, name)
			return p != nil && p.Status.Phase == corev1.PodRunning
		})
	}
	c.waitCounting(t, "wordcount", "after submit")
	t.Logf("submit to counting: %s", time.Since(start).Round(time.Millisecond))

	// kill -9 of an instance inside pod 1: its executor restarts it.
	p1 := c.pod(t, "wordcount-1")
	victims := instanceProcs(t, p1, -1)
	if len(victims) == 0 {
		t.Fatalf("no instance process found in pod wordcount-1")
	}
	if err := syscall.Kill(victims[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed instance to be restarted in its pod", 2*time.Minute, func() bool {
		now := instanceProcs(t, p1, -1)
		return len(now) == len(victims) && !slices.Contains(now, victims[0])
	})
	c.waitCounting(t, "wordcount", "after kill -9 of an instance in a pod")

	// Deleting pod 2: the StatefulSet controller creates it again.
	c.deletePod(t, "wordcount-2")
	c.waitCounting(t, "wordcount", "after deleting a pod")

	// More containers: the StatefulSet grows by a pod; fewer: it shrinks.
	c.mustEgret("update", "kubernetes", "wordcount", "--container-number", "3")
	waitFor(t, "pod wordcount-3 running", 3*time.Minute, func() bool {
		p := c.pod(t, "wordcount-3")
		return p != nil && p.Status.Phase == corev1.PodRunning
	})
	c.waitCounting(t, "wordcount", "after update --container-number 3")
	c.mustEgret("update", "kubernetes", "wordcount", "--container-number", "2")
	waitFor(t, "pod wordcount-3 to end", 3*time.Minute, func() bool { return c.pod(t, "wordcount-3") == nil })
	c.waitCounting(t, "wordcount", "after update --container-number 2")
	t.Logf("egret metrics:\n%s", c.mustEgret("metrics", "kubernetes", "wordcount"))

	if out := c.mustEgret("kill", "kubernetes", "wordcount"); !strings.Contains(out, `killed topology "wordcount"`) {
		t.Errorf("kill output %q", out)
	}
	c.assertNothingLeft(t, "wordcount")
}

// deletePod deletes a pod and waits for its successor to run.
func (c *k8sCluster) deletePod(t *testing.T, name string) {
	t.Helper()
	old := c.pod(t, name)
	if err := c.e.k.Client.CoreV1().Pods(c.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitFor(t, "pod "+name+" recreated and running", 3*time.Minute, func() bool {
		p := c.pod(t, name)
		return p != nil && p.UID != old.UID && p.Status.Phase == corev1.PodRunning
	})
	t.Logf("deleted pod %s replaced in %s", name, time.Since(deleted).Round(time.Millisecond))
}

// k8sEffectivelyOnce runs the eocount topology in pods whose checkpoint
// storage (localfs) and reports are on a directory every pod mounts at
// the same path (a hostPath volume, so in a namespace without the
// restricted profile, which forbids them; a real cluster would mount a
// ReadWriteMany volume): after a kill -9 of a count instance in a pod and
// after the deletion of a pod, the counts still end exact.
func k8sEffectivelyOnce(t *testing.T, e *k8sEnv) {
	shared, err := os.MkdirTemp("", "egret-k8s-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	for _, d := range []string{shared, filepath.Join(shared, "state"), filepath.Join(shared, "checkpoints")} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil { // the pods run as 65532
			t.Fatal(err)
		}
	}
	patch := fmt.Sprintf(`{"spec":{"volumes":[{"name":"shared","hostPath":{"path":%q,"type":"Directory"}}],`+
		`"containers":[{"name":"executor","volumeMounts":[{"name":"shared","mountPath":%q}]}]}}`, shared, shared)
	c := e.cluster(t, "egret-e2e-shared", false,
		"egret.kubernetes.pod.template.patch="+patch,
		"egret.checkpoint.localfs.root="+filepath.Join(shared, "checkpoints"))
	const n = 20000
	name := "eocount"
	c.mustEgret("submit", "kubernetes", c.bin(t, "effectivelyonce"), "--",
		"--name", name, "--sentences", strconv.Itoa(n), "--state", filepath.Join(shared, "state"), "--containers", "2",
		"--rate", "1000", "--interval", "500ms")
	w := &wordCount{t: t, c: c.cluster, name: name, containers: 2, store: c.store()}
	pp, _, err := w.store.PackingPlan(context.Background(), name)
	if err != nil {
		t.Fatalf("read the packing plan: %v", err)
	}
	w.plan = pp
	r := &eoRun{wordCount: w, state: filepath.Join(shared, "state"), expected: eocount.Expected(n)}
	r.waitCounted("a tenth of the words to be counted", 0.1, 3*time.Minute)
	await(t, "a checkpoint to complete", recoverTimeout, func() (bool, string) {
		v := r.checkpointMetric("checkpoint.completed")
		return v >= 1, fmt.Sprintf("checkpoint.completed = %v", v)
	})

	// kill -9 of a count instance in pod 1.
	task := w.tasksOf(1, eocount.Count)[0]
	p1 := c.pod(t, name+"-1")
	victims := instanceProcs(t, p1, task)
	if len(victims) != 1 {
		t.Fatalf("count task %d in pod %s-1: processes %v", task, name, victims)
	}
	if err := syscall.Kill(victims[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if atKill := r.check(); atKill.Exact() {
		t.Fatalf("every word was counted before the kill: the fault came too late to test anything")
	}
	waitFor(t, "the killed count instance to be restarted in its pod", 2*time.Minute, func() bool {
		now := instanceProcs(t, p1, task)
		return len(now) == 1 && now[0] != victims[0]
	})
	r.waitCounted("half of the words to be counted", 0.5, 3*time.Minute)

	// The deletion of pod 2: its instances restore from the checkpoint.
	c.deletePod(t, name+"-2")
	if atDelete := r.check(); atDelete.Exact() {
		t.Fatalf("every word was counted before the pod was replaced: the fault came too late to test anything")
	}
	res := r.waitCounted("every word to be counted exactly after the faults", 1, allAckedTimeout)
	t.Logf("%s", res)
	if v := r.checkpointMetric("checkpoint.restores"); v < 1 {
		t.Errorf("checkpoint.restores = %v after a kill -9 and a deleted pod, want restores from the checkpoints", v)
	} else {
		t.Logf("checkpoint.restores = %v", v)
	}

	c.mustEgret("kill", "kubernetes", name)
	c.assertNothingLeft(t, name)
	if ids, _ := os.ReadDir(filepath.Join(shared, "checkpoints", name)); len(ids) > 0 {
		t.Errorf("checkpoints left after kill: %d", len(ids))
	}
}
