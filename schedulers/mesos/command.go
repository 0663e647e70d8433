package mesos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
)

// ParseFrameworkArgs parses the arguments of `mesos-framework --work-dir
// W` (those after the command name) and returns W.
func ParseFrameworkArgs(args []string) (string, error) {
	fs := flag.NewFlagSet(FrameworkCommand, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	workDir := fs.String("work-dir", "", "the topology's working directory")
	if err := fs.Parse(args); err != nil || *workDir == "" || fs.NArg() > 0 {
		return "", fmt.Errorf("usage: %s --work-dir W (the topology's working directory, holding job.json and cluster.json)", FrameworkCommand)
	}
	return *workDir, nil
}

// FrameworkMain runs `mesos-framework --work-dir W` until the topology is
// killed or SIGTERM/SIGINT arrives, and returns the process exit code: 0,
// 1 when the framework failed, 2 for bad arguments. egret-scheduler-mesos
// runs it; the egret binary has the same hidden command.
func FrameworkMain(args []string, stderr io.Writer, log *zap.Logger) int {
	dir, err := ParseFrameworkArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := Serve(ctx, ServeConfig{WorkDir: dir}, log); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "mesos framework:", err)
		return 1
	}
	return 0
}
