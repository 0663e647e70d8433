package kubetest

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// What a real API server (kube-apiserver v1.34.4, internal/k8stest) did
// that the fake clientset did not, modelled here so that the fake and the
// HTTP facade answer alike:
//
//   - the server reports its version (the fake: client-go's own, v0.0.0);
//   - a create with dryRun=All validates and answers, and stores nothing
//     (the fake stored it);
//   - an update of a StatefulSet may change only replicas, ordinals,
//     template, updateStrategy, persistentVolumeClaimRetentionPolicy and
//     minReadySeconds; anything else is 422 Invalid, "Forbidden: updates
//     to statefulset spec for fields other than ...";
//   - a StatefulSet whose selector does not select its template's labels
//     is 422 Invalid;
//   - defaulting: a created StatefulSet gets revisionHistoryLimit 10, and
//     its pod template's containers terminationMessagePath and
//     terminationMessagePolicy, the pod dnsPolicy ClusterFirst and
//     schedulerName default-scheduler.

// ServerVersion is the version the fake reports.
var ServerVersion = version.Info{Major: "1", Minor: "34", GitVersion: "v1.34.4"}

// NewFake returns client-go's fake clientset answering as the real server
// on the points above (without Cluster's controllers).
func NewFake() *fake.Clientset {
	f := fake.NewClientset()
	installReal(f)
	return f
}

// installReal adds the reactors that make the fake clientset answer as
// the real server on the points above.
func installReal(f *fake.Clientset) {
	if d, ok := f.Discovery().(*fakediscovery.FakeDiscovery); ok {
		v := ServerVersion
		d.FakedServerVersion = &v
	}
	f.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateActionImpl)
		if !ok {
			return false, nil, nil
		}
		obj := ca.GetObject().DeepCopyObject()
		if err := admit(obj, nil); err != nil {
			return true, nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return true, nil, err
		}
		if isDryRun(ca.CreateOptions.DryRun) {
			if _, err := f.Tracker().Get(a.GetResource(), a.GetNamespace(), m.GetName()); err == nil {
				return true, nil, apierrors.NewAlreadyExists(a.GetResource().GroupResource(), m.GetName())
			}
			return true, obj, nil
		}
		if err := f.Tracker().Create(a.GetResource(), obj, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		stored, err := f.Tracker().Get(a.GetResource(), a.GetNamespace(), m.GetName())
		return true, stored, err
	})
	f.PrependReactor("update", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.UpdateAction).GetObject().DeepCopyObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return true, nil, err
		}
		old, err := f.Tracker().Get(a.GetResource(), a.GetNamespace(), m.GetName())
		if err != nil {
			return false, nil, nil // the tracker answers NotFound
		}
		if err := admit(obj, old); err != nil {
			return true, nil, err
		}
		return false, nil, nil
	})
}

func isDryRun(d []string) bool { return len(d) == 1 && d[0] == metav1.DryRunAll }

// admit validates and defaults obj (a copy) as the real server did (old:
// the stored object of an update).
func admit(obj, old runtime.Object) error {
	sts, ok := obj.(*appsv1.StatefulSet)
	if !ok {
		return nil
	}
	gk := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	if old != nil {
		o := old.(*appsv1.StatefulSet)
		a, b := sts.Spec.DeepCopy(), o.Spec.DeepCopy()
		for _, s := range []*appsv1.StatefulSetSpec{a, b} {
			s.Replicas, s.Ordinals, s.Template, s.UpdateStrategy = nil, nil, corev1.PodTemplateSpec{}, appsv1.StatefulSetUpdateStrategy{}
			s.PersistentVolumeClaimRetentionPolicy, s.MinReadySeconds, s.RevisionHistoryLimit = nil, 0, nil
		}
		if !apiequality.Semantic.DeepEqual(a, b) {
			return apierrors.NewInvalid(gk, sts.Name, field.ErrorList{field.Forbidden(field.NewPath("spec"),
				"updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")})
		}
	}
	if sel := sts.Spec.Selector; sel != nil {
		for k, v := range sel.MatchLabels {
			if sts.Spec.Template.Labels[k] != v {
				return apierrors.NewInvalid(gk, sts.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "template", "metadata", "labels"),
					sts.Spec.Template.Labels, "`selector` does not match template `labels`")})
			}
		}
	}
	if sts.Spec.RevisionHistoryLimit == nil {
		sts.Spec.RevisionHistoryLimit = ptr(int32(10))
	}
	spec := &sts.Spec.Template.Spec
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			if cs[i].TerminationMessagePath == "" {
				cs[i].TerminationMessagePath = corev1.TerminationMessagePathDefault
			}
			if cs[i].TerminationMessagePolicy == "" {
				cs[i].TerminationMessagePolicy = corev1.TerminationMessageReadFile
			}
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
