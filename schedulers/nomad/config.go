package nomad

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
)

// Config keys the scheduler reads (conf/REFERENCE.md describes them).
const (
	KeyAddress     = "egret.nomad.address"
	KeyToken       = "egret.nomad.token"
	KeyNamespace   = "egret.nomad.namespace"
	KeyRegion      = "egret.nomad.region"
	KeyDatacenters = "egret.nomad.datacenters"
	KeyDriver      = "egret.nomad.driver"
	KeyDockerImage = "egret.nomad.docker.image"
	KeyNetworkMode = "egret.nomad.network.mode"
	KeyMHzPerCore  = "egret.nomad.mhz.per.core"
	KeyUIAddress   = "egret.nomad.ui.address"

	KeyTLSCACert     = "egret.nomad.tls.ca.cert"
	KeyTLSClientCert = "egret.nomad.tls.client.cert"
	KeyTLSClientKey  = "egret.nomad.tls.client.key"
	KeyTLSServerName = "egret.nomad.tls.server.name"
	KeyTLSSkipVerify = "egret.nomad.tls.skip.verify"

	KeyPlacementTimeout  = "egret.nomad.placement.timeout"
	KeyDeploymentTimeout = "egret.nomad.deployment.timeout"

	KeyTManagerCPU  = "egret.nomad.tmanager.cpu"
	KeyTManagerRAM  = "egret.nomad.tmanager.ram"
	KeyTManagerDisk = "egret.nomad.tmanager.disk"

	KeyRestartAttempts = "egret.nomad.restart.attempts"
	KeyRestartInterval = "egret.nomad.restart.interval"
	KeyRestartDelay    = "egret.nomad.restart.delay"
	KeyRestartMode     = "egret.nomad.restart.mode"

	KeyRescheduleAttempts      = "egret.nomad.reschedule.attempts"
	KeyRescheduleInterval      = "egret.nomad.reschedule.interval"
	KeyRescheduleDelay         = "egret.nomad.reschedule.delay"
	KeyRescheduleDelayFunction = "egret.nomad.reschedule.delay.function"
	KeyRescheduleMaxDelay      = "egret.nomad.reschedule.max.delay"

	KeyMetricsServiceRegister = "egret.nomad.metrics.service.register"
	KeyMetricsServiceInterval = "egret.nomad.metrics.service.check.interval"
	KeyMetricsServiceTimeout  = "egret.nomad.metrics.service.check.timeout"
	KeyMetricsServiceTags     = "egret.nomad.metrics.service.tags"
	KeyMetricsServiceProvider = "egret.nomad.metrics.service.provider"

	// Keys of the core config the scheduler also reads.
	keyCoreURI      = "egret.package.core.uri"
	keyCoreBundle   = "egret.package.core.bundle"
	keyMetricsSinks = "egret.metrics.sinks"
	keyStopGrace    = "egret.executor.stop.grace"
)

// settings is the scheduler's view of the config, parsed once.
type settings struct {
	address, token, namespace, region string
	uiAddress                         string
	tls                               api.TLSConfig
	datacenters                       []string
	driver, dockerImage, networkMode  string
	mhzPerCore                        int
	coreURI                           string
	coreBundled                       bool // the topology package carries egret
	placementTimeout                  time.Duration
	deploymentTimeout                 time.Duration
	tmanager                          plan.Resources
	stopGrace                         time.Duration

	restartAttempts                int
	restartInterval, restartDelay  time.Duration
	restartMode                    string
	rescheduleAttempts             int
	rescheduleInterval             time.Duration
	rescheduleDelay, rescheduleMax time.Duration
	rescheduleFunction             string

	metricsPort     bool // the prometheus sink is on: every container gets a metrics port
	metricsService  bool
	serviceInterval time.Duration
	serviceTimeout  time.Duration
	serviceTags     []string
	serviceProvider string
}

// parseSettings reads the scheduler's keys from cfg, reporting every bad
// value at once. Keys left empty take the schema defaults.
func parseSettings(cfg spi.Config) (*settings, error) {
	s := &settings{
		address:         strings.TrimRight(cfg.String(KeyAddress, ""), "/"),
		token:           cfg.String(KeyToken, ""),
		namespace:       cfg.String(KeyNamespace, ""),
		region:          cfg.String(KeyRegion, ""),
		uiAddress:       strings.TrimRight(cfg.String(KeyUIAddress, ""), "/"),
		datacenters:     list(cfg.String(KeyDatacenters, "dc1")),
		driver:          cfg.String(KeyDriver, "raw_exec"),
		dockerImage:     cfg.String(KeyDockerImage, "egret/egret:latest"),
		networkMode:     cfg.String(KeyNetworkMode, "host"),
		coreURI:         cfg.String(keyCoreURI, ""),
		restartMode:     cfg.String(KeyRestartMode, "fail"),
		serviceTags:     list(cfg.String(KeyMetricsServiceTags, "prometheus,metrics,egret")),
		serviceProvider: cfg.String(KeyMetricsServiceProvider, "nomad"),
		tls: api.TLSConfig{
			CACert:        cfg.String(KeyTLSCACert, ""),
			ClientCert:    cfg.String(KeyTLSClientCert, ""),
			ClientKey:     cfg.String(KeyTLSClientKey, ""),
			TLSServerName: cfg.String(KeyTLSServerName, ""),
		},
		rescheduleFunction: cfg.String(KeyRescheduleDelayFunction, "exponential"),
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	s.mhzPerCore, err = cfg.Int(KeyMHzPerCore, 2000)
	add(err)
	if err == nil && s.mhzPerCore <= 0 {
		add(fmt.Errorf("config key %s: %d must be positive", KeyMHzPerCore, s.mhzPerCore))
	}
	s.tls.Insecure, err = cfg.Bool(KeyTLSSkipVerify, false)
	add(err)
	s.placementTimeout, err = cfg.Duration(KeyPlacementTimeout, 30*time.Second)
	add(err)
	s.deploymentTimeout, err = cfg.Duration(KeyDeploymentTimeout, 5*time.Minute)
	add(err)
	s.stopGrace, err = cfg.Duration(keyStopGrace, 10*time.Second)
	add(err)
	s.tmanager.CPU, err = cfg.Float(KeyTManagerCPU, 1)
	add(err)
	s.tmanager.RAM, err = bytesValue(cfg, KeyTManagerRAM, 1<<30)
	add(err)
	s.tmanager.Disk, err = bytesValue(cfg, KeyTManagerDisk, 1<<30)
	add(err)
	s.restartAttempts, err = cfg.Int(KeyRestartAttempts, 3)
	add(err)
	s.restartInterval, err = cfg.Duration(KeyRestartInterval, 5*time.Minute)
	add(err)
	s.restartDelay, err = cfg.Duration(KeyRestartDelay, 15*time.Second)
	add(err)
	s.rescheduleAttempts, err = cfg.Int(KeyRescheduleAttempts, 0)
	add(err)
	s.rescheduleInterval, err = cfg.Duration(KeyRescheduleInterval, time.Hour)
	add(err)
	s.rescheduleDelay, err = cfg.Duration(KeyRescheduleDelay, 30*time.Second)
	add(err)
	s.rescheduleMax, err = cfg.Duration(KeyRescheduleMaxDelay, time.Hour)
	add(err)
	s.metricsService, err = cfg.Bool(KeyMetricsServiceRegister, true)
	add(err)
	s.serviceInterval, err = cfg.Duration(KeyMetricsServiceInterval, 10*time.Second)
	add(err)
	s.serviceTimeout, err = cfg.Duration(KeyMetricsServiceTimeout, 2*time.Second)
	add(err)
	s.coreBundled, err = cfg.Bool(keyCoreBundle, false)
	add(err)
	s.metricsPort = slices.Contains(list(cfg.String(keyMetricsSinks, "")), "prometheus")

	if s.address != "" {
		if u, perr := url.Parse(s.address); perr != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "unix") || (u.Scheme != "unix" && u.Host == "") {
			add(fmt.Errorf("config key %s: %q is not an http(s):// address of a Nomad agent", KeyAddress, s.address))
		}
	}
	oneOf := func(key, v string, allowed ...string) {
		if !slices.Contains(allowed, v) {
			add(fmt.Errorf("config key %s: %q is not one of %s", key, v, strings.Join(allowed, ", ")))
		}
	}
	oneOf(KeyDriver, s.driver, "raw_exec", "exec", "docker")
	oneOf(KeyNetworkMode, s.networkMode, "host", "bridge")
	oneOf(KeyRestartMode, s.restartMode, "fail", "delay")
	oneOf(KeyRescheduleDelayFunction, s.rescheduleFunction, "exponential", "fibonacci", "constant")
	oneOf(KeyMetricsServiceProvider, s.serviceProvider, "consul", "nomad")
	if len(s.datacenters) == 0 {
		add(fmt.Errorf("config key %s: no datacenter given (for example dc1, or * for all)", KeyDatacenters))
	}
	if s.coreURI == "" && s.driver != "docker" && !s.coreBundled {
		add(fmt.Errorf("config keys %s and %s: the containers would have no egret binary to run; set %s: true (the topology package carries this egret) or %s to where the Nomad clients can download egret (http, https, s3, gcs, git or hg)",
			keyCoreURI, keyCoreBundle, keyCoreBundle, keyCoreURI))
	}
	if u, err := url.Parse(s.coreURI); s.coreURI != "" && (err != nil || !slices.Contains(getterSchemes, u.Scheme)) {
		add(fmt.Errorf("config key %s: %q is not a URI Nomad's artifact getter downloads (use http, https, s3, gcs, git or hg; Nomad 1.6 has no file scheme)", keyCoreURI, s.coreURI))
	}
	if s.driver == "docker" && s.dockerImage == "" {
		add(fmt.Errorf("config key %s: the docker driver needs an image holding the egret binary", KeyDockerImage))
	}
	if s.tmanager.CPU <= 0 || s.tmanager.RAM <= 0 || s.tmanager.Disk <= 0 {
		add(fmt.Errorf("config keys %s, %s and %s must be positive", KeyTManagerCPU, KeyTManagerRAM, KeyTManagerDisk))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("nomad scheduler: bad config: %w", errors.Join(errs...))
	}
	return s, nil
}

// getterSchemes are the URI schemes Nomad's artifact getter downloads
// (Nomad 1.6: no file scheme, so a path on the client cannot be fetched).
var getterSchemes = []string{"http", "https", "s3", "gcs", "git", "hg"}

// clientConfig returns the Nomad client config: the standard NOMAD_*
// environment variables (as the nomad CLI reads them), overridden by every
// egret.nomad.* key that is set.
func (s *settings) clientConfig() *api.Config {
	c := api.DefaultConfig()
	if s.address != "" {
		c.Address = s.address
	}
	if s.token != "" {
		c.SecretID = s.token
	}
	if s.namespace != "" {
		c.Namespace = s.namespace
	}
	if s.region != "" {
		c.Region = s.region
	}
	if c.TLSConfig == nil {
		c.TLSConfig = &api.TLSConfig{}
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.TLSConfig.CACert, s.tls.CACert)
	set(&c.TLSConfig.ClientCert, s.tls.ClientCert)
	set(&c.TLSConfig.ClientKey, s.tls.ClientKey)
	set(&c.TLSConfig.TLSServerName, s.tls.TLSServerName)
	if s.tls.Insecure {
		c.TLSConfig.Insecure = true
	}
	return c
}

// uiBase is the base URL of the Nomad web UI.
func (s *settings) uiBase(c *api.Config) string {
	if s.uiAddress != "" {
		return s.uiAddress
	}
	return strings.TrimRight(c.Address, "/")
}

func list(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
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

// mhz converts cores to Nomad's CPU shares in MHz (at least 1).
func (s *settings) mhz(cores float64) int {
	return max(1, int(math.Ceil(cores*float64(s.mhzPerCore)-1e-9)))
}

// mebibytes converts bytes to whole MiB, rounding up, at least min.
func mebibytes(b int64, minimum int) int {
	return max(minimum, int((b+(1<<20)-1)>>20))
}
