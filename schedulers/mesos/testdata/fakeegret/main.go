// Command fakeegret stands in for the egret binary in the Mesos
// scheduler's tests. It implements the two sub-commands the scheduler
// runs:
//
//	fakeegret mesos-framework --work-dir W
//	    runs the framework service (mesos.FrameworkMain).
//	fakeegret executor --topology T --container N --work-dir D --package-uri P ...
//	    checks what a task gets from Mesos (the package fetched into the
//	    sandbox at P, EGRET_PORT_* and EGRET_HOST), writes them to
//	    D/executor.json and waits for SIGTERM. It exits with status 3 at
//	    once when the package is missing, and with status 4 when
//	    $MESOS_SANDBOX/exit-now exists.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/schedulers/mesos"
)

// Report is what the executor writes to D/executor.json.
type Report struct {
	PID       int               `json:"pid"`
	Args      []string          `json:"args"`
	Container int               `json:"container"`
	Package   string            `json:"package"`
	Env       map[string]string `json:"env"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fakeegret mesos-framework|executor [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case mesos.FrameworkCommand:
		log, _ := zap.NewDevelopment()
		os.Exit(mesos.FrameworkMain(os.Args[2:], os.Stderr, log))
	case "executor":
		os.Exit(executor(os.Args[2:]))
	default:
		fmt.Fprintf(os.Stderr, "fakeegret: unknown sub-command %q\n", os.Args[1])
		os.Exit(2)
	}
}

func executor(args []string) int {
	fs := flag.NewFlagSet("executor", flag.ContinueOnError)
	var r Report
	var dir string
	fs.IntVar(&r.Container, "container", -1, "")
	fs.StringVar(&dir, "work-dir", "", "")
	fs.StringVar(&r.Package, "package-uri", "", "")
	for _, f := range []string{"topology", "topology-id", "package-sha256", "config-file", "stmgr-port"} {
		fs.String(f, "", "")
	}
	if err := fs.Parse(args); err != nil || dir == "" || r.Container < 0 {
		fmt.Fprintln(os.Stderr, "fakeegret executor: needs --container and --work-dir:", err)
		return 2
	}
	if _, err := os.Stat(r.Package); err != nil {
		fmt.Fprintln(os.Stderr, "fakeegret executor: the package was not fetched:", err)
		return 3
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("MESOS_SANDBOX"), "exit-now")); err == nil {
		return 4
	}
	r.PID, r.Args, r.Env = os.Getpid(), args, map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "EGRET_") || strings.HasPrefix(k, "MESOS_") {
			r.Env[k] = v
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, _ := json.Marshal(r)
	if err := os.WriteFile(filepath.Join(dir, "executor.json"), b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return 0
}
