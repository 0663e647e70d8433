// Command fakeegret stands in for the egret binary in the local scheduler's
// tests. It implements the two subcommands the local scheduler runs:
//
//	fakeegret scheduler --work-dir W --config F
//	    runs local.Serve with short restart backoffs (100ms doubling to 800ms).
//	fakeegret executor --topology T --container N --work-dir D ...
//	    writes argv.json and pid into D, then waits for SIGTERM or SIGINT.
//	    It exits at once with status 3 when D/exit-at-once exists.
//
// Every process appends a JSON line (pid, role, topology, container,
// work_dir, start in Unix nanoseconds) to $FAKEEGRET_PIDLOG when it is set,
// so the tests can observe and clean up every process it started.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/schedulers/local"
)

// PIDLogEnv names the file every fakeegret process logs its start to.
const pidLogEnv = "FAKEEGRET_PIDLOG"

type record struct {
	PID       int    `json:"pid"`
	Role      string `json:"role"`
	Topology  string `json:"topology,omitempty"`
	Container int    `json:"container"`
	WorkDir   string `json:"work_dir"`
	Start     int64  `json:"start"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fakeegret scheduler|executor [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "scheduler":
		err = scheduler(os.Args[2:])
	case "executor":
		err = executor(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q (want scheduler or executor)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeegret:", err)
		os.Exit(1)
	}
}

func logStart(r record) error {
	path := os.Getenv(pidLogEnv)
	if path == "" {
		return nil
	}
	r.PID, r.Start = os.Getpid(), time.Now().UnixNano()
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(b, '\n'))
	return err
}

func scheduler(args []string) error {
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	workDir := fs.String("work-dir", "", "the topology's working directory")
	_ = fs.String("config", "", "the cluster config")
	_ = fs.String("config-file", "", "the cluster config (older spelling)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *workDir == "" {
		return errors.New("scheduler: --work-dir is required")
	}
	if err := logStart(record{Role: "scheduler", Container: -1, WorkDir: *workDir}); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log, err := zap.NewDevelopment()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	return local.Serve(ctx, local.ServeConfig{
		WorkDir:        *workDir,
		BackoffInitial: 100 * time.Millisecond,
		BackoffMax:     800 * time.Millisecond,
		StopGrace:      5 * time.Second,
	}, log)
}

func executor(args []string) error {
	fs := flag.NewFlagSet("executor", flag.ContinueOnError)
	topology := fs.String("topology", "", "")
	_ = fs.String("topology-id", "", "")
	container := fs.Int("container", -1, "")
	workDir := fs.String("work-dir", "", "")
	_ = fs.String("package-uri", "", "")
	_ = fs.String("package-sha256", "", "")
	configFile := fs.String("config-file", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *topology == "" || *container < 0 || *workDir == "" || *configFile == "" {
		return fmt.Errorf("executor: --topology, --container, --work-dir and --config-file are required (got %q)", args)
	}
	argv, err := json.Marshal(args)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(*workDir, "argv.json"), argv); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(*workDir, "pid"), []byte(strconv.Itoa(os.Getpid()))); err != nil {
		return err
	}
	if err := logStart(record{Role: "executor", Topology: *topology, Container: *container, WorkDir: *workDir}); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(*workDir, "exit-at-once")); err == nil {
		os.Exit(3)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return nil
}

func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
