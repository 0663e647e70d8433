package kubernetes

import (
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
)

// Config keys the scheduler reads (conf/REFERENCE.md describes them).
const (
	KeyKubeconfig       = "egret.kubernetes.kubeconfig"
	KeyContext          = "egret.kubernetes.context"
	KeyNamespace        = "egret.kubernetes.namespace"
	KeyServiceAccount   = "egret.kubernetes.service.account"
	KeyImage            = "egret.kubernetes.image"
	KeyImagePullPolicy  = "egret.kubernetes.image.pull.policy"
	KeyInitImage        = "egret.kubernetes.init.image"
	KeyPodTemplatePatch = "egret.kubernetes.pod.template.patch"
	KeyPatchType        = "egret.kubernetes.pod.template.patch.type"
	KeyScheduleTimeout  = "egret.kubernetes.schedule.timeout"
	KeyDeleteTimeout    = "egret.kubernetes.delete.timeout"
	KeyRequestTimeout   = "egret.kubernetes.request.timeout"
	KeyTManagerCPU      = "egret.kubernetes.tmanager.cpu"
	KeyTManagerRAM      = "egret.kubernetes.tmanager.ram"
	KeyTManagerDisk     = "egret.kubernetes.tmanager.disk"

	// Keys of the core config the scheduler also reads.
	keyCoreURI    = "egret.package.core.uri"
	keyCoreBundle = "egret.package.core.bundle"
	keyStopGrace  = "egret.executor.stop.grace"
)

// Patch types of KeyPatchType.
const (
	PatchStrategic = "strategic"
	PatchMerge     = "merge"
)

// settings is the scheduler's view of the config, parsed once.
type settings struct {
	kubeconfig, context string
	namespace           string // "" : the kubeconfig context's (or the pod's, in cluster)
	serviceAccount      string
	image, initImage    string
	pullPolicy          string
	patch               []byte // the pod template patch as JSON, nil when none
	patchType           string
	scheduleTimeout     time.Duration
	deleteTimeout       time.Duration
	requestTimeout      time.Duration
	tmanager            plan.Resources
	coreURI             string
	coreBundled         bool
	stopGrace           time.Duration
}

// parseSettings reads the scheduler's keys from cfg, reporting every bad
// value at once. Keys left empty take the schema defaults.
func parseSettings(cfg spi.Config) (*settings, error) {
	s := &settings{
		kubeconfig:     cfg.String(KeyKubeconfig, ""),
		context:        cfg.String(KeyContext, ""),
		namespace:      cfg.String(KeyNamespace, ""),
		serviceAccount: cfg.String(KeyServiceAccount, ""),
		image:          cfg.String(KeyImage, "egret/egret:latest"),
		initImage:      cfg.String(KeyInitImage, "busybox:1.36"),
		pullPolicy:     cfg.String(KeyImagePullPolicy, "IfNotPresent"),
		patchType:      cfg.String(KeyPatchType, PatchStrategic),
		coreURI:        cfg.String(keyCoreURI, ""),
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	s.scheduleTimeout, err = cfg.Duration(KeyScheduleTimeout, 2*time.Minute)
	add(err)
	s.deleteTimeout, err = cfg.Duration(KeyDeleteTimeout, 2*time.Minute)
	add(err)
	s.requestTimeout, err = cfg.Duration(KeyRequestTimeout, 30*time.Second)
	add(err)
	s.stopGrace, err = cfg.Duration(keyStopGrace, 10*time.Second)
	add(err)
	s.coreBundled, err = cfg.Bool(keyCoreBundle, false)
	add(err)
	s.tmanager.CPU, err = cfg.Float(KeyTManagerCPU, 1)
	add(err)
	s.tmanager.RAM, err = bytesValue(cfg, KeyTManagerRAM, 1<<30)
	add(err)
	s.tmanager.Disk, err = bytesValue(cfg, KeyTManagerDisk, 1<<30)
	add(err)
	if s.tmanager.CPU <= 0 || s.tmanager.RAM <= 0 || s.tmanager.Disk <= 0 {
		add(fmt.Errorf("config keys %s, %s and %s must be positive", KeyTManagerCPU, KeyTManagerRAM, KeyTManagerDisk))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{KeyScheduleTimeout, s.scheduleTimeout}, {KeyDeleteTimeout, s.deleteTimeout}, {KeyRequestTimeout, s.requestTimeout}} {
		if d.v < 0 {
			add(fmt.Errorf("config key %s: %s is negative", d.key, d.v))
		}
	}
	if s.namespace != "" {
		for _, m := range validation.IsDNS1123Label(s.namespace) {
			add(fmt.Errorf("config key %s: %q is not a namespace name: %s", KeyNamespace, s.namespace, m))
		}
	}
	if s.serviceAccount != "" {
		for _, m := range validation.IsDNS1123Subdomain(s.serviceAccount) {
			add(fmt.Errorf("config key %s: %q is not a service account name: %s", KeyServiceAccount, s.serviceAccount, m))
		}
	}
	for _, img := range []struct{ key, v string }{{KeyImage, s.image}, {KeyInitImage, s.initImage}} {
		if img.v == "" || strings.IndexFunc(img.v, unicode.IsSpace) >= 0 {
			add(fmt.Errorf("config key %s: %q is not a container image reference", img.key, img.v))
		}
	}
	switch s.pullPolicy {
	case "Always", "IfNotPresent", "Never":
	default:
		add(fmt.Errorf("config key %s: %q is not one of Always, IfNotPresent, Never", KeyImagePullPolicy, s.pullPolicy))
	}
	switch s.patchType {
	case PatchStrategic, PatchMerge:
	default:
		add(fmt.Errorf("config key %s: %q is not one of %s, %s", KeyPatchType, s.patchType, PatchStrategic, PatchMerge))
	}
	if p := strings.TrimSpace(cfg.String(KeyPodTemplatePatch, "")); p != "" && len(errs) == 0 {
		s.patch, err = checkPatch(p, s.patchType)
		add(err)
	}
	if s.coreURI != "" && !isHTTP(s.coreURI) {
		add(fmt.Errorf("config key %s: %q is not an http(s) URL (the init container downloads egret with wget)", keyCoreURI, s.coreURI))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("kubernetes scheduler: bad config: %w", joinLine(errs))
	}
	return s, nil
}

// restConfig returns the API server's address and credentials, as kubectl
// finds them: the kubeconfig file of egret.kubernetes.kubeconfig (else
// $KUBECONFIG, else ~/.kube/config) and its context egret.kubernetes.context
// (else the current one), or, with no kubeconfig at all inside a pod, the
// pod's service account (in-cluster config). It also returns the namespace:
// egret.kubernetes.namespace, else the context's, else the pod's, else
// "default".
func (s *settings) restConfig() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if s.kubeconfig != "" {
		if _, err := os.Stat(s.kubeconfig); err != nil {
			return nil, "", fmt.Errorf("kubernetes scheduler: config key %s: %w", KeyKubeconfig, err)
		}
		rules.ExplicitPath = s.kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: s.context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	rc, err := cc.ClientConfig()
	if err != nil {
		where := "the kubeconfig (" + strings.Join(rules.GetLoadingPrecedence(), ", ") + ")"
		if s.kubeconfig != "" {
			where = s.kubeconfig
		}
		return nil, "", fmt.Errorf("kubernetes scheduler: no usable API server config in %s, nor an in-cluster service account: %s (set %s and %s)",
			where, oneLine(err.Error()), KeyKubeconfig, KeyContext)
	}
	ns := s.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	rc = rest.CopyConfig(rc)
	rc.Timeout = s.requestTimeout
	rc.UserAgent = "egret-scheduler-kubernetes"
	if rc.QPS == 0 {
		// client-go's default (5/s, bursts of 10) would make a kill of a
		// large topology (a delete per pod) wait on the client's limiter.
		rc.QPS, rc.Burst = 50, 100
	}
	return rc, ns, nil
}

func bytesValue(cfg spi.Config, key string, def int64) (int64, error) {
	v := cfg.String(key, "")
	if v == "" {
		return def, nil
	}
	n, err := conf.ParseBytes(v)
	if err != nil {
		return 0, fmt.Errorf("config key %s: %w", key, err)
	}
	return n, nil
}

func isHTTP(uri string) bool {
	return strings.HasPrefix(uri, "http://") || strings.HasPrefix(uri, "https://")
}

// joinLine joins errors into one line, separated by "; " (errors.Join
// would put each on its own line), wrapping them all.
func joinLine(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return &lineErrors{msg: strings.Join(msgs, "; "), errs: errs}
}

type lineErrors struct {
	msg  string
	errs []error
}

func (e *lineErrors) Error() string   { return e.msg }
func (e *lineErrors) Unwrap() []error { return e.errs }

// oneLine collapses whitespace runs (newlines included) into one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
