package mesos

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
)

// Config keys the scheduler reads (conf/REFERENCE.md describes them).
const (
	KeyMasterURI        = "egret.mesos.master.uri"
	KeyRole             = "egret.mesos.role"
	KeyPrincipal        = "egret.mesos.principal"
	KeySecret           = "egret.mesos.secret"
	KeyUser             = "egret.mesos.user"
	KeyFailoverTimeout  = "egret.mesos.failover.timeout"
	KeyCheckpoint       = "egret.mesos.checkpoint"
	KeySubscribeTimeout = "egret.mesos.subscribe.timeout"
	KeyOfferRefuse      = "egret.mesos.offer.refuse"
	KeyOfferTimeout     = "egret.mesos.offer.timeout"
	KeyLaunchTimeout    = "egret.mesos.launch.timeout"
	KeyBackoffInitial   = "egret.mesos.relaunch.backoff.initial"
	KeyBackoffMax       = "egret.mesos.relaunch.backoff.max"
	KeyTManagerCPU      = "egret.mesos.tmanager.cpu"
	KeyTManagerRAM      = "egret.mesos.tmanager.ram"
	KeyTManagerDisk     = "egret.mesos.tmanager.disk"
	KeyFrameworkBinary  = "egret.mesos.framework.binary"

	// Keys of the core config the scheduler also reads.
	keyWorkDir      = "egret.scheduler.local.working.directory"
	keyCoreURI      = "egret.package.core.uri"
	keyMetricsSinks = "egret.metrics.sinks"
	keyStopGrace    = "egret.executor.stop.grace"
)

// settings is the scheduler's view of the config, parsed once.
type settings struct {
	master           string // base URL, no trailing slash
	role, principal  string
	secret, user     string
	failover         time.Duration
	checkpoint       bool
	subscribeTimeout time.Duration
	refuse           time.Duration
	offerTimeout     time.Duration
	launchTimeout    time.Duration
	backoffInitial   time.Duration
	backoffMax       time.Duration
	tmanager         plan.Resources
	binary           string
	workDir          string
	coreURI          string
	metricsPort      bool
	stopGrace        time.Duration
}

// parseSettings reads the scheduler's keys, reporting every bad value at
// once.
func parseSettings(cfg spi.Config) (*settings, error) {
	s := &settings{
		master:    strings.TrimRight(cfg.String(KeyMasterURI, "http://127.0.0.1:5050"), "/"),
		role:      cfg.String(KeyRole, "*"),
		principal: cfg.String(KeyPrincipal, ""),
		secret:    cfg.String(KeySecret, ""),
		user:      cfg.String(KeyUser, ""),
		binary:    cfg.String(KeyFrameworkBinary, ""),
		workDir:   cfg.String(keyWorkDir, ""),
		coreURI:   cfg.String(keyCoreURI, ""),
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	positive := func(key string, def time.Duration) time.Duration {
		d, err := cfg.Duration(key, def)
		add(err)
		if err == nil && d <= 0 {
			add(fmt.Errorf("config key %s: %s must be positive", key, d))
		}
		return d
	}
	var err error
	s.checkpoint, err = cfg.Bool(KeyCheckpoint, true)
	add(err)
	s.failover = positive(KeyFailoverTimeout, 7*24*time.Hour)
	s.subscribeTimeout = positive(KeySubscribeTimeout, 30*time.Second)
	s.refuse = positive(KeyOfferRefuse, 5*time.Second)
	s.offerTimeout = positive(KeyOfferTimeout, 2*time.Minute)
	s.launchTimeout = positive(KeyLaunchTimeout, 5*time.Minute)
	s.backoffInitial = positive(KeyBackoffInitial, time.Second)
	s.backoffMax = positive(KeyBackoffMax, time.Minute)
	s.stopGrace = positive(keyStopGrace, 10*time.Second)
	s.tmanager.CPU, err = cfg.Float(KeyTManagerCPU, 1)
	add(err)
	s.tmanager.RAM, err = bytesValue(cfg, KeyTManagerRAM, 1<<30)
	add(err)
	s.tmanager.Disk, err = bytesValue(cfg, KeyTManagerDisk, 1<<30)
	add(err)
	if s.tmanager.CPU <= 0 || s.tmanager.RAM <= 0 || s.tmanager.Disk <= 0 {
		add(fmt.Errorf("config keys %s, %s and %s must be positive", KeyTManagerCPU, KeyTManagerRAM, KeyTManagerDisk))
	}
	if s.backoffMax < s.backoffInitial {
		add(fmt.Errorf("config key %s: %s is below %s (%s)", KeyBackoffMax, s.backoffMax, KeyBackoffInitial, s.backoffInitial))
	}
	for _, sink := range strings.Split(cfg.String(keyMetricsSinks, ""), ",") {
		if strings.TrimSpace(sink) == "prometheus" {
			s.metricsPort = true
		}
	}
	if u, perr := url.Parse(s.master); perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add(fmt.Errorf("config key %s: %q is not the http(s):// address of a Mesos master (for example http://mesos-master:5050)", KeyMasterURI, s.master))
	}
	if s.role == "" || strings.ContainsAny(s.role, " \t\n/") || s.role == "." || s.role == ".." || strings.HasPrefix(s.role, "-") {
		add(fmt.Errorf("config key %s: %q is not a Mesos role (use * or a name without spaces and slashes)", KeyRole, s.role))
	}
	if s.secret != "" && s.principal == "" {
		add(fmt.Errorf("config key %s is set but %s is empty: the master authenticates a principal with its secret", KeySecret, KeyPrincipal))
	}
	if s.workDir == "" {
		add(fmt.Errorf("config key %s is not set: the framework keeps its state (framework id, tasks) in the topology's working directory", keyWorkDir))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("mesos scheduler: bad config: %w", errors.Join(errs...))
	}
	if s.user == "" {
		s.user = currentUser()
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

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "nobody"
}

// frameworkBinary returns the binary that runs the framework service.
func (s *settings) frameworkBinary() (string, error) {
	if s.binary != "" {
		return s.binary, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("mesos scheduler: find the binary to run the framework with (set %s): %w", KeyFrameworkBinary, err)
	}
	return exe, nil
}

// backoff returns the delay before relaunching a container whose task
// ended unasked for the failures-th time in a row: the initial backoff
// doubled per earlier failure, at most the maximum.
func (s *settings) backoff(failures int) time.Duration {
	d := s.backoffInitial
	for i := 1; i < failures && d < s.backoffMax; i++ {
		d *= 2
	}
	return min(d, s.backoffMax)
}
