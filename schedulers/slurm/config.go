package slurm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/egret-stream/egret/core/spi"
)

// Config keys the scheduler reads (conf/REFERENCE.md describes them).
const (
	KeyPartition       = "egret.slurm.partition"
	KeyAccount         = "egret.slurm.account"
	KeyQOS             = "egret.slurm.qos"
	KeyTimeLimit       = "egret.slurm.time.limit"
	KeyTasksPerNode    = "egret.slurm.containers.per.node"
	KeyEgretBinary     = "egret.slurm.egret.binary"
	KeyWorkingDir      = "egret.slurm.working.directory"
	KeySbatch          = "egret.slurm.sbatch"
	KeySqueue          = "egret.slurm.squeue"
	KeyScancel         = "egret.slurm.scancel"
	KeyScontrol        = "egret.slurm.scontrol"
	KeySrun            = "egret.slurm.srun"
	KeyLaunchTimeout   = "egret.slurm.launch.timeout"
	KeyCommandTimeout  = "egret.slurm.command.timeout"
	keyBackoffInitial  = "egret.executor.restart.backoff.initial"
	keyBackoffMax      = "egret.executor.restart.backoff.max"
	defaultWorkingDir  = "/tmp/egret-slurm"
	defaultLaunch      = 2 * time.Minute
	defaultCommandWait = 30 * time.Second
)

// settings is the scheduler's view of the config, parsed once.
type settings struct {
	partition, account, qos, timeLimit string
	tasksPerNode                       int
	egret                              string
	workDir                            string
	sbatch, squeue, scancel, scontrol  string
	srun                               string
	launchTimeout, commandTimeout      time.Duration
}

// Slurm's names of partitions, accounts and QoS: no whitespace, commas or
// shell metacharacters (they reach sbatch as separate arguments, never
// through a shell, but a value like "a,b" would silently mean two).
var (
	slurmName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	// Slurm's time formats: minutes, minutes:seconds, hours:minutes:seconds,
	// days-hours, days-hours:minutes, days-hours:minutes:seconds, or
	// UNLIMITED / INFINITE.
	slurmTime = regexp.MustCompile(`^(?:\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}|UNLIMITED|INFINITE)$`)
)

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
		partition: cfg.String(KeyPartition, ""),
		account:   cfg.String(KeyAccount, ""),
		qos:       cfg.String(KeyQOS, ""),
		timeLimit: cfg.String(KeyTimeLimit, ""),
		egret:     cfg.String(KeyEgretBinary, ""),
		workDir:   cfg.String(KeyWorkingDir, defaultWorkingDir),
	}
	for _, kv := range []struct{ key, v, what string }{
		{KeyPartition, s.partition, "partition"},
		{KeyAccount, s.account, "account"},
		{KeyQOS, s.qos, "QoS"},
	} {
		if kv.v != "" && !slurmName.MatchString(kv.v) {
			add(fmt.Errorf("config key %s = %q is not a Slurm %s name (letters, digits, '.', '-', '_'; empty: the cluster's default)", kv.key, kv.v, kv.what))
		}
	}
	if s.timeLimit != "" && !slurmTime.MatchString(s.timeLimit) {
		add(fmt.Errorf("config key %s = %q is not a Slurm time limit (minutes, [days-]hours:minutes:seconds, UNLIMITED; empty: the partition's default)", KeyTimeLimit, s.timeLimit))
	}
	var err error
	s.tasksPerNode, err = cfg.Int(KeyTasksPerNode, 0)
	add(err)
	if err == nil && s.tasksPerNode < 0 {
		add(fmt.Errorf("config key %s: %d must be 0 (Slurm places the containers) or more", KeyTasksPerNode, s.tasksPerNode))
	}
	if s.egret != "" && (!filepath.IsAbs(s.egret) || strings.ContainsAny(s.egret, "\n\x00")) {
		add(fmt.Errorf("config key %s = %q must be the absolute path of the egret binary on the compute nodes", KeyEgretBinary, s.egret))
	}
	if !filepath.IsAbs(s.workDir) || filepath.Clean(s.workDir) == "/" || strings.ContainsAny(s.workDir, "\n\x00") || hasDotDot(s.workDir) {
		add(fmt.Errorf("config key %s = %q must be an absolute directory other than / without `..`", KeyWorkingDir, s.workDir))
	}
	s.workDir = filepath.Clean(s.workDir)
	for _, c := range []struct {
		key string
		dst *string
		def string
	}{
		{KeySbatch, &s.sbatch, "sbatch"},
		{KeySqueue, &s.squeue, "squeue"},
		{KeyScancel, &s.scancel, "scancel"},
		{KeyScontrol, &s.scontrol, "scontrol"},
		{KeySrun, &s.srun, "srun"},
	} {
		*c.dst = cfg.String(c.key, c.def)
		if v := *c.dst; v == "" || strings.ContainsAny(v, " \t\n\x00") || (strings.Contains(v, "/") && !filepath.IsAbs(v)) {
			add(fmt.Errorf("config key %s = %q must be a command name on PATH or an absolute path", c.key, v))
		}
	}
	s.launchTimeout, err = cfg.Duration(KeyLaunchTimeout, defaultLaunch)
	add(err)
	s.commandTimeout, err = cfg.Duration(KeyCommandTimeout, defaultCommandWait)
	add(err)
	if s.launchTimeout <= 0 || s.commandTimeout <= 0 {
		add(fmt.Errorf("config keys %s and %s must be positive durations", KeyLaunchTimeout, KeyCommandTimeout))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("slurm scheduler: bad config: %w", joined(errs))
	}
	return s, nil
}

func hasDotDot(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

// egretBinary is the egret the compute nodes run: egret.slurm.egret.binary,
// else the running executable (the egret CLI, on a shared file system or
// on a one-node cluster); an external plugin binary must be told.
func (s *settings) egretBinary() (string, error) {
	if s.egret != "" {
		return s.egret, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("slurm scheduler: find the egret binary for the compute nodes (set %s): %w", KeyEgretBinary, err)
	}
	if strings.HasPrefix(filepath.Base(exe), "egret-scheduler-") {
		return "", fmt.Errorf("slurm scheduler: running as the plugin %s, it cannot tell where egret is: set %s to the egret binary on the compute nodes", filepath.Base(exe), KeyEgretBinary)
	}
	return exe, nil
}

// backoff reads the executor restart backoff the task loop uses too, in
// milliseconds.
func backoff(cfg spi.Config) (initial, maxMS int64, err error) {
	i, err1 := cfg.Duration(keyBackoffInitial, time.Second)
	m, err2 := cfg.Duration(keyBackoffMax, time.Minute)
	if err := errors.Join(err1, err2); err != nil {
		if err1 != nil && err2 != nil {
			err = joined{err1, err2}
		}
		return 0, 0, fmt.Errorf("slurm scheduler: %w", err)
	}
	if i <= 0 || m < i {
		return 0, 0, fmt.Errorf("slurm scheduler: config keys %s (%s) and %s (%s) must be positive, the maximum at least the initial", keyBackoffInitial, i, keyBackoffMax, m)
	}
	return max(1, i.Milliseconds()), max(1, m.Milliseconds()), nil
}

// mebibytes rounds bytes up to MiB (Slurm's memory unit), at least 1.
func mebibytes(b int64) int64 { return max(1, (b+(1<<20)-1)>>20) }

// joined is errors.Join on one line: the errors separated by "; ".
type joined []error

func (e joined) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e joined) Unwrap() []error { return e }
