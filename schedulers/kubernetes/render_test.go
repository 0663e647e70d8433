package kubernetes

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
)

var update = flag.Bool("update", false, "rewrite the golden manifests in testdata/")

// testJob is a topology of two containers of different sizes.
func testJob() spi.Job {
	return spi.Job{
		Topology: "wordcount", TopologyID: "wordcount-5f3a9c", Cluster: "kubernetes", Role: "alice", Environ: "prod",
		PackageURI: testPackageURI, PackageSHA256: testSHA,
		Plan: &plan.PackingPlan{TopologyID: "wordcount-5f3a9c", Containers: []plan.Container{
			{ID: 1, Required: plan.Resources{CPU: 2.5, RAM: 3 << 30, Disk: 2 << 30}},
			{ID: 2, Required: plan.Resources{CPU: 1.5, RAM: 5 << 30, Disk: 1 << 30}},
		}},
		Config: spi.Config{"egret.scheduler": "kubernetes", "egret.topology.name": "wordcount", "egret.statemgr": "zookeeper"},
	}
}

// decodeManifests splits a YAML stream and decodes each document
// strictly (an unknown field is an error) into its API type.
func decodeManifests(t *testing.T, doc []byte) (*corev1.ConfigMap, *corev1.Service, *appsv1.StatefulSet) {
	t.Helper()
	var cm *corev1.ConfigMap
	var svc *corev1.Service
	var sts *appsv1.StatefulSet
	for i, part := range bytes.Split(doc, []byte("\n---\n")) {
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(part, &head); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var target any
		switch head.APIVersion + " " + head.Kind {
		case "v1 ConfigMap":
			cm = &corev1.ConfigMap{}
			target = cm
		case "v1 Service":
			svc = &corev1.Service{}
			target = svc
		case "apps/v1 StatefulSet":
			sts = &appsv1.StatefulSet{}
			target = sts
		default:
			t.Fatalf("document %d: unexpected apiVersion/kind %q %q", i, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict(part, target); err != nil {
			t.Fatalf("document %d (%s) does not decode strictly: %v", i, head.Kind, err)
		}
	}
	if cm == nil || svc == nil || sts == nil {
		t.Fatalf("want a ConfigMap, a Service and a StatefulSet:\n%s", doc)
	}
	for _, e := range apiRules(cm, svc, sts) {
		t.Errorf("the manifests break an API rule: %s", e)
	}
	return cm, svc, sts
}

// apiRules checks the rules of the API server's validation that the
// apimachinery module exports (object names, labels, annotations,
// selectors) and a few of core/v1's by hand (names of containers, ports,
// volumes, environment variables; mounts of declared volumes; the
// selector matching the template). It is a subset: the API server checks
// far more.
func apiRules(cm *corev1.ConfigMap, svc *corev1.Service, sts *appsv1.StatefulSet) []string {
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateObjectMeta(&cm.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("configmap", "metadata"))...)
	errs = append(errs, apivalidation.ValidateObjectMeta(&svc.ObjectMeta, true, apivalidation.NameIsDNS1035Label, field.NewPath("service", "metadata"))...)
	errs = append(errs, apivalidation.ValidateObjectMeta(&sts.ObjectMeta, true, apivalidation.NameIsDNSLabel, field.NewPath("statefulset", "metadata"))...)
	errs = append(errs, metav1validation.ValidateLabels(svc.Spec.Selector, field.NewPath("service", "spec", "selector"))...)
	errs = append(errs, metav1validation.ValidateLabelSelector(sts.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("statefulset", "spec", "selector"))...)
	tm := sts.Spec.Template.ObjectMeta
	errs = append(errs, metav1validation.ValidateLabels(tm.Labels, field.NewPath("template", "labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(tm.Annotations, field.NewPath("template", "annotations"))...)
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	sel, err := metav1.LabelSelectorAsSelector(sts.Spec.Selector)
	if err != nil || !sel.Matches(k8slabels.Set(tm.Labels)) {
		out = append(out, "the StatefulSet's selector does not select its template")
	}
	if sts.Spec.ServiceName != svc.Name {
		out = append(out, "the StatefulSet's serviceName is not the Service")
	}
	for _, p := range svc.Spec.Ports {
		for _, m := range validation.IsValidPortName(p.Name) {
			out = append(out, "service port "+p.Name+": "+m)
		}
	}
	spec := sts.Spec.Template.Spec
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
		for _, m := range validation.IsDNS1123Label(v.Name) {
			out = append(out, "volume "+v.Name+": "+m)
		}
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		for _, m := range validation.IsDNS1123Label(c.Name) {
			out = append(out, "container "+c.Name+": "+m)
		}
		if c.Image == "" {
			out = append(out, "container "+c.Name+": no image")
		}
		for _, p := range c.Ports {
			for _, m := range validation.IsValidPortName(p.Name) {
				out = append(out, "container port "+p.Name+": "+m)
			}
			for _, m := range validation.IsValidPortNum(int(p.ContainerPort)) {
				out = append(out, "container port "+p.Name+": "+m)
			}
		}
		for _, e := range c.Env {
			for _, m := range validation.IsEnvVarName(e.Name) {
				out = append(out, "env "+e.Name+": "+m)
			}
		}
		for _, vm := range c.VolumeMounts {
			if !volumes[vm.Name] {
				out = append(out, "container "+c.Name+" mounts undeclared volume "+vm.Name)
			}
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Requests[r]; ok && q.Cmp(c.Resources.Limits[r]) > 0 {
				out = append(out, fmt.Sprintf("container %s: %s request above its limit", c.Name, r))
			}
		}
	}
	return out
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./schedulers/kubernetes -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("manifests differ from %s (run with -update to accept):\n%s", path, got)
	}
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  spi.Config
	}{
		{"bundled.yaml", testConfig()},
		{"core-uri.yaml", testConfig(keyCoreBundle, "false", keyCoreURI, "https://dl.example/egret-linux-amd64.tar.gz",
			KeyImage, "registry.example/egret-base:1", KeyInitImage, "registry.example/busybox:1.36", KeyImagePullPolicy, "Always",
			KeyServiceAccount, "egret-runner", KeyTManagerCPU, "0.5", KeyTManagerRAM, "512MiB", KeyTManagerDisk, "256MiB", keyStopGrace, "20s")},
		{"image.yaml", testConfig(keyCoreBundle, "false", KeyNamespace, "streams")},
		{"patched.yaml", testConfig(KeyPodTemplatePatch, `
metadata:
  annotations:
    prometheus.io/scrape: "true"
spec:
  nodeSelector:
    egret.io/pool: streaming
  containers:
  - name: executor
    env:
    - name: GOMEMLIMIT
      value: 3GiB
  tolerations:
  - key: dedicated
    operator: Equal
    value: streaming
    effect: NoSchedule
`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newTestScheduler(t, nil, tc.cfg)
			if tc.cfg[KeyNamespace] == "streams" {
				sc.ns = "streams"
			}
			out, err := sc.RenderJob(testJob())
			if err != nil {
				t.Fatal(err)
			}
			decodeManifests(t, out)
			golden(t, tc.name, out)
		})
	}
}

// TestManifests checks the properties the golden files only show.
func TestManifests(t *testing.T) {
	sc := newTestScheduler(t, nil, testConfig())
	out, err := sc.RenderJob(testJob())
	if err != nil {
		t.Fatal(err)
	}
	cm, svc, sts := decodeManifests(t, out)
	if cm.Name != "wordcount-config" || !strings.Contains(cm.Data[configKey], `"egret.statemgr": "zookeeper"`) {
		t.Errorf("ConfigMap %s does not carry the cluster config: %v", cm.Name, cm.Data)
	}
	job := testJob()
	job.Config["egret.uploader.http.token"] = "s3cr3t"
	job.Config["egret.aurora.password"] = "s3cr3t"
	if out, err := sc.RenderJob(job); err != nil || strings.Contains(string(out), "s3cr3t") {
		t.Errorf("the ConfigMap carries the CLI's credentials (%v):\n%s", err, out)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || svc.Spec.Selector[LabelTopology] != "wordcount" {
		t.Errorf("Service is not headless for the topology's pods: %+v", svc.Spec)
	}
	if sts.Spec.ServiceName != svc.Name || *sts.Spec.Replicas != 3 || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement ||
		sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		t.Errorf("StatefulSet spec: %+v", sts.Spec)
	}
	for k, v := range sts.Spec.Selector.MatchLabels {
		if sts.Spec.Template.Labels[k] != v {
			t.Errorf("the template lacks selector label %s=%s", k, v)
		}
	}
	for _, want := range []struct{ key, value string }{
		{AnnotationTopologyID, "wordcount-5f3a9c"}, {AnnotationCluster, "kubernetes"}, {AnnotationRole, "alice"}, {AnnotationEnviron, "prod"},
		{AnnotationPackageURI, testPackageURI}, {AnnotationPackageSHA256, testSHA},
	} {
		if sts.Annotations[want.key] != want.value {
			t.Errorf("annotation %s = %q, want %q", want.key, sts.Annotations[want.key], want.value)
		}
	}
	c := sts.Spec.Template.Spec.Containers[0]
	// The largest of each resource: cpu of container 1, memory of 2, disk of 1.
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "2500m", corev1.ResourceMemory: "5Gi", corev1.ResourceEphemeralStorage: "2Gi"} {
		q := resource.MustParse(want)
		if got := c.Resources.Requests[name]; got.Cmp(q) != 0 {
			t.Errorf("request %s = %s, want %s", name, got.String(), want)
		}
		if got := c.Resources.Limits[name]; got.Cmp(q) != 0 {
			t.Errorf("limit %s = %s, want %s", name, got.String(), want)
		}
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"executor --topology wordcount --topology-id wordcount-5f3a9c --container $(EGRET_CONTAINER_INDEX) --work-dir /egret/work --config-file /egret/conf/cluster.json", "--stmgr-port 6003"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "--package-uri") {
		t.Errorf("the executor fetches the package again: %q", args)
	}
	if c.Command[0] != bundledBinary {
		t.Errorf("command %v, want the egret of the package", c.Command)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if f := env[EnvContainerIndex].ValueFrom; f == nil || f.FieldRef.FieldPath != "metadata.labels['apps.kubernetes.io/pod-index']" {
		t.Errorf("%s does not come from the pod-index label: %+v", EnvContainerIndex, env[EnvContainerIndex])
	}
	if env[EnvHost].Value != "$(EGRET_POD_NAME).wordcount.egret-test.svc" {
		t.Errorf("%s = %q", EnvHost, env[EnvHost].Value)
	}
	if sts.Spec.Template.Spec.InitContainers[0].Resources.Limits.Memory().Cmp(resource.MustParse("5Gi")) != 0 {
		t.Error("the init container does not have the executor's resources (the pod would not be Guaranteed)")
	}
}

// TestAPIRules: the rule checks of decodeManifests catch what they check.
func TestAPIRules(t *testing.T) {
	sc := newTestScheduler(t, nil, testConfig())
	objs, err := sc.s.build(testJob(), testNS)
	if err != nil {
		t.Fatal(err)
	}
	if errs := apiRules(objs.ConfigMap, objs.Service, objs.StatefulSet); len(errs) > 0 {
		t.Fatalf("%v", errs)
	}
	spec := &objs.StatefulSet.Spec.Template.Spec
	spec.Containers[0].Name = "Executor"
	spec.Containers[0].Ports[1].Name = "tmanager-http-port"
	spec.Containers[0].Env[0].Name = "1BAD"
	objs.StatefulSet.Spec.Template.Labels["egret.io/topology"] = "other"
	objs.ConfigMap.Labels["bad label"] = "x"
	errs := strings.Join(apiRules(objs.ConfigMap, objs.Service, objs.StatefulSet), "\n")
	for _, want := range []string{"container Executor", "container port tmanager-http-port", "env 1BAD", "does not select its template", "bad label"} {
		if !strings.Contains(errs, want) {
			t.Errorf("no rule caught %q:\n%s", want, errs)
		}
	}
}

func TestCheckJob(t *testing.T) {
	sc := newTestScheduler(t, nil, testConfig())
	long := strings.Repeat("a", 53)
	for _, tc := range []struct {
		edit func(*spi.Job)
		want string
	}{
		{func(j *spi.Job) { j.Topology = "WordCount" }, `topology name "WordCount" cannot name a StatefulSet`},
		{func(j *spi.Job) { j.Topology = "word_count" }, `topology name "word_count"`},
		{func(j *spi.Job) { j.Topology = "9lives" }, `topology name "9lives"`},
		{func(j *spi.Job) { j.Topology = long }, "at most 52 lower-case letters"},
		{func(j *spi.Job) { j.PackageURI = "file:///tmp/p.tar.gz" }, "must be http(s)"},
		{func(j *spi.Job) { j.PackageURI = "" }, "no package URI"},
		{func(j *spi.Job) { j.PackageSHA256 = "xyz" }, "not 64 hex digits"},
		{func(j *spi.Job) { j.Plan.Containers[1].ID = 3 }, "must be exactly 1..2"},
		{func(j *spi.Job) { j.Plan = nil }, "no packing plan containers"},
	} {
		j := testJob()
		tc.edit(&j)
		_, err := sc.RenderJob(j)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("got %v, want one line with %q", err, tc.want)
		}
	}
	j := testJob()
	j.PackageURI = spi.DryRunPackageURI
	if _, err := sc.RenderJob(j); err != nil {
		t.Errorf("a dry run's placeholder URI: %v", err)
	}
}

func TestPodTemplatePatch(t *testing.T) {
	t.Run("merge", func(t *testing.T) {
		// A JSON merge patch replaces lists whole: here it keeps them and
		// sets a field.
		sc := newTestScheduler(t, nil, testConfig(KeyPatchType, PatchMerge, KeyPodTemplatePatch, `{"spec":{"priorityClassName":"streaming","hostNetwork":false}}`))
		out, err := sc.RenderJob(testJob())
		if err != nil {
			t.Fatal(err)
		}
		_, _, sts := decodeManifests(t, out)
		if sts.Spec.Template.Spec.PriorityClassName != "streaming" || len(sts.Spec.Template.Spec.Containers) != 1 {
			t.Errorf("merge patch not applied: %+v", sts.Spec.Template.Spec)
		}
	})
	t.Run("strategic merges containers by name", func(t *testing.T) {
		sc := newTestScheduler(t, nil, testConfig(KeyPodTemplatePatch, `{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}`))
		out, err := sc.RenderJob(testJob())
		if err != nil {
			t.Fatal(err)
		}
		_, _, sts := decodeManifests(t, out)
		if n := len(sts.Spec.Template.Spec.Containers); n != 2 {
			t.Errorf("%d containers, want executor and sidecar", n)
		}
	})
	for _, tc := range []struct{ typ, patch, want string }{
		{PatchStrategic, `spec: [`, "not YAML or JSON"},
		{PatchStrategic, `- a`, "must be a mapping"},
		{PatchStrategic, `{"spec":{"nodeSelectr":{"a":"b"}}}`, `unknown field "nodeSelectr"`},
		{PatchStrategic, `{"spec":{"restartPolicy":"Never"}}`, "restartPolicy Always"},
		{PatchStrategic, `{"metadata":{"labels":{"egret.io/topology":"other"}}}`, "changes the label egret.io/topology"},
		{PatchMerge, `{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}`, "removes the executor container"},
		{PatchStrategic, `{"spec":{"containers":"x"}}`, "the patched pod template is not valid"},
		{PatchStrategic, `{"spec":{"$retainKeys":7}}`, "cannot apply the strategic patch"},
	} {
		_, err := parseSettings(testConfig(KeyPatchType, tc.typ, KeyPodTemplatePatch, tc.patch))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s patch %s: got %v, want %q", tc.typ, tc.patch, err, tc.want)
		}
	}
}

func TestBadConfig(t *testing.T) {
	_, err := parseSettings(testConfig(KeyNamespace, "Bad_NS", KeyServiceAccount, "a b", KeyImage, "", KeyImagePullPolicy, "Sometimes",
		KeyPatchType, "json", KeyScheduleTimeout, "soon", KeyTManagerRAM, "lots", keyCoreURI, "s3://b/egret", KeyDeleteTimeout, "-1s"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{KeyNamespace, KeyServiceAccount, KeyImage, KeyImagePullPolicy, KeyPatchType, KeyScheduleTimeout, KeyTManagerRAM, keyCoreURI, KeyDeleteTimeout} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("the error is not one line: %v", err)
	}
}
