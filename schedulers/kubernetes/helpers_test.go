package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/egret-stream/egret/core/spi"
)

const testNS = "egret-test"

// fakeCluster is the fake clientset plus a goroutine that stands in for
// the parts of Kubernetes the fake does not run: the StatefulSet
// controller (pods 0..replicas-1 from the template, those beyond deleted,
// deleted ones created again), the garbage collector (pods of a deleted
// StatefulSet deleted), the scheduler (a pod whose requests exceed the one
// node's allocatable stays Pending with PodScheduled=False/Unschedulable
// and a FailedScheduling event) and the kubelet (a placed pod is Running).
// It does not run any process.
type fakeCluster struct {
	*fake.Clientset
	nodeCPU, nodeMem resource.Quantity

	mu      sync.Mutex
	created int // pods created by the fake controller
}

func newFakeCluster(t *testing.T) *fakeCluster {
	t.Helper()
	f := &fakeCluster{Clientset: fake.NewClientset(), nodeCPU: resource.MustParse("8"), nodeMem: resource.MustParse("16Gi")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			f.reconcile(ctx)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

func (f *fakeCluster) reconcile(ctx context.Context) {
	stsList, err := f.AppsV1().StatefulSets(testNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	live := map[string]*appsv1.StatefulSet{}
	for i := range stsList.Items {
		live[stsList.Items[i].Name] = &stsList.Items[i]
	}
	pods, err := f.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	have := map[string]bool{}
	for _, p := range pods.Items {
		owner := ""
		for _, o := range p.OwnerReferences {
			if o.Kind == "StatefulSet" {
				owner = o.Name
			}
		}
		sts := live[owner]
		idx, _ := strconv.Atoi(p.Labels[appsv1.PodIndexLabel])
		if owner != "" && (sts == nil || idx >= int(*sts.Spec.Replicas)) {
			_ = f.CoreV1().Pods(testNS).Delete(ctx, p.Name, metav1.DeleteOptions{})
			continue
		}
		have[p.Name] = true
	}
	for _, sts := range live {
		for i := range int(*sts.Spec.Replicas) {
			name := fmt.Sprintf("%s-%d", sts.Name, i)
			if !have[name] {
				f.createPod(ctx, sts, i)
			}
		}
	}
}

func (f *fakeCluster) createPod(ctx context.Context, sts *appsv1.StatefulSet, i int) {
	name := fmt.Sprintf("%s-%d", sts.Name, i)
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: sts.Namespace, UID: types.UID(hex.EncodeToString(b)),
			Labels:          map[string]string{},
			Annotations:     sts.Spec.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID}},
		},
		Spec: *sts.Spec.Template.Spec.DeepCopy(),
	}
	for k, v := range sts.Spec.Template.Labels {
		p.Labels[k] = v
	}
	p.Labels[appsv1.PodIndexLabel] = strconv.Itoa(i)
	p.Labels["statefulset.kubernetes.io/pod-name"] = name
	p.Spec.Hostname, p.Spec.Subdomain = name, sts.Spec.ServiceName
	var why string
	for _, c := range p.Spec.Containers {
		if c.Resources.Requests.Cpu().Cmp(f.nodeCPU) > 0 {
			why = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
		}
		if c.Resources.Requests.Memory().Cmp(f.nodeMem) > 0 {
			why = "0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
		}
	}
	if why == "" {
		p.Spec.NodeName = "node-1"
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
	} else {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: why,
		}}}
	}
	if _, err := f.CoreV1().Pods(sts.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return
		}
		return
	}
	f.mu.Lock()
	f.created++
	f.mu.Unlock()
	if why != "" {
		_, _ = f.CoreV1().Events(sts.Namespace).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name + "." + hex.EncodeToString(b[:4]), Namespace: sts.Namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: name, Namespace: sts.Namespace, UID: p.UID},
			Reason:         "FailedScheduling", Message: why, Type: corev1.EventTypeWarning,
			LastTimestamp: metav1.Now(),
		}, metav1.CreateOptions{})
	}
}

// containers observes the running pods of topology: container index → UID.
func (f *fakeCluster) containers(ctx context.Context, topology string) (map[int]string, error) {
	l, err := f.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: LabelTopology + "=" + topology})
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, p := range l.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		idx, err := strconv.Atoi(p.Labels[appsv1.PodIndexLabel])
		if err != nil {
			return nil, fmt.Errorf("pod %s has no pod-index label", p.Name)
		}
		out[idx] = string(p.UID)
	}
	return out, nil
}

// testConfig is a valid scheduler config for the tests.
func testConfig(extra ...string) spi.Config {
	c := spi.Config{
		KeyNamespace:       testNS,
		KeyScheduleTimeout: "5s",
		KeyDeleteTimeout:   "5s",
		keyCoreBundle:      "true",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i]] = extra[i+1]
	}
	return c
}

// newTestScheduler builds a scheduler on the fake cluster.
func newTestScheduler(t *testing.T, f *fakeCluster, cfg spi.Config) *Scheduler {
	t.Helper()
	s, err := parseSettings(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := s.namespace
	if ns == "" {
		ns = "default"
	}
	var sc *Scheduler
	if f == nil { // rendering only
		sc = newScheduler(s, nil, ns, zaptest.NewLogger(t))
	} else {
		sc = newScheduler(s, f.Clientset, ns, zaptest.NewLogger(t))
	}
	sc.poll = 5 * time.Millisecond
	return sc
}

const testPackageURI = "http://packages.example/wordcount-0123456789ab.tar.gz"
const testSHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
