package slurm_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/slurm/slurmtest"
)

// cluster is the package's one-node Slurm; nil when the tests skip.
var (
	cluster *slurmtest.Cluster
	skipWhy string
)

func TestMain(m *testing.M) {
	flag.Parse()
	switch err := slurmtest.Available(); {
	case testing.Short():
		skipWhy = "-short: the Slurm tests are skipped"
	case err != nil && os.Getenv(slurmtest.RequireEnv) == "1":
		fmt.Fprintf(os.Stderr, "slurm tests: %v (%s=1 requires a one-node Slurm)\n", err, slurmtest.RequireEnv)
		os.Exit(1)
	case err != nil:
		skipWhy = err.Error() + "; the Slurm tests are skipped"
	}
	if skipWhy != "" {
		fmt.Fprintln(os.Stderr, "slurm tests:", skipWhy)
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "egret-slurm-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	t0 := time.Now()
	cluster, err = slurmtest.Start(context.Background(), slurmtest.Options{Dir: dir, Logf: func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, f+"\n", a...)
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "slurm tests:", err)
		os.Exit(1)
	}
	// The scheduler's commands (and the plugin's) find the cluster here.
	os.Setenv("SLURM_CONF", cluster.Conf)
	code := plugintest.Run(m, "github.com/egret-stream/egret/cmd/egret-scheduler-slurm")
	cluster.Stop()
	fmt.Fprintf(os.Stderr, "slurm tests: everything took %s\n", time.Since(t0).Round(time.Second))
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "slurm tests: cluster directory kept for inspection:", dir)
	}
	os.Exit(code)
}

// needCluster skips t when the cluster does not run.
func needCluster(t *testing.T) *slurmtest.Cluster {
	t.Helper()
	if cluster == nil {
		t.Skip(skipWhy)
	}
	return cluster
}
