package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	k8stesting "k8s.io/client-go/testing"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/kubernetes/kubetest"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func observe(t *testing.T, f *kubetest.Cluster, topology string) map[int]string {
	t.Helper()
	m, err := f.Containers(context.Background(), topology)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func runningJob(t *testing.T, f *kubetest.Cluster, sc *Scheduler) map[int]string {
	t.Helper()
	if err := sc.Schedule(context.Background(), testJob()); err != nil {
		t.Fatal(err)
	}
	var m map[int]string
	waitFor(t, "containers 0..2", func() bool { m = observe(t, f, "wordcount"); return len(m) == 3 })
	return m
}

func noObjects(t *testing.T, f kubernetes.Interface, topology string) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.AppsV1().StatefulSets(testNS).Get(ctx, topology, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet %s left behind (%v)", topology, err)
	}
	if _, err := f.CoreV1().Services(testNS).Get(ctx, topology, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service %s left behind (%v)", topology, err)
	}
	if _, err := f.CoreV1().ConfigMaps(testNS).Get(ctx, ConfigMapName(topology), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap %s left behind (%v)", ConfigMapName(topology), err)
	}
}

// TestUpdateRollsResized: an update scales at the end and replaces only
// the pods of containers whose resources changed, which ReplacedBy names.
func TestUpdateRollsResized(t *testing.T) {
	f := kubetest.NewCluster(t, testNS)
	sc := newTestScheduler(t, f.Clientset, testConfig())
	before := runningJob(t, f, sc)

	job := testJob()
	job.Plan.Containers[1].Required.RAM = 7 << 30 // container 2 grows
	job.Plan.Containers = append(job.Plan.Containers, plan.Container{ID: 3, Required: plan.Resources{CPU: 1, RAM: 1 << 30, Disk: 1 << 30}})
	if err := sc.Update(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	var after map[int]string
	waitFor(t, "containers 0..3", func() bool { after = observe(t, f, "wordcount"); return len(after) == 4 })
	if after[0] != before[0] || after[1] != before[1] {
		t.Errorf("unchanged containers 0 and 1 were replaced: %v → %v", before, after)
	}
	if after[2] == before[2] {
		t.Errorf("resized container 2 was not replaced: %v → %v", before, after)
	}
	var r spi.Replacer = sc
	if got := r.ReplacedBy(testJob().Plan, job.Plan); len(got) != 1 || got[0] != 2 {
		t.Errorf("ReplacedBy = %v, want [2], the container whose pod Update replaced", got)
	}
	sts, err := f.AppsV1().StatefulSets(testNS).Get(context.Background(), "wordcount", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *sts.Spec.Replicas != 4 {
		t.Errorf("replicas %d, want 4", *sts.Spec.Replicas)
	}
	if got := sts.Spec.Template.Spec.Containers[0].Resources.Limits.Memory(); got.Cmp(resource.MustParse("7Gi")) != 0 {
		t.Errorf("template memory %s, want the new largest 7Gi", got)
	}
	res, err := decodeResources(sts.Annotations[AnnotationResources])
	if err != nil || res[2].RAM != 7<<30 || res[3].CPU != 1 || len(res) != 4 {
		t.Errorf("resources annotation %v, %v", res, err)
	}

	// A plan with a hole cannot be a StatefulSet: refused, nothing changes.
	job = testJob()
	job.Plan.Containers[1].ID = 3
	if err := sc.Update(context.Background(), job); !errors.Is(err, spi.ErrUnsupported) {
		t.Errorf("update to containers 1 and 3: %v, want ErrUnsupported", err)
	}
	if err := sc.RemoveContainers(context.Background(), "wordcount", []plan.Container{{ID: 1}}); !errors.Is(err, spi.ErrUnsupported) {
		t.Errorf("removing container 1 of 0..3: %v, want ErrUnsupported", err)
	}
	if err := sc.AddContainers(context.Background(), "wordcount", []plan.Container{{ID: 9}}); !errors.Is(err, spi.ErrUnsupported) {
		t.Errorf("adding container 9 to 0..3: %v, want ErrUnsupported", err)
	}
	if got := observe(t, f, "wordcount"); len(got) != 4 || got[1] != after[1] {
		t.Errorf("refused updates changed the containers: %v → %v", after, got)
	}
	if err := sc.Update(context.Background(), spi.Job{Topology: "nothere", Plan: testJob().Plan}); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("update of a topology that does not run: %v", err)
	}
}

func TestScheduleExists(t *testing.T) {
	f := kubetest.NewCluster(t, testNS)
	sc := newTestScheduler(t, f.Clientset, testConfig())
	ctx := context.Background()
	foreign := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "wordcount", Namespace: testNS}, Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(0))}}
	if _, err := f.AppsV1().StatefulSets(testNS).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := sc.Schedule(ctx, testJob())
	if !errors.Is(err, spi.ErrExists) || !strings.Contains(err.Error(), "egret did not create") {
		t.Errorf("got %v", err)
	}
	if _, err := f.CoreV1().Services(testNS).Get(ctx, "wordcount", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Error("a refused submit created the Service")
	}
	// Kill leaves an object that egret did not create alone.
	if err := sc.Kill(ctx, "wordcount"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AppsV1().StatefulSets(testNS).Get(ctx, "wordcount", metav1.GetOptions{}); err != nil {
		t.Errorf("Kill deleted a StatefulSet egret did not create: %v", err)
	}
}

// TestStaleObjects: a ConfigMap and Service of the topology left without
// their StatefulSet (a kill cut short) do not block a new submit.
func TestStaleObjects(t *testing.T) {
	f := kubetest.NewCluster(t, testNS)
	sc := newTestScheduler(t, f.Clientset, testConfig())
	ctx := context.Background()
	objs, err := sc.s.build(testJob(), testNS)
	if err != nil {
		t.Fatal(err)
	}
	objs.ConfigMap.Data[configKey] = "old"
	if _, err := f.CoreV1().ConfigMaps(testNS).Create(ctx, objs.ConfigMap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.CoreV1().Services(testNS).Create(ctx, objs.Service, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runningJob(t, f, sc)
	cm, err := f.CoreV1().ConfigMaps(testNS).Get(ctx, ConfigMapName("wordcount"), metav1.GetOptions{})
	if err != nil || cm.Data[configKey] == "old" {
		t.Errorf("the stale ConfigMap was not replaced: %v %v", cm.Data, err)
	}
	if err := sc.Kill(ctx, "wordcount"); err != nil {
		t.Fatal(err)
	}
	noObjects(t, f.Clientset, "wordcount")
	if len(observe(t, f, "wordcount")) != 0 {
		t.Error("pods left after Kill")
	}
	if err := sc.Kill(ctx, "wordcount"); err != nil {
		t.Errorf("second Kill: %v", err)
	}
	if err := sc.Kill(ctx, "Not_A_Name"); err != nil {
		t.Errorf("Kill of a name no object can have: %v", err)
	}
}

// TestUnschedulable: the scheduler's message after the wait, nothing left;
// egret.kubernetes.schedule.timeout 0 does not wait.
func TestUnschedulable(t *testing.T) {
	f := kubetest.NewCluster(t, testNS)
	job := testJob()
	job.Plan.Containers[0].Required.CPU = 64 // no node has 64 cores
	sc := newTestScheduler(t, f.Clientset, testConfig(KeyScheduleTimeout, "200ms"))
	start := time.Now()
	err := sc.Schedule(context.Background(), job)
	if !errors.Is(err, spi.ErrCannotFit) || !strings.Contains(err.Error(), "unschedulable: 0/1 nodes are available: 1 Insufficient cpu") ||
		!strings.Contains(err.Error(), "after 200ms (egret.kubernetes.schedule.timeout)") || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v", err)
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Errorf("failed after %s, before the configured wait", time.Since(start))
	}
	noObjects(t, f.Clientset, "wordcount")

	sc = newTestScheduler(t, f.Clientset, testConfig(KeyScheduleTimeout, "0s"))
	if err := sc.Schedule(context.Background(), job); err != nil {
		t.Errorf("with no wait, submit returns at once: %v", err)
	}
	waitFor(t, "the pods to be created", func() bool {
		l, err := f.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(l.Items) == 3
	})
	d, err := sc.Diagnose(context.Background(), "wordcount")
	if err != nil || !strings.Contains(d, "container 0: pod wordcount-0: unschedulable: 0/1 nodes are available: 1 Insufficient cpu") {
		t.Errorf("Diagnose: %q, %v", d, err)
	}
}

// TestFailedCreate: pods the StatefulSet controller cannot create (a
// quota) are reported with its event.
func TestFailedCreate(t *testing.T) {
	f := kubetest.NewFake() // no controller: no pod appears
	ctx := context.Background()
	_, err := f.CoreV1().Events(testNS).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "wordcount.1", Namespace: testNS},
		InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Name: "wordcount", Namespace: testNS},
		Reason:         "FailedCreate", Type: corev1.EventTypeWarning,
		Message: `create Pod wordcount-0 in StatefulSet wordcount failed error: pods "wordcount-0" is forbidden: exceeded quota: compute, requested: limits.memory=5Gi, used: limits.memory=0, limited: limits.memory=4Gi`,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc := newTestScheduler(t, f, testConfig(KeyScheduleTimeout, "50ms"))
	err = sc.Schedule(ctx, testJob())
	if err == nil || !strings.Contains(err.Error(), "pods wordcount-0, wordcount-1, wordcount-2: the StatefulSet cannot create it: create Pod wordcount-0 in StatefulSet wordcount failed error: pods \"wordcount-0\" is forbidden: exceeded quota") {
		t.Errorf("got %v", err)
	}
	noObjects(t, f, "wordcount")
}

// TestDeleteTimeout: Kill waits at most egret.kubernetes.delete.timeout
// for the pods to end.
func TestDeleteTimeout(t *testing.T) {
	f := kubetest.NewCluster(t, testNS)
	sc := newTestScheduler(t, f.Clientset, testConfig(KeyDeleteTimeout, "100ms"))
	runningJob(t, f, sc)
	// Pods that never end (a node that does not answer).
	f.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	start := time.Now()
	err := sc.Kill(context.Background(), "wordcount")
	if err == nil || !strings.Contains(err.Error(), "pods [wordcount-0 wordcount-1 wordcount-2] still terminate after 100ms (egret.kubernetes.delete.timeout)") {
		t.Errorf("got %v", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 5*time.Second {
		t.Errorf("Kill returned after %s", d)
	}
	noObjects(t, f.Clientset, "wordcount")
}

func TestRestart(t *testing.T) {
	f := kubetest.NewCluster(t, testNS)
	sc := newTestScheduler(t, f.Clientset, testConfig())
	before := runningJob(t, f, sc)
	if err := sc.Restart(context.Background(), "wordcount", 2); err != nil {
		t.Fatal(err)
	}
	var after map[int]string
	waitFor(t, "pod 2 replaced", func() bool { after = observe(t, f, "wordcount"); return len(after) == 3 && after[2] != before[2] })
	if after[0] != before[0] || after[1] != before[1] {
		t.Errorf("Restart(2) replaced others: %v → %v", before, after)
	}
	for _, c := range []int{3, -2} {
		if err := sc.Restart(context.Background(), "wordcount", c); !errors.Is(err, spi.ErrNotFound) {
			t.Errorf("Restart(%d): %v", c, err)
		}
	}
	if err := sc.Restart(context.Background(), "other", 0); !errors.Is(err, spi.ErrNotFound) {
		t.Errorf("Restart of a topology that does not run: %v", err)
	}
}

func TestDiagnose(t *testing.T) {
	f := kubetest.NewCluster(t, testNS)
	sc := newTestScheduler(t, f.Clientset, testConfig())
	runningJob(t, f, sc)
	if d, err := sc.Diagnose(context.Background(), "wordcount"); d != "" || err != nil {
		t.Errorf("Diagnose of a running topology: %q, %v", d, err)
	}
	pod, err := f.CoreV1().Pods(testNS).Get(context.Background(), "wordcount-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodPending
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "ImagePullBackOff", Message: `Back-off pulling image "egret/egret:latest"`,
	}}}}
	if _, err := f.CoreV1().Pods(testNS).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := sc.Diagnose(context.Background(), "wordcount")
	if err != nil || d != `container 1: pod wordcount-1: container executor is waiting: ImagePullBackOff: Back-off pulling image "egret/egret:latest" (kubectl -n egret-test describe pod ... shows more)` {
		t.Errorf("Diagnose: %q, %v", d, err)
	}
}

// TestKeyEffects checks what each key changes in the manifests.
func TestKeyEffects(t *testing.T) {
	render := func(t *testing.T, kv ...string) *appsv1.StatefulSet {
		t.Helper()
		sc := newTestScheduler(t, nil, testConfig(kv...))
		out, err := sc.RenderJob(testJob())
		if err != nil {
			t.Fatal(err)
		}
		_, _, sts := decodeManifests(t, out)
		return sts
	}
	spec := func(sts *appsv1.StatefulSet) corev1.PodSpec { return sts.Spec.Template.Spec }
	if s := spec(render(t, KeyServiceAccount, "runner")); s.ServiceAccountName != "runner" {
		t.Errorf("%s: %q", KeyServiceAccount, s.ServiceAccountName)
	}
	if s := spec(render(t, KeyImage, "reg/egret:9", KeyImagePullPolicy, "Never")); s.Containers[0].Image != "reg/egret:9" || s.Containers[0].ImagePullPolicy != corev1.PullNever || s.InitContainers[0].ImagePullPolicy != corev1.PullNever {
		t.Errorf("%s/%s: %+v", KeyImage, KeyImagePullPolicy, s.Containers[0])
	}
	if s := spec(render(t, KeyInitImage, "reg/tools:1")); s.InitContainers[0].Image != "reg/tools:1" {
		t.Errorf("%s: %q", KeyInitImage, s.InitContainers[0].Image)
	}
	if s := spec(render(t, keyStopGrace, "50s")); *s.TerminationGracePeriodSeconds != 55 {
		t.Errorf("%s: grace %d", keyStopGrace, *s.TerminationGracePeriodSeconds)
	}
	if s := spec(render(t, keyCoreBundle, "false")); s.Containers[0].Command[0] != "egret" {
		t.Errorf("without a core URI or bundle the image's egret runs: %v", s.Containers[0].Command)
	}
	s := spec(render(t, keyCoreBundle, "false", keyCoreURI, "https://dl/egret"))
	if s.Containers[0].Command[0] != coreBinary || !strings.Contains(envValue(s.InitContainers[0].Env, "EGRET_CORE_URI"), "https://dl/egret") {
		t.Errorf("%s: %v %v", keyCoreURI, s.Containers[0].Command, s.InitContainers[0].Env)
	}
	// The topology manager's container is the largest: the template follows.
	sts := render(t, KeyTManagerCPU, "6", KeyTManagerRAM, "9GiB", KeyTManagerDisk, "3GiB")
	l := spec(sts).Containers[0].Resources.Limits
	if l.Cpu().String() != "6" || l.Memory().String() != "9Gi" || l.StorageEphemeral().String() != "3Gi" {
		t.Errorf("tmanager keys: limits %v", l)
	}
	if !strings.Contains(sts.Annotations[AnnotationResources], `"0":{"cpu":6,"ram":9663676416,"disk":3221225472}`) {
		t.Errorf("tmanager keys: %s", sts.Annotations[AnnotationResources])
	}
}

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestNoPodIndexLabel: on a Kubernetes older than 1.28 the pods have no
// pod-index label; submit says so and removes what it created.
func TestNoPodIndexLabel(t *testing.T) {
	f := kubetest.NewFake()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wordcount-0", Namespace: testNS, Labels: selector("wordcount")}}
	if _, err := f.CoreV1().Pods(testNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sc := newTestScheduler(t, f, testConfig())
	err := sc.Schedule(ctx, testJob())
	if err == nil || !strings.Contains(err.Error(), "pod wordcount-0 has no label apps.kubernetes.io/pod-index") || !strings.Contains(err.Error(), "the topology's objects were removed") {
		t.Errorf("got %v", err)
	}
	noObjects(t, f, "wordcount")
}

// TestOldServerVersion: an API server older than 1.28 (no pod-index
// label) is refused before anything is created.
func TestOldServerVersion(t *testing.T) {
	f := kubetest.NewFake()
	f.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{Major: "1", Minor: "27+", GitVersion: "v1.27.3-gke.100"}
	sc := newTestScheduler(t, f, testConfig())
	err := sc.Schedule(context.Background(), testJob())
	if !errors.Is(err, spi.ErrUnsupported) || !strings.Contains(err.Error(), "runs Kubernetes v1.27.3-gke.100") || !strings.Contains(err.Error(), "use Kubernetes 1.28 or later") {
		t.Fatalf("got %v", err)
	}
	for _, a := range f.Actions() {
		if a.GetVerb() == "create" {
			t.Errorf("%s %s sent", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestDryRunFirst: the objects are checked with a server-side dry run
// before the first is created, and a rejection creates nothing.
func TestDryRunFirst(t *testing.T) {
	f := kubetest.NewFake()
	f.PrependReactor("create", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if ca := a.(k8stesting.CreateActionImpl); len(ca.CreateOptions.DryRun) > 0 {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "wordcount",
				field.ErrorList{field.Required(field.NewPath("spec", "template", "spec", "containers").Index(0).Child("image"), "")})
		}
		return false, nil, nil
	})
	sc := newTestScheduler(t, f, testConfig())
	err := sc.Schedule(context.Background(), testJob())
	if err == nil || !strings.Contains(err.Error(), "the API server rejects the topology's StatefulSet egret-test/wordcount, so nothing was created") ||
		!strings.Contains(err.Error(), "spec.template.spec.containers[0].image: Required value") {
		t.Fatalf("got %v", err)
	}
	var dry, real int
	for _, a := range f.Actions() {
		if ca, ok := a.(k8stesting.CreateActionImpl); ok {
			if len(ca.CreateOptions.DryRun) > 0 {
				dry++
			} else {
				real++
			}
		}
	}
	if dry != 3 || real != 0 {
		t.Errorf("%d dry-run creates, %d real ones; want 3 and 0", dry, real)
	}
	noObjects(t, f, "wordcount")
}
