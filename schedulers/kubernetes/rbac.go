package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// RoleName is the Role (and RoleBinding) egret kubernetes rbac creates.
const RoleName = "egret-submitter"

// RBACObjects are what a namespace needs to run topologies: the Role of
// the rights the scheduler uses, its RoleBinding to the subject that runs
// egret submit/kill/update (a user, a group, or a service account, say
// of a CI pod), and the service account the pods run as.
type RBACObjects struct {
	PodServiceAccount *corev1.ServiceAccount
	Role              *rbacv1.Role
	RoleBinding       *rbacv1.RoleBinding
}

// Rules are the Role's rules: exactly the requests the scheduler sends
// (a server-side dry run needs create too).
var Rules = []rbacv1.PolicyRule{
	{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: []string{"get", "list", "create", "update", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"services", "configmaps"}, Verbs: []string{"get", "create", "update", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list"}},
}

// ParseSubject parses the RoleBinding's subject: user:NAME, group:NAME or
// serviceaccount:NAMESPACE:NAME.
func ParseSubject(s string) (rbacv1.Subject, error) {
	kind, rest, _ := strings.Cut(s, ":")
	switch kind {
	case "user", "group":
		if rest == "" {
			break
		}
		k := rbacv1.UserKind
		if kind == "group" {
			k = rbacv1.GroupKind
		}
		return rbacv1.Subject{Kind: k, APIGroup: rbacv1.GroupName, Name: rest}, nil
	case "serviceaccount":
		ns, name, ok := strings.Cut(rest, ":")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			break
		}
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}, nil
	}
	return rbacv1.Subject{}, fmt.Errorf("subject %q: write user:NAME, group:NAME or serviceaccount:NAMESPACE:NAME", s)
}

// RBAC returns the objects for namespace ns, the pods' service account
// podSA and the subject.
func RBAC(ns, podSA string, subject rbacv1.Subject) (*RBACObjects, error) {
	if m := validation.IsDNS1123Label(ns); len(m) > 0 {
		return nil, fmt.Errorf("namespace %q: %s", ns, strings.Join(m, "; "))
	}
	if m := validation.IsDNS1123Subdomain(podSA); len(m) > 0 {
		return nil, fmt.Errorf("service account %q: %s", podSA, strings.Join(m, "; "))
	}
	l := map[string]string{LabelManagedBy: managedBy, LabelName: "egret"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: cloneMap(l)}
	}
	return &RBACObjects{
		PodServiceAccount: &corev1.ServiceAccount{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(podSA),
			// The daemons do not call the API server: no token, no rights.
			AutomountServiceAccountToken: ptr(false),
		},
		Role: &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: meta(RoleName), Rules: Rules},
		RoleBinding: &rbacv1.RoleBinding{
			TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: meta(RoleName),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RoleName},
			Subjects: []rbacv1.Subject{subject},
		},
	}, nil
}

// YAML renders the objects for kubectl apply -f.
func (o *RBACObjects) YAML() ([]byte, error) {
	var buf bytes.Buffer
	for i, obj := range []any{o.PodServiceAccount, o.Role, o.RoleBinding} {
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		delete(m["metadata"].(map[string]any), "creationTimestamp")
		y, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(y)
	}
	return buf.Bytes(), nil
}

// Apply creates the objects, or updates them when they exist.
func (o *RBACObjects) Apply(ctx context.Context, c kubernetes.Interface) error {
	ns := o.Role.Namespace
	sas, roles, bindings := c.CoreV1().ServiceAccounts(ns), c.RbacV1().Roles(ns), c.RbacV1().RoleBindings(ns)
	steps := []struct {
		what   string
		create func() error
		update func() error
	}{
		{"ServiceAccount " + o.PodServiceAccount.Name, func() error { _, err := sas.Create(ctx, o.PodServiceAccount, metav1.CreateOptions{}); return err },
			func() error {
				cur, err := sas.Get(ctx, o.PodServiceAccount.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				cur.AutomountServiceAccountToken = o.PodServiceAccount.AutomountServiceAccountToken
				_, err = sas.Update(ctx, cur, metav1.UpdateOptions{})
				return err
			}},
		{"Role " + RoleName, func() error { _, err := roles.Create(ctx, o.Role, metav1.CreateOptions{}); return err },
			func() error {
				cur, err := roles.Get(ctx, RoleName, metav1.GetOptions{})
				if err != nil {
					return err
				}
				cur.Rules = o.Role.Rules
				_, err = roles.Update(ctx, cur, metav1.UpdateOptions{})
				return err
			}},
		{"RoleBinding " + RoleName, func() error { _, err := bindings.Create(ctx, o.RoleBinding, metav1.CreateOptions{}); return err },
			func() error {
				cur, err := bindings.Get(ctx, RoleName, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if cur.RoleRef != o.RoleBinding.RoleRef {
					return fmt.Errorf("it binds %s %s, not Role %s; delete it first (its role cannot change)", cur.RoleRef.Kind, cur.RoleRef.Name, RoleName)
				}
				cur.Subjects = o.RoleBinding.Subjects
				_, err = bindings.Update(ctx, cur, metav1.UpdateOptions{})
				return err
			}},
	}
	for _, s := range steps {
		err := s.create()
		if apierrors.IsAlreadyExists(err) {
			err = s.update()
		}
		if err != nil {
			return fmt.Errorf("kubernetes rbac: apply %s in namespace %q: %s", s.what, ns, oneLine(err.Error()))
		}
	}
	return nil
}
