package aurora

import (
	"fmt"
	"net/url"
	"os"
	"os/user"
	"regexp"
	"strings"
	"time"

	"github.com/egret-stream/egret/core/spi"
)

// Config keys the scheduler reads (conf/REFERENCE.md describes them).
const (
	KeySchedulerURI = "egret.aurora.scheduler.uri"
	KeyCluster      = "egret.aurora.cluster"
	KeyRole         = "egret.aurora.role"
	KeyEnviron      = "egret.aurora.environ"
	KeyUsername     = "egret.aurora.username"
	KeyPassword     = "egret.aurora.password"
	KeyWaitTimeout  = "egret.aurora.wait.timeout"
	KeyKillAttempts = "egret.aurora.kill.max.attempts"
	KeyKillRetry    = "egret.aurora.kill.retry.interval"

	// Keys of the core config the scheduler also reads.
	keyCoreURI   = "egret.package.core.uri"
	keyStopGrace = "egret.executor.stop.grace"
)

// goodIdentifier is Aurora's GOOD_IDENTIFIER_PATTERN for the parts of a
// job key.
var goodIdentifier = regexp.MustCompile(`^[\w\-.]+$`)

// settings is the scheduler's view of the config, parsed once.
type settings struct {
	api            string // the API endpoint: <scheduler uri>/api
	base           string // the scheduler's address, for UI links
	cluster        string
	role, environ  string
	user, password string
	waitTimeout    time.Duration
	killAttempts   int
	killRetry      time.Duration
	coreURI        string
	stopGrace      time.Duration
	// owner is the job's (deprecated but still checked) owner: the
	// submitting Unix user, as the aurora client sends.
	owner string
}

// submitter returns the name of the Unix user running egret, or "egret"
// when it is not a valid Aurora identifier.
func submitter() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if !goodIdentifier.MatchString(name) {
		return "egret"
	}
	return name
}

// parseSettings reads the scheduler's keys from cfg, reporting every bad
// value at once.
func parseSettings(cfg spi.Config) (*settings, error) {
	s := &settings{
		base:     strings.TrimRight(strings.TrimSpace(cfg.String(KeySchedulerURI, "")), "/"),
		cluster:  strings.TrimSpace(cfg.String(KeyCluster, "devcluster")),
		role:     strings.TrimSpace(cfg.String(KeyRole, "")),
		environ:  strings.TrimSpace(cfg.String(KeyEnviron, "")),
		user:     cfg.String(KeyUsername, ""),
		password: cfg.String(KeyPassword, ""),
		coreURI:  strings.TrimSpace(cfg.String(keyCoreURI, "")),
		owner:    submitter(),
	}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	s.waitTimeout, err = cfg.Duration(KeyWaitTimeout, 5*time.Minute)
	add(err)
	s.killAttempts, err = cfg.Int(KeyKillAttempts, 5)
	add(err)
	s.killRetry, err = cfg.Duration(KeyKillRetry, 2*time.Second)
	add(err)
	s.stopGrace, err = cfg.Duration(keyStopGrace, 10*time.Second)
	add(err)

	switch u, perr := url.Parse(s.base); {
	case s.base == "":
		add(fmt.Errorf("config key %s is not set: give the Aurora scheduler's address, for example http://aurora.example.com:8081", KeySchedulerURI))
	case perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		add(fmt.Errorf("config key %s: %q is not an http(s):// address of an Aurora scheduler (for example http://aurora.example.com:8081)", KeySchedulerURI, s.base))
	default:
		s.api = s.base + APIPath
	}
	if !goodIdentifier.MatchString(s.cluster) {
		add(fmt.Errorf("config key %s: %q is not an Aurora cluster name (letters, digits, _, - and dots)", KeyCluster, s.cluster))
	}
	for _, kv := range [][2]string{{KeyRole, s.role}, {KeyEnviron, s.environ}} {
		if kv[1] != "" && !goodIdentifier.MatchString(kv[1]) {
			add(fmt.Errorf("config key %s: %q may only hold letters, digits, _, - and dots (Aurora's job key rule)", kv[0], kv[1]))
		}
	}
	if s.waitTimeout <= 0 {
		add(fmt.Errorf("config key %s: must be positive", KeyWaitTimeout))
	}
	if s.killAttempts < 1 {
		add(fmt.Errorf("config key %s: %d must be at least 1", KeyKillAttempts, s.killAttempts))
	}
	if s.killRetry <= 0 {
		add(fmt.Errorf("config key %s: must be positive", KeyKillRetry))
	}
	if s.password != "" && s.user == "" {
		add(fmt.Errorf("config key %s is set but %s is not: give both for HTTP basic authentication", KeyPassword, KeyUsername))
	}
	if s.coreURI != "" {
		if u, perr := url.Parse(s.coreURI); perr != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") {
			add(fmt.Errorf("config key %s: %q is not an http://, https:// or file:// URI the Aurora agents can fetch with curl", keyCoreURI, s.coreURI))
		} else if strings.ContainsAny(s.coreURI, "'{}") {
			add(fmt.Errorf("config key %s: %q may not contain quotes or braces (it goes into a Thermos command line)", keyCoreURI, s.coreURI))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("aurora scheduler: bad config: %w", oneLine(errs))
	}
	return s, nil
}
