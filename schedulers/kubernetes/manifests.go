package kubernetes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/internal/executorcmd"
)

// Labels and annotations of the objects of a topology.
const (
	LabelTopology  = "egret.io/topology"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelName      = "app.kubernetes.io/name"
	managedBy      = "egret"

	AnnotationTopologyID    = "egret.io/topology-id"
	AnnotationCluster       = "egret.io/cluster"
	AnnotationRole          = "egret.io/role"
	AnnotationEnviron       = "egret.io/environ"
	AnnotationPackageURI    = "egret.io/package-uri"
	AnnotationPackageSHA256 = "egret.io/package-sha256"
	// AnnotationResources (on the StatefulSet) records the packing plan's
	// resources of every container, so that an update can tell which
	// containers changed: {"0":{"cpu":1,"ram":...,"disk":...},...}.
	AnnotationResources = "egret.io/container-resources"
)

// Names inside the pod template.
const (
	ContainerName     = "executor" // the container running `egret executor`
	InitContainerName = "fetch"    // downloads the package (and egret)
	volumeWork        = "egret"
	volumeConfig      = "config"
	mountWork         = "/egret"
	mountConfig       = "/egret/conf"
	workDir           = "/egret/work"
	configFile        = "/egret/conf/cluster.json"
	configKey         = "cluster.json"
	coreBinary        = "/egret/bin/egret"
	bundledBinary     = "/egret/work/package/egret"
)

// Ports of the daemons: every pod has its own IP, so they are fixed.
const (
	PortTManager     = 6001 // container 0: the topology manager's server port
	PortTManagerHTTP = 6002 // container 0: its control and stats API
	PortStmgr        = 6003 // containers 1..N: the stream manager
)

// Environment of the executor container.
const (
	EnvContainerIndex = "EGRET_CONTAINER_INDEX" // from the pod-index label
	EnvHost           = "EGRET_HOST"            // the pod's stable DNS name
	EnvPodName        = "EGRET_POD_NAME"
	EnvNamespace      = "EGRET_POD_NAMESPACE"
)

// maxNameLength bounds topology names: a StatefulSet's pods carry the
// label controller-revision-hash=<name>-<10 characters>, a label value of
// at most 63 characters.
const maxNameLength = 52

// Objects are the Kubernetes objects of one topology, in creation order.
type Objects struct {
	ConfigMap   *corev1.ConfigMap
	Service     *corev1.Service
	StatefulSet *appsv1.StatefulSet
}

// ConfigMapName returns the name of the ConfigMap holding a topology's
// cluster config.
func ConfigMapName(topology string) string { return topology + "-config" }

// PodName returns the name of container's pod.
func PodName(topology string, container int) string {
	return topology + "-" + strconv.Itoa(container)
}

// checkName rejects a topology name that cannot name the objects.
func checkName(topology string) error {
	if topology == "" {
		return errors.New("kubernetes scheduler: no topology name given")
	}
	if len(validation.IsDNS1035Label(topology)) > 0 || len(topology) > maxNameLength {
		return fmt.Errorf("kubernetes scheduler: topology name %q cannot name a StatefulSet and its Service: rename the topology to at most %d lower-case letters, digits and '-', starting with a letter and ending with a letter or digit",
			topology, maxNameLength)
	}
	return nil
}

// checkJob rejects a job the scheduler cannot run, naming every problem.
func checkJob(job spi.Job) error {
	var errs []error
	if err := checkName(job.Topology); err != nil {
		errs = append(errs, errors.New(strings.TrimPrefix(err.Error(), "kubernetes scheduler: ")))
	}
	switch {
	case job.PackageURI == "":
		errs = append(errs, errors.New("the job has no package URI: the init container downloads the topology package from the uploader's URI, so the package must be uploaded first"))
	case job.PackageURI != spi.DryRunPackageURI && !isHTTP(job.PackageURI):
		errs = append(errs, fmt.Errorf("package URI %q: the init container downloads the package with wget, so it must be http(s); use an uploader the pods can download from, such as http with egret serve-packages", job.PackageURI))
	}
	if sha := job.PackageSHA256; sha != "" && (len(sha) != 64 || strings.Trim(strings.ToLower(sha), "0123456789abcdef") != "") {
		errs = append(errs, fmt.Errorf("package sha256 %q is not 64 hex digits", sha))
	}
	if err := checkPlan(job.Plan); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("kubernetes scheduler: %w", joinLine(errs))
	}
	return nil
}

// checkPlan requires containers 1..N: a StatefulSet numbers its pods
// 0..N, and container i runs in pod i.
func checkPlan(p *plan.PackingPlan) error {
	if p == nil || len(p.Containers) == 0 {
		return errors.New("the job has no packing plan containers")
	}
	ids := make([]int, 0, len(p.Containers))
	for _, c := range p.Containers {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != i+1 {
			return fmt.Errorf("packing plan containers %v: a StatefulSet numbers its pods 0..N, so the plan's containers must be exactly 1..%d (container 0 is the topology manager's): %w",
				ids, len(ids), spi.ErrUnsupported)
		}
	}
	return nil
}

// containerResources returns the resources of containers 0..N of a plan
// (container 0: the topology manager's, from the config).
func (s *settings) containerResources(p *plan.PackingPlan) map[int]plan.Resources {
	out := map[int]plan.Resources{0: s.tmanager}
	for _, c := range p.Containers {
		out[c.ID] = c.Needs()
	}
	return out
}

// largest is the element-wise maximum of the containers' resources: every
// pod of a StatefulSet has the same template, so each gets what the
// largest container needs (of each resource), as Heron did.
func largest(res map[int]plan.Resources) plan.Resources {
	var m plan.Resources
	for _, r := range res {
		m.CPU = max(m.CPU, r.CPU)
		m.RAM = max(m.RAM, r.RAM)
		m.Disk = max(m.Disk, r.Disk)
	}
	return m
}

// resourceJSON is one container's entry of AnnotationResources.
type resourceJSON struct {
	CPU  float64 `json:"cpu"`
	RAM  int64   `json:"ram"`
	Disk int64   `json:"disk"`
}

func encodeResources(res map[int]plan.Resources) string {
	m := make(map[string]resourceJSON, len(res))
	for id, r := range res {
		m[strconv.Itoa(id)] = resourceJSON{CPU: r.CPU, RAM: r.RAM, Disk: r.Disk}
	}
	b, _ := json.Marshal(m) // cannot fail: plain numbers
	return string(b)
}

func decodeResources(s string) (map[int]plan.Resources, error) {
	var m map[string]resourceJSON
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("annotation %s is not JSON: %w", AnnotationResources, err)
	}
	out := make(map[int]plan.Resources, len(m))
	for k, r := range m {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("annotation %s: %q is not a container id", AnnotationResources, k)
		}
		out[id] = plan.Resources{CPU: r.CPU, RAM: r.RAM, Disk: r.Disk}
	}
	return out, nil
}

// requirements renders resources as requests and limits (equal: the pods
// get the Guaranteed QoS class).
func requirements(r plan.Resources) corev1.ResourceRequirements {
	milli := int64(math.Ceil(r.CPU*1000 - 1e-9))
	list := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(max(milli, 1), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(max(r.RAM, 1<<20), resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(max(r.Disk, 1<<20), resource.BinarySI),
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}
}

// selector returns the labels that select a topology's pods.
func selector(topology string) map[string]string {
	return map[string]string{LabelTopology: topology, LabelManagedBy: managedBy}
}

func labels(topology string) map[string]string {
	l := selector(topology)
	l[LabelName] = "egret"
	return l
}

// selectorString is selector as a label selector for List calls.
func selectorString(topology string) string {
	return LabelTopology + "=" + topology + "," + LabelManagedBy + "=" + managedBy
}

// ours reports whether an object's labels say egret made it for topology.
func ours(m metav1.Object, topology string) bool {
	l := m.GetLabels()
	return l[LabelTopology] == topology && l[LabelManagedBy] == managedBy
}

// build returns the objects of job in namespace ns.
func (s *settings) build(job spi.Job, ns string) (*Objects, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	cfgJSON, err := json.MarshalIndent(containerConfig(job.Config), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("kubernetes scheduler: encode the cluster config: %w", err)
	}
	name := job.Topology
	annotations := map[string]string{
		AnnotationTopologyID:    job.TopologyID,
		AnnotationCluster:       job.Cluster,
		AnnotationRole:          job.Role,
		AnnotationEnviron:       job.Environ,
		AnnotationPackageURI:    job.PackageURI,
		AnnotationPackageSHA256: job.PackageSHA256,
	}
	meta := func(n string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: n, Namespace: ns, Labels: labels(name), Annotations: cloneMap(annotations)}
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(ConfigMapName(name)),
		Data:       map[string]string{configKey: string(cfgJSON) + "\n"},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(name),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  selector(name),
			// The daemons find each other before any pod is ready (they
			// have no readiness probe): publish every pod's DNS name.
			PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{
				{Name: "tmanager", Port: PortTManager, TargetPort: intstr.FromInt32(PortTManager), Protocol: corev1.ProtocolTCP},
				{Name: "tmanager-http", Port: PortTManagerHTTP, TargetPort: intstr.FromInt32(PortTManagerHTTP), Protocol: corev1.ProtocolTCP},
				{Name: "stmgr", Port: PortStmgr, TargetPort: intstr.FromInt32(PortStmgr), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	res := s.containerResources(job.Plan)
	tmpl, err := s.podTemplate(job, ns)
	if err != nil {
		return nil, err
	}
	setResources(tmpl, largest(res))
	stsMeta := meta(name)
	stsMeta.Annotations[AnnotationResources] = encodeResources(res)
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: stsMeta,
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr(int32(len(job.Plan.Containers) + 1)),
			Selector:            &metav1.LabelSelector{MatchLabels: selector(name)},
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			// Pods are replaced only when egret deletes them (restart,
			// update of a resized container) or when they are lost, so an
			// update leaves the unchanged containers running.
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Template:       *tmpl,
		},
	}
	return &Objects{ConfigMap: cm, Service: svc, StatefulSet: sts}, nil
}

// containerConfig is the cluster config the pods read, without the
// credentials of the CLI's own backends (keys ending in .token, .password
// or .secret: the scheduler's and the uploader's), which no daemon uses
// and which would be readable by anybody who can read ConfigMaps.
func containerConfig(cfg spi.Config) spi.Config {
	out := spi.Config{}
	for k, v := range cfg {
		if strings.HasSuffix(k, ".token") || strings.HasSuffix(k, ".password") || strings.HasSuffix(k, ".secret") {
			continue
		}
		out[k] = v
	}
	return out
}

// podTemplate returns the pod template of job, with the configured patch
// applied (without resources: setResources adds them).
func (s *settings) podTemplate(job spi.Job, ns string) (*corev1.PodTemplateSpec, error) {
	name := job.Topology
	// The init container has extracted the package, so the executor is
	// given no URI; its container index comes from the pod-index label.
	local := job
	local.PackageURI, local.PackageSHA256 = "", ""
	args := executorcmd.WithoutEmpty(executorcmd.Args(local, 0, workDir, configFile))
	for i := range args {
		if args[i] == "--container" && i+1 < len(args) {
			args[i+1] = "$(" + EnvContainerIndex + ")"
		}
	}
	args = append(args, "--stmgr-port", strconv.Itoa(PortStmgr))
	command := "egret" // from the image
	switch {
	case s.coreURI != "":
		command = coreBinary
	case s.coreBundled:
		command = bundledBinary
	}
	fieldEnv := func(n, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: n, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
	}
	env := []corev1.EnvVar{
		fieldEnv(EnvPodName, "metadata.name"),
		fieldEnv(EnvNamespace, "metadata.namespace"),
		fieldEnv(EnvContainerIndex, "metadata.labels['"+appsv1.PodIndexLabel+"']"),
		{Name: EnvHost, Value: "$(" + EnvPodName + ")." + name + "." + ns + ".svc"},
		{Name: "EGRET_PORT_TMANAGER", Value: strconv.Itoa(PortTManager)},
		{Name: "EGRET_PORT_TMANAGER_HTTP", Value: strconv.Itoa(PortTManagerHTTP)},
	}
	mounts := []corev1.VolumeMount{{Name: volumeWork, MountPath: mountWork}}
	initEnv := []corev1.EnvVar{{Name: "EGRET_PACKAGE_URI", Value: job.PackageURI}}
	if job.PackageSHA256 != "" {
		initEnv = append(initEnv, corev1.EnvVar{Name: "EGRET_PACKAGE_SHA256", Value: job.PackageSHA256})
	}
	if s.coreURI != "" {
		initEnv = append(initEnv, corev1.EnvVar{Name: "EGRET_CORE_URI", Value: s.coreURI})
	}
	t := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels(name), Annotations: map[string]string{AnnotationTopologyID: job.TopologyID}},
		Spec: corev1.PodSpec{
			ServiceAccountName: s.serviceAccount,
			// The daemons do not call the API server.
			AutomountServiceAccountToken: ptr(false),
			SecurityContext:              podSecurity(),
			RestartPolicy:                corev1.RestartPolicyAlways,
			// The executor stops its daemons within the stop grace.
			TerminationGracePeriodSeconds: ptr(int64((s.stopGrace + 5e9).Seconds())),
			InitContainers: []corev1.Container{{
				Name:            InitContainerName,
				Image:           s.initImage,
				ImagePullPolicy: corev1.PullPolicy(s.pullPolicy),
				Command:         []string{"sh", "-c", fetchScript},
				Env:             initEnv,
				VolumeMounts:    mounts,
				SecurityContext: containerSecurity(),
			}},
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           s.image,
				ImagePullPolicy: corev1.PullPolicy(s.pullPolicy),
				Command:         []string{command},
				Args:            args,
				Env:             env,
				Ports: []corev1.ContainerPort{
					{Name: "tmanager", ContainerPort: PortTManager, Protocol: corev1.ProtocolTCP},
					{Name: "tmanager-http", ContainerPort: PortTManagerHTTP, Protocol: corev1.ProtocolTCP},
					{Name: "stmgr", ContainerPort: PortStmgr, Protocol: corev1.ProtocolTCP},
				},
				VolumeMounts:    append(slices.Clone(mounts), corev1.VolumeMount{Name: volumeConfig, MountPath: mountConfig, ReadOnly: true}),
				SecurityContext: containerSecurity(),
			}},
			Volumes: []corev1.Volume{
				{Name: volumeWork, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: volumeConfig, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(name)},
				}}},
			},
		},
	}
	if s.patch == nil {
		return t, nil
	}
	return applyPatch(t, s.patch, s.patchType, name)
}

// RunAsUser is the uid (and gid) the pods run as: the egret image's user
// egret (internal/ociimage).
const RunAsUser = 65532

// podSecurity is the pod's security context of the "restricted" Pod
// Security Standard: not root (uid and gid 65532, which also own the
// volumes), the runtime's default seccomp profile.
func podSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr(true),
		RunAsUser:      ptr(int64(RunAsUser)),
		RunAsGroup:     ptr(int64(RunAsUser)),
		FSGroup:        ptr(int64(RunAsUser)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// containerSecurity is each container's part of the "restricted"
// standard: no privilege escalation, every capability dropped.
func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// fetchScript is the init container's: download the topology package,
// check its SHA-256, extract it into the work directory, and download
// egret when egret.package.core.uri is set (a binary, or a .tar.gz/.tgz
// holding egret). It needs sh, wget, sha256sum and tar (busybox has them).
const fetchScript = `set -eu
R=/egret
: "${EGRET_PACKAGE_SHA256:=}" "${EGRET_CORE_URI:=}"
mkdir -p "$R/work/package" "$R/bin"
wget -q -O "$R/package.tar.gz" "$EGRET_PACKAGE_URI"
if [ -n "$EGRET_PACKAGE_SHA256" ]; then
  echo "$EGRET_PACKAGE_SHA256  $R/package.tar.gz" | sha256sum -c -
fi
tar -xzf "$R/package.tar.gz" -C "$R/work/package"
rm -f "$R/package.tar.gz"
case "$EGRET_CORE_URI" in
  "") ;;
  *.tar.gz|*.tgz) wget -q -O - "$EGRET_CORE_URI" | tar -xzf - -C "$R/bin" ;;
  *) wget -q -O "$R/bin/egret" "$EGRET_CORE_URI" ;;
esac
[ -z "$EGRET_CORE_URI" ] || chmod +x "$R/bin/egret"
`

// setResources gives the executor and the init container the resources r
// (the init container the same, so that the pod's QoS class stays
// Guaranteed and its effective request stays r).
func setResources(t *corev1.PodTemplateSpec, r plan.Resources) {
	req := requirements(r)
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == ContainerName {
			t.Spec.Containers[i].Resources = req
		}
	}
	for i := range t.Spec.InitContainers {
		if t.Spec.InitContainers[i].Name == InitContainerName {
			t.Spec.InitContainers[i].Resources = *req.DeepCopy()
		}
	}
}

// checkPatch parses a pod template patch (YAML or JSON, a mapping) and
// applies it to a sample template, so that a bad patch is reported at
// once. It returns the patch as JSON.
func checkPatch(p, typ string) ([]byte, error) {
	j, err := yaml.YAMLToJSON([]byte(p))
	if err != nil {
		return nil, fmt.Errorf("config key %s: not YAML or JSON: %s", KeyPodTemplatePatch, oneLine(err.Error()))
	}
	if !bytes.HasPrefix(bytes.TrimSpace(j), []byte("{")) {
		return nil, fmt.Errorf("config key %s: the patch must be a mapping of pod template fields (metadata, spec)", KeyPodTemplatePatch)
	}
	sample := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels("sample")},
		Spec: corev1.PodSpec{
			RestartPolicy:  corev1.RestartPolicyAlways,
			InitContainers: []corev1.Container{{Name: InitContainerName, Image: "init"}},
			Containers:     []corev1.Container{{Name: ContainerName, Image: "egret"}},
		},
	}
	if _, err := applyPatch(sample, j, typ, "sample"); err != nil {
		return nil, err
	}
	return j, nil
}

// applyPatch applies a strategic merge patch or a JSON merge patch to t.
// The result must decode strictly as a pod template (unknown fields are
// errors) and keep what egret relies on: the executor container, the
// topology's labels and restartPolicy Always.
func applyPatch(t *corev1.PodTemplateSpec, patch []byte, typ, topology string) (*corev1.PodTemplateSpec, error) {
	orig, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("kubernetes scheduler: encode the pod template: %w", err)
	}
	var out []byte
	if typ == PatchMerge {
		out, err = jsonpatch.MergePatch(orig, patch)
	} else {
		out, err = strategicpatch.StrategicMergePatch(orig, patch, corev1.PodTemplateSpec{})
	}
	if err != nil {
		return nil, fmt.Errorf("config key %s: cannot apply the %s patch: %s", KeyPodTemplatePatch, typ, oneLine(err.Error()))
	}
	var res corev1.PodTemplateSpec
	if err := decodeStrict(out, &res); err != nil {
		return nil, fmt.Errorf("config key %s: the patched pod template is not valid: %s", KeyPodTemplatePatch, oneLine(err.Error()))
	}
	var problems []string
	if !slices.ContainsFunc(res.Spec.Containers, func(c corev1.Container) bool { return c.Name == ContainerName }) {
		problems = append(problems, "it removes the "+ContainerName+" container")
	}
	for k, v := range selector(topology) {
		if res.Labels[k] != v {
			problems = append(problems, fmt.Sprintf("it changes the label %s, which selects the topology's pods", k))
		}
	}
	if res.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		problems = append(problems, "a StatefulSet's pods must have restartPolicy Always")
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, fmt.Errorf("config key %s: %s", KeyPodTemplatePatch, strings.Join(problems, "; "))
	}
	return &res, nil
}

// decodeStrict decodes JSON into v, failing on fields v does not have.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}

// RenderYAML renders objects as one YAML stream (documents separated by
// ---), as `kubectl apply -f` reads it, without server-set fields.
func RenderYAML(o *Objects) ([]byte, error) {
	var buf bytes.Buffer
	for i, obj := range []any{o.ConfigMap, o.Service, o.StatefulSet} {
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("kubernetes scheduler: encode manifest: %w", err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("kubernetes scheduler: encode manifest: %w", err)
		}
		delete(m, "status") // set by the API server
		y, err := yaml.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("kubernetes scheduler: encode manifest: %w", err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(y)
	}
	return buf.Bytes(), nil
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ptr[T any](v T) *T { return &v }
