package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/shellapi"
	"github.com/egret-stream/egret/internal/logfile"
)

// Settings keys the executor reads (from Config.Settings, which overrides the
// package's cluster config).
const (
	KeyBackoffInitial = "egret.executor.restart.backoff.initial"
	KeyBackoffMax     = "egret.executor.restart.backoff.max"
	KeyResetAfter     = "egret.executor.restart.reset.after"
	KeyStopGrace      = "egret.executor.stop.grace"
	KeyLogMaxSize     = "egret.logging.max.size"
	KeyLogMaxFiles    = "egret.logging.max.files"
	// KeyCgroups is "auto" (put every child in its own cgroup where the
	// executor may create cgroups) or "off" (Go limits and the RSS
	// watchdog only).
	KeyCgroups = "egret.executor.cgroups"
	// KeyMonitorInterval is how often the executor reads the resource use
	// of its children (cgroup counters, RSS, disk) and publishes it.
	KeyMonitorInterval = "egret.executor.monitor.interval"
	// KeyInstanceMaxProcs, when positive, is the GOMAXPROCS of every
	// instance instead of the one derived from its cpu.
	KeyInstanceMaxProcs = "egret.instance.gomaxprocs"
)

// The values of KeyCgroups.
const (
	CgroupsAuto = "auto"
	CgroupsOff  = "off"
)

// Defaults of the settings.
const (
	DefaultBackoffInitial  = time.Second
	DefaultBackoffMax      = 30 * time.Second
	DefaultResetAfter      = 60 * time.Second
	DefaultStopGrace       = 10 * time.Second
	DefaultLogMaxSize      = 100 << 20
	DefaultLogMaxFiles     = 5
	DefaultMonitorInterval = 2 * time.Second
)

// maxSocketPath is the longest Unix socket path handed to a child; longer
// paths are replaced by short ones under os.TempDir() (sun_path holds 108
// bytes on Linux and 104 on macOS, including the terminating NUL).
const maxSocketPath = 100

// Config configures an executor.
type Config struct {
	// TopologyName and TopologyID identify the topology. The ID guards
	// against a resubmitted topology of the same name ("" skips the check).
	TopologyName string
	TopologyID   string
	// Container is this container's id: 0 runs the topology manager, 1..N
	// run a stream manager and the instances the packing plan assigns.
	Container int
	// WorkDir is the container's working directory (created if needed).
	WorkDir string
	// PackageURI is where the topology package is (file://, absolute path,
	// http(s)://). Empty: the package is already extracted in
	// WorkDir/package.
	PackageURI string
	// PackageSHA256 is the package's expected hex SHA-256 ("" trusts the
	// download, or the X-Egret-Sha256 header of an http server).
	PackageSHA256 string
	// ConfigFile is the resolved cluster config (a JSON object of strings)
	// handed to every daemon; default WorkDir/package/cluster.json.
	ConfigFile string
	// EgretBinary is the `egret` binary daemons are run with; default
	// os.Executable().
	EgretBinary string
	// StmgrPort is the TCP port passed to the stream manager (0: any).
	StmgrPort int
	// StateManager is the session the packing plan is read and watched
	// with. When nil, Connect builds one from the cluster config after the
	// package is extracted, and the executor closes it when it returns.
	StateManager spi.StateManager
	Connect      func(ctx context.Context, cluster spi.Config) (spi.StateManager, error)
	// Settings override the cluster config's keys (see the Key constants;
	// the http token and timeout of internal/fetch are read from here,
	// since the cluster config is inside the package).
	Settings spi.Config
	// ExtraEnv is appended to the executor's environment for every child.
	ExtraEnv []string
	// Ready, when set, is called once the initial processes are started.
	Ready func()
	// Hooks observe supervision (tests, the shell).
	Hooks Hooks
}

// Hooks observe the executor.
type Hooks struct {
	// OnEvent receives every supervision event, synchronously from the
	// goroutine supervising the process; it must not block.
	OnEvent func(Event)
}

// settings are the parsed settings.
type settings struct {
	backoffInitial time.Duration
	backoffMax     time.Duration
	resetAfter     time.Duration
	stopGrace      time.Duration
	logs           logfile.Limits // of every child's log
	cgroups        string         // CgroupsAuto or CgroupsOff
	monitorEvery   time.Duration
	maxProcs       int // egret.instance.gomaxprocs (0: from the plan's cpu)
}

func parseSettings(c spi.Config) (settings, error) {
	var s settings
	var err error
	get := func(key string, def time.Duration, dst *time.Duration) {
		if err != nil {
			return
		}
		var d time.Duration
		d, err = c.Duration(key, def)
		if err == nil && d <= 0 {
			err = fmt.Errorf("config key %s: %s must be positive", key, d)
		}
		*dst = d
	}
	get(KeyBackoffInitial, DefaultBackoffInitial, &s.backoffInitial)
	get(KeyBackoffMax, DefaultBackoffMax, &s.backoffMax)
	get(KeyResetAfter, DefaultResetAfter, &s.resetAfter)
	get(KeyStopGrace, DefaultStopGrace, &s.stopGrace)
	get(KeyMonitorInterval, DefaultMonitorInterval, &s.monitorEvery)
	if err != nil {
		return s, err
	}
	if s.backoffMax < s.backoffInitial {
		return s, fmt.Errorf("config key %s (%s) is below %s (%s); the cap must be at least the initial backoff",
			KeyBackoffMax, s.backoffMax, KeyBackoffInitial, s.backoffInitial)
	}
	size, err := c.Size(KeyLogMaxSize, DefaultLogMaxSize, math.MaxInt)
	if err != nil {
		return s, err
	}
	files, err := c.Int(KeyLogMaxFiles, DefaultLogMaxFiles)
	if err != nil {
		return s, err
	}
	switch s.cgroups = c.String(KeyCgroups, CgroupsAuto); s.cgroups {
	case CgroupsAuto, CgroupsOff:
	default:
		return s, fmt.Errorf("config key %s: %q is neither %s nor %s", KeyCgroups, s.cgroups, CgroupsAuto, CgroupsOff)
	}
	if s.maxProcs, err = c.Int(KeyInstanceMaxProcs, 0); err != nil {
		return s, err
	}
	if s.maxProcs < 0 {
		return s, fmt.Errorf("config key %s must not be negative", KeyInstanceMaxProcs)
	}
	s.logs = logfile.Limits{MaxSize: int64(size), MaxFiles: files}
	if err := s.logs.Validate(); err != nil {
		return s, fmt.Errorf("config keys %s, %s: %w", KeyLogMaxSize, KeyLogMaxFiles, err)
	}
	return s, nil
}

// Paths are the files and sockets of a container's working directory. The
// executor computes them once and hands them to its children explicitly.
type Paths struct {
	WorkDir    string // W (absolute)
	PackageDir string // W/package
	// ConfigFile is the cluster config passed with --config.
	ConfigFile string
	// TopologyBinary is W/package/topology, run once per instance.
	TopologyBinary string
	LogsDir        string // W/logs
	// InstancesDir holds each instance's working directory,
	// W/instances/<process name>.
	InstancesDir string
	PidsFile     string // W/pids.json
	MetricsFile  string // W/metrics.jsonl (the metrics manager's file sink)
	// StmgrSocket and MetricsSocket are W/stmgr.sock and W/metricsmgr.sock,
	// or short paths under SocketDir when those are too long.
	StmgrSocket   string
	MetricsSocket string
	// CkptMgrSocket is W/ckptmgr.sock (or under SocketDir): the checkpoint
	// manager's, in effectively-once topologies.
	CkptMgrSocket string
	// TManagerLocation is W/tmanager-location, where the executor of a
	// process-per-container topology mirrors the topology manager's
	// location for the container process (daemons/tmlocation).
	TManagerLocation string
	// SocketDir is the private directory under os.TempDir() holding the
	// sockets when W is too long ("" otherwise).
	SocketDir string
}

// ComputePaths derives the paths of workDir. configFile "" means
// W/package/cluster.json; a relative configFile is relative to W.
func ComputePaths(workDir, configFile string) (Paths, error) {
	if workDir == "" {
		return Paths{}, errors.New("executor: a working directory is required (--work-dir)")
	}
	w, err := filepath.Abs(workDir)
	if err != nil {
		return Paths{}, fmt.Errorf("executor: working directory %q: %w", workDir, err)
	}
	p := Paths{
		WorkDir:       w,
		PackageDir:    filepath.Join(w, "package"),
		LogsDir:       filepath.Join(w, "logs"),
		InstancesDir:  filepath.Join(w, "instances"),
		PidsFile:      filepath.Join(w, shellapi.PidsFile),
		MetricsFile:   filepath.Join(w, "metrics.jsonl"),
		StmgrSocket:   filepath.Join(w, "stmgr.sock"),
		MetricsSocket: filepath.Join(w, "metricsmgr.sock"),
		CkptMgrSocket: filepath.Join(w, "ckptmgr.sock"),

		TManagerLocation: filepath.Join(w, "tmanager-location"),
	}
	p.TopologyBinary = filepath.Join(p.PackageDir, "topology")
	switch {
	case configFile == "":
		p.ConfigFile = filepath.Join(p.PackageDir, "cluster.json")
	case filepath.IsAbs(configFile):
		p.ConfigFile = filepath.Clean(configFile)
	default:
		p.ConfigFile = filepath.Join(w, configFile)
	}
	if len(p.StmgrSocket) > maxSocketPath || len(p.MetricsSocket) > maxSocketPath || len(p.CkptMgrSocket) > maxSocketPath {
		// Deterministic, so a restarted executor picks the same paths.
		sum := sha256.Sum256([]byte(w))
		p.SocketDir = filepath.Join(os.TempDir(), "egret-"+hex.EncodeToString(sum[:6]))
		p.StmgrSocket = filepath.Join(p.SocketDir, "stmgr.sock")
		p.MetricsSocket = filepath.Join(p.SocketDir, "metricsmgr.sock")
		p.CkptMgrSocket = filepath.Join(p.SocketDir, "ckptmgr.sock")
		if len(p.MetricsSocket) > maxSocketPath {
			return Paths{}, fmt.Errorf("executor: socket path %s is longer than %d bytes even under the temp directory; set TMPDIR to a shorter directory",
				p.MetricsSocket, maxSocketPath)
		}
	}
	return p, nil
}
