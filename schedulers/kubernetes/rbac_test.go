package kubernetes

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/egret-stream/egret/schedulers/kubernetes/kubetest"
)

// TestRBAC: subjects parse or are refused in one line; the objects
// render as YAML that decodes back, and apply twice (create, then update)
// on the fake.
func TestRBAC(t *testing.T) {
	for _, bad := range []string{"", "alice", "user:", "serviceaccount:ns", "serviceaccount:Bad_NS:x", "robot:x"} {
		if _, err := ParseSubject(bad); err == nil || !strings.Contains(err.Error(), "write user:NAME, group:NAME or serviceaccount:NAMESPACE:NAME") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	sub, err := ParseSubject("serviceaccount:ci:deployer")
	if err != nil || sub.Kind != rbacv1.ServiceAccountKind || sub.Namespace != "ci" || sub.Name != "deployer" {
		t.Fatalf("%+v %v", sub, err)
	}
	if _, err := RBAC("Bad NS", "egret", sub); err == nil {
		t.Error("bad namespace accepted")
	}
	objs, err := RBAC("streaming", "egret", sub)
	if err != nil {
		t.Fatal(err)
	}
	y, err := objs.YAML()
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(y), "---\n")
	var role rbacv1.Role
	if len(docs) != 3 || yaml.UnmarshalStrict([]byte(docs[1]), &role) != nil || role.Name != RoleName || len(role.Rules) != len(Rules) {
		t.Fatalf("yaml:\n%s", y)
	}
	f := kubetest.NewFake()
	ctx := context.Background()
	for range 2 {
		if err := objs.Apply(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	rb, err := f.RbacV1().RoleBindings("streaming").Get(ctx, RoleName, metav1.GetOptions{})
	if err != nil || rb.Subjects[0] != sub || rb.RoleRef.Name != RoleName {
		t.Fatalf("binding %+v %v", rb, err)
	}
	sa, err := f.CoreV1().ServiceAccounts("streaming").Get(ctx, "egret", metav1.GetOptions{})
	if err != nil || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Fatalf("service account %+v %v", sa, err)
	}
}
