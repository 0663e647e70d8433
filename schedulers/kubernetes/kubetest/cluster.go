package kubetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// labelTopology is the label of the egret scheduler that names a pod's
// topology (kubetest does not import the scheduler).
const labelTopology = "egret.io/topology"

// Cluster is the fake clientset plus a goroutine that stands in for
// the parts of Kubernetes the fake does not run: the StatefulSet
// controller (pods 0..replicas-1 from the template, those beyond deleted,
// deleted ones created again), the garbage collector (pods of a deleted
// StatefulSet deleted), the scheduler (a pod whose requests exceed the one
// node's allocatable stays Pending with PodScheduled=False/Unschedulable
// and a FailedScheduling event) and the kubelet (a placed pod is Running).
// It does not run any process.
type Cluster struct {
	*fake.Clientset
	ns               string
	nodeCPU, nodeMem resource.Quantity

	// BeforeUpdate, when set, is called by the HTTP facade before it
	// applies an update (resource "statefulsets", name), so that a test
	// can change the object meanwhile.
	BeforeUpdate func(resource, name string)

	mu      sync.Mutex
	version int64 // the facade's last resourceVersion
}

// NewCluster starts a fake cluster whose controllers act on namespace
// (until the test ends).
func NewCluster(t testing.TB, namespace string) *Cluster {
	t.Helper()
	f := &Cluster{Clientset: NewFake(), ns: namespace, nodeCPU: resource.MustParse("8"), nodeMem: resource.MustParse("16Gi")}
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

func (f *Cluster) reconcile(ctx context.Context) {
	stsList, err := f.AppsV1().StatefulSets(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	live := map[string]*appsv1.StatefulSet{}
	for i := range stsList.Items {
		live[stsList.Items[i].Name] = &stsList.Items[i]
	}
	pods, err := f.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{})
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
			_ = f.CoreV1().Pods(f.ns).Delete(ctx, p.Name, metav1.DeleteOptions{})
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

func (f *Cluster) createPod(ctx context.Context, sts *appsv1.StatefulSet, i int) {
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
		return // created meanwhile, or the test is ending
	}
	if why != "" {
		_, _ = f.CoreV1().Events(sts.Namespace).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name + "." + hex.EncodeToString(b[:4]), Namespace: sts.Namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: name, Namespace: sts.Namespace, UID: p.UID},
			Reason:         "FailedScheduling", Message: why, Type: corev1.EventTypeWarning,
			LastTimestamp: metav1.Now(),
		}, metav1.CreateOptions{})
	}
}

// Containers observes the running pods of topology: container index → UID.
func (f *Cluster) Containers(ctx context.Context, topology string) (map[int]string, error) {
	l, err := f.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: labelTopology + "=" + topology})
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
