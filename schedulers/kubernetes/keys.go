package kubernetes

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the kubernetes scheduler reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: KeyKubeconfig, Type: spi.KeyString, Default: "",
		Doc: "Kubeconfig file naming the API server and the credentials; empty: $KUBECONFIG, else ~/.kube/config, else (inside a pod, with no kubeconfig) the pod's service account (in-cluster config)."},
	{Name: KeyContext, Type: spi.KeyString, Default: "",
		Doc: "Context of the kubeconfig to use; empty: its current-context."},
	{Name: KeyNamespace, Type: spi.KeyString, Default: "",
		Doc: "Namespace of the topologies' StatefulSets, Services and ConfigMaps; empty: the context's namespace, else the pod's (in cluster), else default."},
	{Name: KeyServiceAccount, Type: spi.KeyString, Default: "",
		Doc: "Service account the pods run as; empty: the namespace's default."},
	{Name: KeyImage, Type: spi.KeyString, Default: "egret/egret:latest",
		Doc: "Image of the executor container. It runs the egret of the topology package (egret.package.core.bundle) or of egret.package.core.uri, else the image's own egret (on its PATH)."},
	{Name: KeyImagePullPolicy, Type: spi.KeyEnum, Enum: []string{"Always", "IfNotPresent", "Never"}, Default: "IfNotPresent",
		Doc: "imagePullPolicy of the executor and init containers."},
	{Name: KeyInitImage, Type: spi.KeyString, Default: "busybox:1.36",
		Doc: "Image of the init container that downloads the topology package (and egret.package.core.uri) into the pod; it needs sh, wget, sha256sum and tar."},
	{Name: KeyPodTemplatePatch, Type: spi.KeyString, Default: "",
		Doc: "Patch (YAML or JSON, e.g. a block scalar) applied to the StatefulSet's pod template: nodeSelector, tolerations, extra env, sidecars... It is checked at load: the result must be a valid pod template that keeps the executor container, the topology's labels and restartPolicy Always."},
	{Name: KeyPatchType, Type: spi.KeyEnum, Enum: []string{"strategic", "merge"}, Default: "strategic",
		Doc: "How egret.kubernetes.pod.template.patch applies: strategic (Kubernetes' strategic merge patch: lists such as containers merge by name) or merge (RFC 7386 JSON merge patch: lists are replaced)."},
	{Name: KeyScheduleTimeout, Type: spi.KeyDuration, Default: "2m", Check: spi.CheckNonNegative,
		Doc: "How long submit and update wait for every pod to be bound to a node; a submit whose pods are not placed by then fails with the Kubernetes scheduler's message (FailedScheduling) and its objects are deleted. 0: do not wait."},
	{Name: KeyDeleteTimeout, Type: spi.KeyDuration, Default: "2m", Check: spi.CheckPositive,
		Doc: "How long kill waits for the topology's pods to end after deleting its objects."},
	{Name: KeyRequestTimeout, Type: spi.KeyDuration, Default: "30s", Check: spi.CheckPositive,
		Doc: "Timeout of one request to the API server."},
	{Name: KeyTManagerCPU, Type: spi.KeyFloat, Default: "1.0", Check: spi.CheckPositive,
		Doc: "CPU cores of container 0 (topology manager), which the packing plan does not size. Every pod gets the largest container's resources (one pod template per StatefulSet)."},
	{Name: KeyTManagerRAM, Type: spi.KeyBytes, Default: "1GiB", Check: spi.CheckPositive,
		Doc: "Memory of container 0."},
	{Name: KeyTManagerDisk, Type: spi.KeyBytes, Default: "1GiB", Check: spi.CheckPositive,
		Doc: "Ephemeral storage of container 0."},
}
