package kubernetes

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/k8stest"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

// realNS is the namespace of the real-cluster tests: it enforces the
// "restricted" Pod Security Standard, so every pod egret renders must
// meet it (the StatefulSet controller could not create them otherwise).
const realNS = "egret-real"

// TestRealCluster runs the conformance suite against a real API server,
// controller manager and scheduler (internal/k8stest) whose node is kwok's:
// pods become Running without a process. FailOver restarts the API server.
func TestRealCluster(t *testing.T) {
	c := k8stest.Require(t, k8stest.Options{Nodes: k8stest.Kwok})
	runReal(t, c)
}

// TestRealPods runs the conformance suite against the real node: the
// kubelet runs the pods with containerd (busybox, whose executor exits on
// SIGTERM, so no deletion waits out a grace period).
func TestRealPods(t *testing.T) {
	c := k8stest.Require(t, k8stest.Options{Nodes: k8stest.Kubelet})
	runReal(t, c)
}

func runReal(t *testing.T, c *k8stest.Cluster) {
	cs := c.Client
	restrictedNamespace(t, cs, realNS)
	cfg := realClusterConfig(c.Kubeconfig, realNS)
	schedulertest.Run(t, schedulertest.Harness{
		New: func(t *testing.T, _ string) spi.Scheduler {
			s, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Containers: func(ctx context.Context, topology string) (map[int]string, error) {
			return runningPods(ctx, cs, realNS, topology)
		},
		Timeout:      2 * time.Minute,
		PollInterval: 200 * time.Millisecond,
		StrictErrors: true,
		EditJob: func(job *spi.Job) {
			job.PackageURI = "http://unused.invalid/p.tar.gz" // the patch skips the download
			for i := range job.Plan.Containers {
				job.Plan.Containers[i].Required.CPU = 0.1
				job.Plan.Containers[i].Required.RAM = 64 << 20
				job.Plan.Containers[i].Required.Disk = 64 << 20
			}
		},
		LoseContainer: func(ctx context.Context, topology string, container int) error {
			return cs.CoreV1().Pods(realNS).Delete(ctx, PodName(topology, container), metav1.DeleteOptions{})
		},
		Unplaceable: func(job *spi.Job) {
			for i := range job.Plan.Containers {
				job.Plan.Containers[i].Required.RAM = 1 << 50
			}
		},
		FailOver: func(t *testing.T) {
			if err := c.Restart(context.Background(), "kube-apiserver"); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// restrictedNamespace creates namespace ns enforcing the restricted Pod
// Security Standard.
func restrictedNamespace(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// runningPods observes the running pods of topology: container index → UID.
func runningPods(ctx context.Context, cs kubernetes.Interface, ns, topology string) (map[int]string, error) {
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelTopology + "=" + topology})
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, p := range l.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		if i, err := strconv.Atoi(p.Labels["apps.kubernetes.io/pod-index"]); err == nil {
			out[i] = string(p.UID)
		}
	}
	return out, nil
}

// realClusterConfig is the real-cluster tests': busybox pods whose init
// container does nothing and whose executor waits until SIGTERM (sh's
// trap ends the wait at once, so a deleted pod ends without waiting out
// its grace period).
func realClusterConfig(kc, ns string) spi.Config {
	return spi.Config{
		KeyKubeconfig: kc, KeyNamespace: ns, KeyImage: "busybox:1.36", KeyScheduleTimeout: "20s", KeyDeleteTimeout: "2m",
		KeyTManagerCPU: "0.1", KeyTManagerRAM: "64MiB", KeyTManagerDisk: "64MiB",
		KeyPodTemplatePatch: `{"spec":{"initContainers":[{"name":"fetch","command":["true"]}],"containers":[{"name":"executor","command":["sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"],"args":[]}]}}`,
	}
}

// TestRealClusterPatch checks that the real-cluster tests' patch makes
// the pods what it says.
func TestRealClusterPatch(t *testing.T) {
	sc := newTestScheduler(t, nil, realClusterConfig("", testNS))
	out, err := sc.RenderJob(testJob())
	if err != nil {
		t.Fatal(err)
	}
	_, _, sts := decodeManifests(t, out)
	spec := sts.Spec.Template.Spec
	if c := spec.Containers[0]; c.Name != ContainerName || len(c.Command) != 3 || !strings.Contains(c.Command[2], "trap 'exit 0' TERM") || len(c.Args) != 0 || c.Image != "busybox:1.36" {
		t.Errorf("executor: %v %v %s", c.Command, c.Args, c.Image)
	}
	if c := spec.InitContainers[0]; len(c.Command) != 1 || c.Command[0] != "true" {
		t.Errorf("init: %v", c.Command)
	}
}

// TestRealServerChecks: on the real API server (kwok tier), a pod
// template patch that egret's own checks accept but the server rejects
// fails the submission before anything is created (server-side dry run);
// the RBAC of egret kubernetes rbac is enough for submit and kill, as a
// service account's token; a namespace without those rights is refused.
func TestRealServerChecks(t *testing.T) {
	c := k8stest.Require(t, k8stest.Options{Nodes: k8stest.Kwok})
	ctx := context.Background()
	restrictedNamespace(t, c.Client, realNS)

	// An empty image passes egret's checks; the server requires one.
	cfg := realClusterConfig(c.Kubeconfig, realNS)
	cfg[KeyPodTemplatePatch] = `{"spec":{"containers":[{"name":"executor","image":""}]}}`
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	job := testJob()
	job.Topology = "badpatch"
	err = s.Schedule(ctx, job)
	if err == nil || !strings.Contains(err.Error(), "the API server rejects the topology's StatefulSet egret-real/badpatch, so nothing was created") ||
		!strings.Contains(err.Error(), "spec.template.spec.containers[0].image: Required value") {
		t.Fatalf("got %v", err)
	}
	if l, _ := c.Client.CoreV1().ConfigMaps(realNS).List(ctx, metav1.ListOptions{LabelSelector: LabelTopology + "=badpatch"}); len(l.Items) > 0 {
		t.Errorf("a ConfigMap was created: %v", l.Items[0].Name)
	}

	// The RBAC objects, bound to a service account whose token egret uses.
	if _, err := c.Client.CoreV1().ServiceAccounts(realNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sub, err := ParseSubject("serviceaccount:" + realNS + ":ci")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := RBAC(realNS, "egret", sub)
	if err != nil {
		t.Fatal(err)
	}
	if err := objs.Apply(ctx, c.Client); err != nil {
		t.Fatal(err)
	}
	if err := objs.Apply(ctx, c.Client); err != nil { // again: updates
		t.Fatal(err)
	}
	kc := c.ServiceAccountKubeconfig(t, realNS, "ci")
	cfg = realClusterConfig(kc, realNS)
	cfg[KeyServiceAccount] = "egret"
	s, err = New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	job = testJob()
	job.PackageURI = "http://unused.invalid/p.tar.gz"
	for i := range job.Plan.Containers {
		job.Plan.Containers[i].Required = planSmall
	}
	if err := s.Schedule(ctx, job); err != nil {
		t.Fatalf("submit as the service account: %v", err)
	}
	if err := s.(spi.Checker).Check(ctx); err != nil {
		t.Errorf("check as the service account: %v", err)
	}
	if err := s.Kill(ctx, job.Topology); err != nil {
		t.Fatalf("kill as the service account: %v", err)
	}
	// The same account in another namespace: forbidden, one line.
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg[KeyNamespace] = "elsewhere"
	s, _ = New(cfg, nil)
	err = s.Schedule(ctx, job)
	if err == nil || !strings.Contains(err.Error(), `forbidden`) || !strings.Contains(err.Error(), `cannot get resource "statefulsets"`) {
		t.Errorf("other namespace: %v", err)
	}
}

var planSmall = plan.Resources{CPU: 0.1, RAM: 64 << 20, Disk: 64 << 20}
