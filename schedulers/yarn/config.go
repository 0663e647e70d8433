package yarn

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/hdfsx"
)

// Config keys the scheduler reads (conf/REFERENCE.md describes them).
const (
	KeyResourceManager = "egret.yarn.resourcemanager.address"
	KeyUser            = "egret.yarn.user"
	KeyQueue           = "egret.yarn.queue"
	KeyPriority        = "egret.yarn.priority"
	KeyNodeLabel       = "egret.yarn.node.label"
	KeyAMMemory        = "egret.yarn.am.memory"
	KeyTManagerVcores  = "egret.yarn.tmanager.vcores"
	KeyTManagerMemory  = "egret.yarn.tmanager.memory"
	KeyLaunchTimeout   = "egret.yarn.launch.timeout"
	KeyRequestTimeout  = "egret.yarn.request.timeout"

	// Keys of the core config the scheduler also reads.
	keyCoreURI = "egret.package.core.uri"
	// keyCoreBundle, when true, makes the launcher put egret into the
	// topology package (package/egret).
	keyCoreBundle = "egret.package.core.bundle"
)

// settings is the scheduler's view of the config, parsed once.
type settings struct {
	rm             *url.URL
	user           string
	queue          string
	priority       int
	nodeLabel      string
	amMemoryMB     int64
	tmanager       resource
	coreURI        string
	launchTimeout  time.Duration
	requestTimeout time.Duration
}

// resource is a YARN container size.
type resource struct {
	vcores   int
	memoryMB int64
}

func (r resource) String() string { return fmt.Sprintf("%d vcores and %d MiB", r.vcores, r.memoryMB) }

// fits reports whether r fits in limit in every dimension.
func (r resource) fits(limit resource) bool {
	return r.vcores <= limit.vcores && r.memoryMB <= limit.memoryMB
}

// maxResource is the larger of a and b in every dimension.
func maxResource(a, b resource) resource {
	return resource{vcores: max(a.vcores, b.vcores), memoryMB: max(a.memoryMB, b.memoryMB)}
}

// containerResource converts the packing plan's resources of a container
// to YARN's: whole vcores (rounded up) and MiB (rounded up).
func containerResource(r plan.Resources) resource {
	return resource{
		vcores:   max(1, int(math.Ceil(r.CPU-1e-9))),
		memoryMB: max(1, (r.RAM+(1<<20)-1)>>20),
	}
}

// parseSettings reads the scheduler's keys from cfg, reporting every bad
// value at once.
func parseSettings(cfg spi.Config) (*settings, error) {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	s := &settings{
		queue:     cfg.String(KeyQueue, "default"),
		nodeLabel: cfg.String(KeyNodeLabel, ""),
		coreURI:   cfg.String(keyCoreURI, ""),
	}
	rm := strings.TrimRight(cfg.String(KeyResourceManager, ""), "/")
	if rm == "" {
		add(fmt.Errorf("config key %s is required (the ResourceManager's web address, e.g. http://rm.example.com:8088)", KeyResourceManager))
	} else if u, err := url.Parse(rm); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		add(fmt.Errorf("config key %s: %q is not the http(s)://host:port web address of a ResourceManager", KeyResourceManager, rm))
	} else {
		s.rm = u
	}
	user, err := hdfsx.User(cfg.String(KeyUser, ""))
	add(err)
	s.user = user
	if strings.ContainsAny(s.user, " \t\n/:?&#") {
		add(fmt.Errorf("config key %s = %q is not a user name", KeyUser, s.user))
	}
	if s.queue == "" || strings.ContainsAny(s.queue, " \t\n/?&#") {
		add(fmt.Errorf("config key %s = %q is not a queue name", KeyQueue, s.queue))
	}
	if strings.ContainsAny(s.nodeLabel, " \t\n,&|!()") {
		add(fmt.Errorf("config key %s = %q is not a node label (give one label, or nothing for the default partition)", KeyNodeLabel, s.nodeLabel))
	}
	s.priority, err = cfg.Int(KeyPriority, 0)
	add(err)
	if err == nil && s.priority < 0 {
		add(fmt.Errorf("config key %s: %d must be 0 (the queue's default) or more", KeyPriority, s.priority))
	}
	am, err := bytesValue(cfg, KeyAMMemory, 512<<20)
	add(err)
	s.amMemoryMB = containerResource(plan.Resources{RAM: am}).memoryMB
	tmRAM, err := bytesValue(cfg, KeyTManagerMemory, 1<<30)
	add(err)
	tmCPU, err := cfg.Int(KeyTManagerVcores, 1)
	add(err)
	if tmCPU <= 0 || tmRAM <= 0 || am <= 0 {
		add(fmt.Errorf("config keys %s, %s and %s must be positive", KeyTManagerVcores, KeyTManagerMemory, KeyAMMemory))
	}
	s.tmanager = containerResource(plan.Resources{CPU: float64(tmCPU), RAM: tmRAM})
	s.launchTimeout, err = cfg.Duration(KeyLaunchTimeout, 3*time.Minute)
	add(err)
	s.requestTimeout, err = cfg.Duration(KeyRequestTimeout, 60*time.Second)
	add(err)
	if s.launchTimeout <= 0 || s.requestTimeout <= 0 {
		add(fmt.Errorf("config keys %s and %s must be positive durations", KeyLaunchTimeout, KeyRequestTimeout))
	}
	if s.coreURI != "" {
		if u, err := url.Parse(s.coreURI); err != nil || u.Scheme == "" || u.Path == "" {
			add(fmt.Errorf("config key %s = %q: YARN localizes the egret binary from a URI of a Hadoop file system (hdfs://namenode:8020/egret/egret)", keyCoreURI, s.coreURI))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("yarn scheduler: bad config: %w", errors.Join(errs...))
	}
	return s, nil
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
