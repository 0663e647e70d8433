package kubetest

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func sampleSTS() *appsv1.StatefulSet {
	l := map[string]string{"app": "x"}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr(int32(1)), ServiceName: "x", Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}},
		},
	}
}

// TestRealAnswers: the corrected fake answers as kube-apiserver 1.34 did.
func TestRealAnswers(t *testing.T) {
	f := NewFake()
	ctx := context.Background()
	v, err := f.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.34.4" {
		t.Errorf("version %v, %v", v, err)
	}
	sts := f.AppsV1().StatefulSets("ns")
	// A dry run stores nothing, and does not change the caller's object.
	in := sampleSTS()
	out, err := sts.Create(ctx, in, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || *out.Spec.RevisionHistoryLimit != 10 || out.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Fatalf("dry run: %v, %+v", err, out)
	}
	if in.Spec.RevisionHistoryLimit != nil {
		t.Error("the caller's object was defaulted")
	}
	if _, err := sts.Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after a dry run: %v", err)
	}
	// The selector must select the template.
	bad := sampleSTS()
	bad.Spec.Template.Labels = map[string]string{"app": "y"}
	if _, err := sts.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "`selector` does not match template `labels`") {
		t.Errorf("selector mismatch: %v", err)
	}
	// Created and defaulted; a dry run of the same name is AlreadyExists.
	got, err := sts.Create(ctx, sampleSTS(), metav1.CreateOptions{})
	if err != nil || got.Spec.Template.Spec.Containers[0].TerminationMessagePath != corev1.TerminationMessagePathDefault {
		t.Fatalf("create: %v %+v", err, got)
	}
	if _, err := sts.Create(ctx, sampleSTS(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("dry run of an existing name: %v", err)
	}
	// Replicas and template may change; serviceName may not.
	got.Spec.Replicas = ptr(int32(3))
	got.Spec.Template.Spec.Containers[0].Image = "j"
	if got, err = sts.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update replicas and template: %v", err)
	}
	got.Spec.ServiceName = "other"
	if _, err := sts.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "updates to statefulset spec for fields other than") {
		t.Errorf("update serviceName: %v", err)
	}
}
