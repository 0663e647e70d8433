package kubetest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestServe checks the facade's answers through client-go's REST client.
func TestServe(t *testing.T) {
	f := NewCluster(t, "ns")
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: f.Serve(t).URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps("ns")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}}}, metav1.CreateOptions{})
	if err != nil || cm.UID == "" || cm.ResourceVersion == "" {
		t.Fatalf("create: %+v, %v", cm, err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v", err)
	}
	if _, err := cms.Get(ctx, "b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of a missing object: %v", err)
	}
	if l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "k=other"}); err != nil || len(l.Items) != 0 {
		t.Errorf("list k=other: %v, %v", l, err)
	}
	if l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "k=v"}); err != nil || len(l.Items) != 1 {
		t.Errorf("list k=v: %v, %v", l, err)
	}
	stale := cm.DeepCopy()
	cm.Data = map[string]string{"x": "1"}
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with a stale resourceVersion: %v", err)
	}
	wrong := types.UID("other")
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with another UID: %v", err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}); err != nil {
		t.Errorf("delete: %v", err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: %v", err)
	}
}
