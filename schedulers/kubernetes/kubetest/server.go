package kubetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// kinds are the resources the server knows: the ones the scheduler uses.
var kinds = map[string]schema.GroupVersionKind{
	"/api/v1/configmaps":         {Version: "v1", Kind: "ConfigMap"},
	"/api/v1/services":           {Version: "v1", Kind: "Service"},
	"/api/v1/pods":               {Version: "v1", Kind: "Pod"},
	"/api/v1/events":             {Version: "v1", Kind: "Event"},
	"/apis/apps/v1/statefulsets": {Group: "apps", Version: "v1", Kind: "StatefulSet"},
}

// Serve starts an HTTP server in front of the cluster that answers what
// the scheduler sends as the API server does, in JSON: get, list (with a
// label selector; field selectors are ignored, as by the fake clientset),
// create (which sets uid and resourceVersion), update (which must name
// the stored resourceVersion, else 409 Conflict) and delete (honouring a
// UID precondition) of ConfigMaps, Services, Pods, Events and
// StatefulSets in a namespace; errors are Status objects with the API
// server's codes and reasons; /version. Anything else is 404. It is a
// facade of the fake clientset's object tracker, not an API server: it
// validates and defaults only what real.go lists.
func (f *Cluster) Serve(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(f.serveHTTP))
	t.Cleanup(srv.Close)
	return srv
}

func (f *Cluster) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/version" && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ServerVersion)
		return
	}
	prefix, rest, ok := strings.Cut(r.URL.Path, "/namespaces/")
	if !ok {
		writeErr(w, apierrors.NewNotFound(schema.GroupResource{Resource: r.URL.Path}, ""))
		return
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || len(parts) > 3 {
		writeErr(w, apierrors.NewNotFound(schema.GroupResource{Resource: r.URL.Path}, ""))
		return
	}
	ns, resource := parts[0], parts[1]
	gvk, ok := kinds[prefix+"/"+resource]
	if !ok {
		writeErr(w, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, ""))
		return
	}
	gvr := gvk.GroupVersion().WithResource(resource)
	name := ""
	if len(parts) == 3 {
		name = parts[2]
	}
	tracker := f.Tracker()
	switch {
	case r.Method == http.MethodGet && name == "":
		list, err := tracker.List(gvr, gvk, ns)
		if err != nil {
			writeErr(w, err)
			return
		}
		sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		if err != nil {
			writeErr(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		items, _ := meta.ExtractList(list)
		kept := items[:0]
		for _, it := range items {
			if m, err := meta.Accessor(it); err == nil && sel.Matches(labels.Set(m.GetLabels())) {
				kept = append(kept, it)
			}
		}
		_ = meta.SetList(list, kept)
		list.GetObjectKind().SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		writeObj(w, http.StatusOK, list)
	case r.Method == http.MethodGet:
		obj, err := tracker.Get(gvr, ns, name)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeObj(w, http.StatusOK, withKind(obj, gvk))
	case r.Method == http.MethodPost && name == "", r.Method == http.MethodPut && name != "":
		obj, err := decode(r, gvk)
		if err != nil {
			writeErr(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		m, _ := meta.Accessor(obj)
		if m.GetNamespace() == "" {
			m.SetNamespace(ns)
		}
		var old runtime.Object
		if r.Method == http.MethodPut {
			old, _ = tracker.Get(gvr, ns, name)
		}
		if err := admit(obj, old); err != nil {
			writeErr(w, err)
			return
		}
		if r.Method == http.MethodPost && isDryRun(r.URL.Query()["dryRun"]) {
			if _, err := tracker.Get(gvr, ns, m.GetName()); err == nil {
				writeErr(w, apierrors.NewAlreadyExists(gvr.GroupResource(), m.GetName()))
				return
			}
			writeObj(w, http.StatusCreated, withKind(obj, gvk))
			return
		}
		code := http.StatusCreated
		f.mu.Lock()
		f.version++
		version := strconv.FormatInt(f.version, 10)
		f.mu.Unlock()
		if r.Method == http.MethodPost {
			m.SetUID(types.UID("uid-" + version))
			m.SetResourceVersion(version)
			err = tracker.Create(gvr, obj, ns)
		} else {
			if m.GetName() != name {
				writeErr(w, apierrors.NewBadRequest(fmt.Sprintf("name %q in the body is not %q", m.GetName(), name)))
				return
			}
			if f.BeforeUpdate != nil {
				f.BeforeUpdate(resource, name)
			}
			// Optimistic concurrency, as the API server: the update must
			// name the stored resourceVersion.
			cur, gerr := tracker.Get(gvr, ns, name)
			if gerr != nil {
				writeErr(w, gerr)
				return
			}
			cm, _ := meta.Accessor(cur)
			if m.GetResourceVersion() == "" || m.GetResourceVersion() != cm.GetResourceVersion() {
				writeErr(w, apierrors.NewConflict(gvr.GroupResource(), name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again")))
				return
			}
			m.SetUID(cm.GetUID())
			m.SetResourceVersion(version)
			code = http.StatusOK
			err = tracker.Update(gvr, obj, ns)
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		stored, err := tracker.Get(gvr, ns, m.GetName())
		if err != nil {
			writeErr(w, err)
			return
		}
		writeObj(w, code, withKind(stored, gvk))
	case r.Method == http.MethodDelete && name != "":
		var opts metav1.DeleteOptions
		if body, _ := io.ReadAll(r.Body); len(body) > 0 {
			if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, &opts); err != nil {
				writeErr(w, apierrors.NewBadRequest(err.Error()))
				return
			}
		}
		if p := opts.Preconditions; p != nil && p.UID != nil {
			cur, err := tracker.Get(gvr, ns, name)
			if err != nil {
				writeErr(w, err)
				return
			}
			if cm, _ := meta.Accessor(cur); cm.GetUID() != *p.UID {
				writeErr(w, apierrors.NewConflict(gvr.GroupResource(), name, fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, cm.GetUID())))
				return
			}
		}
		if err := tracker.Delete(gvr, ns, name); err != nil {
			writeErr(w, err)
			return
		}
		writeObj(w, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusSuccess})
	default:
		writeErr(w, apierrors.NewMethodNotSupported(gvr.GroupResource(), r.Method))
	}
}

// decode reads a JSON or protobuf body (client-go sends built-in types
// as protobuf) into an object of gvk.
func decode(r *http.Request, gvk schema.GroupVersionKind) (runtime.Object, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	obj, got, err := scheme.Codecs.UniversalDeserializer().Decode(body, &gvk, nil)
	if err != nil {
		return nil, err
	}
	if *got != gvk {
		return nil, fmt.Errorf("the body is a %s, not a %s", got, gvk)
	}
	return obj, nil
}

func withKind(obj runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj
}

func writeObj(w http.ResponseWriter, code int, obj runtime.Object) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}

func writeErr(w http.ResponseWriter, err error) {
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		st = apierrors.NewInternalError(err)
	}
	s := st.Status()
	s.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	writeObj(w, int(s.Code), &s)
}

// WriteKubeconfig writes a kubeconfig whose current context points at
// server and returns its path.
func WriteKubeconfig(t testing.TB, server string) string {
	t.Helper()
	doc := "apiVersion: v1\nkind: Config\nclusters:\n- name: kubetest\n  cluster:\n    server: " + server +
		"\nusers:\n- name: kubetest\n  user: {}\ncontexts:\n- name: kubetest\n  context:\n    cluster: kubetest\n    user: kubetest\ncurrent-context: kubetest\n"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
