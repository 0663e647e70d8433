package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
)

func init() { spi.RegisterScheduler("kubernetes", New, configKeys...) }

// DryRunFormat is the --dry-run-format that prints the manifests.
const DryRunFormat = "kubernetes-yaml"

// Scheduler runs topologies as StatefulSets. It keeps no state of its own:
// every call finds the topology's objects again by name and labels.
type Scheduler struct {
	s      *settings
	client kubernetes.Interface
	// clientErr is why no client could be built (no kubeconfig, say); it
	// is reported by every call that needs the API server, not by New, so
	// that a dry run works without one.
	clientErr error
	ns        string
	host      string // the API server, for messages
	log       *zap.Logger
	closed    atomic.Bool
	// poll is the pause between two looks at the pods.
	poll time.Duration
}

var (
	_ spi.Scheduler    = (*Scheduler)(nil)
	_ spi.Scalable     = (*Scheduler)(nil)
	_ spi.JobRenderer  = (*Scheduler)(nil)
	_ spi.JobFormatter = (*Scheduler)(nil)
	_ spi.Diagnoser    = (*Scheduler)(nil)
	_ spi.Checker      = (*Scheduler)(nil)
)

// New builds the Kubernetes scheduler from the cluster config. It does not
// contact the API server.
func New(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	s, err := parseSettings(cfg)
	if err != nil {
		return nil, err
	}
	sc := newScheduler(s, nil, s.namespace, log)
	rc, ns, err := s.restConfig()
	if err != nil {
		sc.clientErr = err
		return sc, nil
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		sc.clientErr = fmt.Errorf("kubernetes scheduler: client for %s: %s", rc.Host, oneLine(err.Error()))
		return sc, nil
	}
	sc.client, sc.ns, sc.host = client, ns, rc.Host
	return sc, nil
}

// newScheduler builds a scheduler on client (a fake clientset in tests).
func newScheduler(s *settings, client kubernetes.Interface, ns string, log *zap.Logger) *Scheduler {
	if log == nil {
		log = zap.NewNop()
	}
	return &Scheduler{s: s, client: client, ns: ns, log: log.Named("kubernetes"), poll: 500 * time.Millisecond}
}

// Schedule creates the topology's ConfigMap, headless Service and
// StatefulSet, then waits (at most egret.kubernetes.schedule.timeout)
// until the Kubernetes scheduler has bound every pod to a node. A topology
// that already runs gives spi.ErrExists; when a pod cannot be placed, the
// objects are deleted again and the error (wrapping spi.ErrCannotFit)
// carries the scheduler's message.
func (sc *Scheduler) Schedule(ctx context.Context, job spi.Job) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	objs, err := sc.s.build(job, sc.ns)
	if err != nil {
		return err
	}
	name := job.Topology
	cur, err := sc.client.AppsV1().StatefulSets(sc.ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && ours(cur, name):
		return fmt.Errorf("kubernetes scheduler: topology %q already runs as StatefulSet %s/%s; kill it first: %w", name, sc.ns, name, spi.ErrExists)
	case err == nil:
		return fmt.Errorf("kubernetes scheduler: a StatefulSet %s/%s that egret did not create exists; rename the topology or use another namespace: %w", sc.ns, name, spi.ErrExists)
	case !apierrors.IsNotFound(err):
		return sc.fail(ctx, "look up StatefulSet "+name, err)
	}
	if err := sc.checkVersion(ctx); err != nil {
		return err
	}
	if err := sc.dryRun(ctx, objs); err != nil {
		return err
	}
	if err := sc.create(ctx, objs); err != nil {
		return err
	}
	sc.log.Info("created topology", zap.String("statefulset", sc.ns+"/"+name), zap.Int32("replicas", *objs.StatefulSet.Spec.Replicas))
	if err := sc.waitScheduled(ctx, name, int(*objs.StatefulSet.Spec.Replicas), nil); err != nil {
		if derr := sc.deleteAll(context.WithoutCancel(ctx), name); derr != nil {
			return fmt.Errorf("%w; removing the topology's objects failed too (%v): run egret kill again", err, derr)
		}
		return fmt.Errorf("%w; the topology's objects were removed", err)
	}
	return nil
}

// minPodIndex is the first Kubernetes minor version (1.x) whose
// StatefulSet controller sets the apps.kubernetes.io/pod-index label
// (feature gate PodIndexLabel, on by default from 1.28), which gives each
// pod its container index.
const minPodIndex = 28

// checkVersion refuses an API server older than 1.28, before anything is
// created. A version the server does not report in numbers (a
// distribution's own scheme) is let through: the pods' wait then reports
// a missing label.
func (sc *Scheduler) checkVersion(ctx context.Context) error {
	v, err := sc.client.Discovery().ServerVersion()
	if err != nil {
		return sc.fail(ctx, "read the server version", err)
	}
	major, err1 := strconv.Atoi(strings.TrimRight(v.Major, "+"))
	minor, err2 := strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	if err1 != nil || err2 != nil {
		sc.log.Warn("the API server reports no numeric version; assuming it sets the pod-index label", zap.String("version", v.GitVersion))
		return nil
	}
	if major < 1 || (major == 1 && minor < minPodIndex) {
		return fmt.Errorf("kubernetes scheduler: the API server %s runs Kubernetes %s, whose StatefulSet pods have no %s label (it gives each pod its container index): use Kubernetes 1.%d or later: %w",
			sc.host, v.GitVersion, appsv1.PodIndexLabel, minPodIndex, spi.ErrUnsupported)
	}
	return nil
}

// dryRun has the API server check the objects (a server-side dry run:
// admission, defaulting and validation, strict field validation, nothing
// stored), so that a pod template patch or a setting the server rejects
// fails the submission before anything is created.
func (sc *Scheduler) dryRun(ctx context.Context, o *Objects) error {
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict}
	check := func(kind, name string, err error) error {
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			// Validation passed (a stale object is replaced later).
			return nil
		case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
			var status apierrors.APIStatus
			msg := err.Error()
			if errors.As(err, &status) {
				msg = status.Status().Message
			}
			return fmt.Errorf("kubernetes scheduler: the API server rejects the topology's %s %s/%s, so nothing was created: %s (check %s and the other %s keys)",
				kind, sc.ns, name, oneLine(msg), KeyPodTemplatePatch, "egret.kubernetes.*")
		default:
			return sc.fail(ctx, "check "+kind+" "+name+" (server-side dry run)", err)
		}
	}
	_, err := sc.client.CoreV1().ConfigMaps(sc.ns).Create(ctx, o.ConfigMap, opts)
	if err := check("ConfigMap", o.ConfigMap.Name, err); err != nil {
		return err
	}
	_, err = sc.client.CoreV1().Services(sc.ns).Create(ctx, o.Service, opts)
	if err := check("Service", o.Service.Name, err); err != nil {
		return err
	}
	_, err = sc.client.AppsV1().StatefulSets(sc.ns).Create(ctx, o.StatefulSet, opts)
	return check("StatefulSet", o.StatefulSet.Name, err)
}

// create creates the objects in order; when one fails, those created
// before it are deleted again. Stale objects of the topology left without
// a StatefulSet (a kill that did not finish) are replaced.
func (sc *Scheduler) create(ctx context.Context, o *Objects) error {
	var undo []func(context.Context) error
	rollback := func(err error) error {
		uctx := context.WithoutCancel(ctx)
		for i := len(undo) - 1; i >= 0; i-- {
			if uerr := undo[i](uctx); uerr != nil && !apierrors.IsNotFound(uerr) {
				sc.log.Warn("could not remove an object of the failed submission", zap.Error(uerr))
			}
		}
		return err
	}
	name := o.StatefulSet.Name
	cms := sc.client.CoreV1().ConfigMaps(sc.ns)
	strict := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	if _, err := cms.Create(ctx, o.ConfigMap, strict); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return sc.fail(ctx, "create ConfigMap "+o.ConfigMap.Name, err)
		}
		if err := sc.replaceStale(ctx, "ConfigMap", o.ConfigMap.Name, name, func() (metav1.Object, error) {
			cur, err := cms.Get(ctx, o.ConfigMap.Name, metav1.GetOptions{})
			if err == nil && ours(cur, name) {
				o.ConfigMap.ResourceVersion = cur.ResourceVersion
				_, err = cms.Update(ctx, o.ConfigMap, metav1.UpdateOptions{})
			}
			return cur, err
		}); err != nil {
			return err
		}
	}
	undo = append(undo, func(c context.Context) error { return cms.Delete(c, o.ConfigMap.Name, metav1.DeleteOptions{}) })
	svcs := sc.client.CoreV1().Services(sc.ns)
	if _, err := svcs.Create(ctx, o.Service, strict); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return rollback(sc.fail(ctx, "create Service "+o.Service.Name, err))
		}
		if err := sc.replaceStale(ctx, "Service", o.Service.Name, name, func() (metav1.Object, error) {
			cur, err := svcs.Get(ctx, o.Service.Name, metav1.GetOptions{})
			if err == nil && ours(cur, name) {
				o.Service.ResourceVersion = cur.ResourceVersion
				_, err = svcs.Update(ctx, o.Service, metav1.UpdateOptions{})
			}
			return cur, err
		}); err != nil {
			return rollback(err)
		}
	}
	undo = append(undo, func(c context.Context) error { return svcs.Delete(c, o.Service.Name, metav1.DeleteOptions{}) })
	if _, err := sc.client.AppsV1().StatefulSets(sc.ns).Create(ctx, o.StatefulSet, strict); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return rollback(fmt.Errorf("kubernetes scheduler: StatefulSet %s/%s was created by someone else meanwhile: %w", sc.ns, name, spi.ErrExists))
		}
		return rollback(sc.fail(ctx, "create StatefulSet "+name, err))
	}
	return nil
}

// replaceStale updates an object of the topology that exists without its
// StatefulSet; one that egret did not make for the topology is an error.
func (sc *Scheduler) replaceStale(ctx context.Context, kind, objName, topology string, update func() (metav1.Object, error)) error {
	cur, err := update()
	if err != nil {
		return sc.fail(ctx, "replace stale "+kind+" "+objName, err)
	}
	if !ours(cur, topology) {
		return fmt.Errorf("kubernetes scheduler: a %s %s/%s that egret did not create for topology %q exists; rename the topology or use another namespace: %w",
			kind, sc.ns, objName, topology, spi.ErrExists)
	}
	sc.log.Info("replaced a stale object of the topology", zap.String("kind", kind), zap.String("name", objName))
	return nil
}

// Kill deletes the topology's StatefulSet, its pods, Service and
// ConfigMap, and waits (at most egret.kubernetes.delete.timeout) until
// its pods are gone. Killing a topology without objects succeeds.
func (sc *Scheduler) Kill(ctx context.Context, topology string) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	if err := checkName(topology); err != nil {
		sc.log.Info("no Kubernetes object can carry this topology name: nothing to kill", zap.String("topology", topology))
		return nil
	}
	return sc.deleteAll(ctx, topology)
}

// deleteAll deletes every object of the topology that egret created and
// waits for its pods to end. Objects of another owner are left alone.
func (sc *Scheduler) deleteAll(ctx context.Context, topology string) error {
	bg := metav1.DeletePropagationBackground
	del := func(kind, name string, get func() (metav1.Object, error), remove func(metav1.DeleteOptions) error) error {
		cur, err := get()
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return sc.fail(ctx, "look up "+kind+" "+name, err)
		}
		if !ours(cur, topology) {
			sc.log.Warn("leaving alone an object egret did not create", zap.String("kind", kind), zap.String("name", name))
			return nil
		}
		uid := cur.GetUID()
		opts := metav1.DeleteOptions{PropagationPolicy: &bg}
		if uid != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
		}
		if err := remove(opts); err != nil && !apierrors.IsNotFound(err) {
			return sc.fail(ctx, "delete "+kind+" "+name, err)
		}
		sc.log.Info("deleted", zap.String("kind", kind), zap.String("name", sc.ns+"/"+name))
		return nil
	}
	sts := sc.client.AppsV1().StatefulSets(sc.ns)
	if err := del("StatefulSet", topology, func() (metav1.Object, error) { return sts.Get(ctx, topology, metav1.GetOptions{}) },
		func(o metav1.DeleteOptions) error { return sts.Delete(ctx, topology, o) }); err != nil {
		return err
	}
	// The garbage collector deletes the pods of a deleted StatefulSet;
	// deleting them here too does not depend on it.
	pods, err := sc.pods(ctx, topology)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if err := sc.client.CoreV1().Pods(sc.ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return sc.fail(ctx, "delete pod "+p.Name, err)
		}
	}
	svcs := sc.client.CoreV1().Services(sc.ns)
	if err := del("Service", topology, func() (metav1.Object, error) { return svcs.Get(ctx, topology, metav1.GetOptions{}) },
		func(o metav1.DeleteOptions) error { return svcs.Delete(ctx, topology, o) }); err != nil {
		return err
	}
	cms := sc.client.CoreV1().ConfigMaps(sc.ns)
	cm := ConfigMapName(topology)
	if err := del("ConfigMap", cm, func() (metav1.Object, error) { return cms.Get(ctx, cm, metav1.GetOptions{}) },
		func(o metav1.DeleteOptions) error { return cms.Delete(ctx, cm, o) }); err != nil {
		return err
	}
	return sc.waitGone(ctx, topology)
}

// waitGone waits until no pod of the topology is left.
func (sc *Scheduler) waitGone(ctx context.Context, topology string) error {
	deadline := time.Now().Add(sc.s.deleteTimeout)
	for {
		pods, err := sc.pods(ctx, topology)
		if err != nil {
			return err
		}
		if len(pods) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			names := make([]string, 0, len(pods))
			for _, p := range pods {
				names = append(names, p.Name)
			}
			slices.Sort(names)
			return fmt.Errorf("kubernetes scheduler: topology %q: its objects are deleted, but pods %v still terminate after %s (%s); they end by themselves",
				topology, names, sc.s.deleteTimeout, KeyDeleteTimeout)
		}
		if err := sc.sleep(ctx); err != nil {
			return err
		}
	}
}

// Restart deletes the pod of one container, or every pod with
// spi.AllContainers; the StatefulSet controller creates them again.
func (sc *Scheduler) Restart(ctx context.Context, topology string, container int) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	sts, err := sc.statefulSet(ctx, topology)
	if err != nil {
		return err
	}
	n := int(deref(sts.Spec.Replicas))
	want := make([]int, 0, n)
	if container == spi.AllContainers {
		for i := range n {
			want = append(want, i)
		}
	} else {
		if container < 0 || container >= n {
			return fmt.Errorf("kubernetes scheduler: topology %q has no container %d (containers 0..%d): %w", topology, container, n-1, spi.ErrNotFound)
		}
		want = append(want, container)
	}
	for _, c := range want {
		pod := PodName(topology, c)
		err := sc.client.CoreV1().Pods(sc.ns).Delete(ctx, pod, metav1.DeleteOptions{})
		switch {
		case apierrors.IsNotFound(err):
			sc.log.Info("pod is being created; not deleting it", zap.String("pod", pod))
		case err != nil:
			return sc.fail(ctx, "delete pod "+pod, err)
		default:
			sc.log.Info("deleted pod; the StatefulSet creates it again", zap.String("pod", pod))
		}
	}
	return nil
}

// Update applies the new packing plan (job.Plan, containers 1..N): the
// StatefulSet is scaled to N+1 pods (containers added or removed at the
// end), its template takes the new largest resources, and the pods of
// containers whose resources changed are replaced one by one; the other
// pods keep running. The package and the cluster config stay the running
// topology's.
func (sc *Scheduler) Update(ctx context.Context, job spi.Job) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	if job.Plan == nil {
		return errors.New("kubernetes scheduler: update without a packing plan")
	}
	if err := checkPlan(job.Plan); err != nil {
		return fmt.Errorf("kubernetes scheduler: update topology %q: %w", job.Topology, err)
	}
	return sc.resize(ctx, job.Topology, func(cur map[int]plan.Resources) (map[int]plan.Resources, error) {
		next := sc.s.containerResources(job.Plan)
		if r, ok := cur[0]; ok {
			next[0] = r // the running topology manager's
		}
		return next, nil
	})
}

// ReplacedBy returns the containers of both plans whose resources differ:
// Update deletes their pods, which the StatefulSet controller creates
// again with the new resources, so every process in them restarts
// (spi.Replacer).
func (sc *Scheduler) ReplacedBy(current, next *plan.PackingPlan) []int {
	return plan.Resized(current, next)
}

// AddContainers adds pods for containers, which must be the next ones
// (a StatefulSet grows at the end).
func (sc *Scheduler) AddContainers(ctx context.Context, topology string, containers []plan.Container) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	return sc.resize(ctx, topology, func(cur map[int]plan.Resources) (map[int]plan.Resources, error) {
		next := maps.Clone(cur)
		for _, c := range containers {
			if _, ok := next[c.ID]; ok {
				return nil, fmt.Errorf("kubernetes scheduler: topology %q already has container %d: %w", topology, c.ID, spi.ErrExists)
			}
			next[c.ID] = c.Needs()
		}
		if err := contiguous(next); err != nil {
			return nil, fmt.Errorf("kubernetes scheduler: add containers to topology %q: %w", topology, err)
		}
		return next, nil
	})
}

// RemoveContainers removes the pods of containers, which must be the last
// ones (a StatefulSet shrinks at the end).
func (sc *Scheduler) RemoveContainers(ctx context.Context, topology string, containers []plan.Container) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	return sc.resize(ctx, topology, func(cur map[int]plan.Resources) (map[int]plan.Resources, error) {
		next := maps.Clone(cur)
		for _, c := range containers {
			if c.ID == 0 {
				return nil, errors.New("kubernetes scheduler: container 0 runs the topology manager and cannot be removed (kill the topology instead)")
			}
			if _, ok := next[c.ID]; !ok {
				return nil, fmt.Errorf("kubernetes scheduler: topology %q has no container %d: %w", topology, c.ID, spi.ErrNotFound)
			}
			delete(next, c.ID)
		}
		if err := contiguous(next); err != nil {
			return nil, fmt.Errorf("kubernetes scheduler: remove containers from topology %q: %w", topology, err)
		}
		return next, nil
	})
}

// contiguous requires containers 0..N.
func contiguous(res map[int]plan.Resources) error {
	for i := range len(res) {
		if _, ok := res[i]; !ok {
			ids := slices.Sorted(maps.Keys(res))
			return fmt.Errorf("containers %v: a StatefulSet runs pods 0..N only, so containers can be added and removed at the end only: %w", ids, spi.ErrUnsupported)
		}
	}
	return nil
}

// resize changes the StatefulSet to the containers next returns (given
// the running ones), then replaces the pods of resized containers and
// waits for every pod to be placed.
func (sc *Scheduler) resize(ctx context.Context, topology string, next func(map[int]plan.Resources) (map[int]plan.Resources, error)) error {
	var cur, want map[int]plan.Resources
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sts, err := sc.statefulSet(ctx, topology)
		if err != nil {
			return err
		}
		if cur, err = decodeResources(sts.Annotations[AnnotationResources]); err != nil {
			return fmt.Errorf("kubernetes scheduler: StatefulSet %s/%s: %w", sc.ns, topology, err)
		}
		if want, err = next(cur); err != nil {
			return err
		}
		sts.Spec.Replicas = ptr(int32(len(want)))
		sts.Annotations[AnnotationResources] = encodeResources(want)
		setResources(&sts.Spec.Template, largest(want))
		_, err = sc.client.AppsV1().StatefulSets(sc.ns).Update(ctx, sts, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) {
			return sc.fail(ctx, "update StatefulSet "+topology, err)
		}
		return err
	})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("kubernetes scheduler: StatefulSet %s/%s kept changing while it was being updated; try again: %w", sc.ns, topology, spi.ErrVersionConflict)
	}
	if err != nil {
		return err
	}
	sc.log.Info("updated StatefulSet", zap.String("statefulset", sc.ns+"/"+topology), zap.Int("replicas", len(want)))
	var resized []int
	for id, r := range want {
		if old, ok := cur[id]; ok && old != r {
			resized = append(resized, id)
		}
	}
	slices.Sort(resized)
	for _, id := range resized {
		if err := sc.replace(ctx, topology, id); err != nil {
			return err
		}
	}
	if err := sc.waitScheduled(ctx, topology, len(want), nil); err != nil {
		return fmt.Errorf("%w; the pods that were placed keep running, and Kubernetes places the others once resources free up (or update again with a smaller plan)", err)
	}
	return nil
}

// replace deletes the pod of container and waits until its successor is
// placed on a node, so that resized containers roll one at a time.
func (sc *Scheduler) replace(ctx context.Context, topology string, container int) error {
	name := PodName(topology, container)
	pods := sc.client.CoreV1().Pods(sc.ns)
	old, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return sc.fail(ctx, "look up pod "+name, err)
	}
	if err == nil {
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return sc.fail(ctx, "delete pod "+name, err)
		}
		sc.log.Info("replacing the pod of a resized container", zap.String("pod", name))
	}
	var oldUID string
	if old != nil {
		oldUID = string(old.UID)
	}
	return sc.waitScheduled(ctx, topology, container+1, func(p *corev1.Pod) bool {
		return p.Name != name || (string(p.UID) != oldUID && p.DeletionTimestamp == nil)
	})
}

// JobLinks returns no links: Kubernetes has no UI of its own that every
// cluster serves.
func (sc *Scheduler) JobLinks(ctx context.Context, topology string) ([]string, error) {
	if err := sc.check(ctx); err != nil {
		return nil, err
	}
	return nil, nil
}

// Close marks the scheduler closed; the topology keeps running. Later
// calls fail with spi.ErrClosed.
func (sc *Scheduler) Close() error {
	sc.closed.Store(true)
	return nil
}

// RenderJob returns the manifests Schedule would create, as YAML.
func (sc *Scheduler) RenderJob(job spi.Job) ([]byte, error) {
	ns := sc.ns
	if ns == "" {
		ns = "default"
	}
	objs, err := sc.s.build(job, ns)
	if err != nil {
		return nil, err
	}
	return RenderYAML(objs)
}

// JobFormat names what RenderJob prints.
func (sc *Scheduler) JobFormat() string { return DryRunFormat }

// Check lists the StatefulSets of the namespace: it fails when the API
// server cannot be reached or the user may not read them.
func (sc *Scheduler) Check(ctx context.Context) error {
	if err := sc.check(ctx); err != nil {
		return err
	}
	if _, err := sc.client.AppsV1().StatefulSets(sc.ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return sc.fail(ctx, "list StatefulSets", err)
	}
	return nil
}

// ---- helpers ----

func (sc *Scheduler) check(ctx context.Context) error {
	if sc.closed.Load() {
		return fmt.Errorf("kubernetes scheduler: %w", spi.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kubernetes scheduler: %w", err)
	}
	return sc.clientErr
}

// statefulSet returns the topology's StatefulSet (spi.ErrNotFound when it
// has none).
func (sc *Scheduler) statefulSet(ctx context.Context, topology string) (*appsv1.StatefulSet, error) {
	if err := checkName(topology); err != nil {
		return nil, fmt.Errorf("%w: %w", err, spi.ErrNotFound)
	}
	sts, err := sc.client.AppsV1().StatefulSets(sc.ns).Get(ctx, topology, metav1.GetOptions{})
	if err == nil && !ours(sts, topology) {
		err = apierrors.NewNotFound(appsv1.Resource("statefulsets"), topology)
	}
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("kubernetes scheduler: topology %q has no StatefulSet in namespace %q: %w", topology, sc.ns, spi.ErrNotFound)
	}
	if err != nil {
		return nil, sc.fail(ctx, "look up StatefulSet "+topology, err)
	}
	if sts.Annotations == nil {
		sts.Annotations = map[string]string{}
	}
	return sts, nil
}

// pods lists the pods of the topology.
func (sc *Scheduler) pods(ctx context.Context, topology string) ([]corev1.Pod, error) {
	l, err := sc.client.CoreV1().Pods(sc.ns).List(ctx, metav1.ListOptions{LabelSelector: selectorString(topology)})
	if err != nil {
		return nil, sc.fail(ctx, "list pods", err)
	}
	out := l.Items[:0]
	for _, p := range l.Items {
		if ours(&p, topology) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (sc *Scheduler) sleep(ctx context.Context) error {
	t := time.NewTimer(sc.poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("kubernetes scheduler: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
