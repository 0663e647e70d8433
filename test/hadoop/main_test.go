package hadoop

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/yarn/yarntest"
)

// cluster is the package's Hadoop cluster; nil when the tests skip.
var (
	cluster  *yarntest.Cluster
	skipWhy  string
	started  time.Duration
	clusterT time.Time
)

func TestMain(m *testing.M) {
	flag.Parse()
	switch err := yarntest.Available(); {
	case testing.Short():
		skipWhy = "-short: the Hadoop mini-cluster tests are skipped"
	case err != nil && os.Getenv(yarntest.RequireEnv) == "1":
		fmt.Fprintf(os.Stderr, "hadoop tests: %v (%s=1 requires the mini-cluster)\n", err, yarntest.RequireEnv)
		os.Exit(1)
	case err != nil:
		skipWhy = err.Error() + "; the Hadoop mini-cluster tests are skipped"
	}
	if skipWhy != "" {
		fmt.Fprintln(os.Stderr, "hadoop tests:", skipWhy)
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "egret-hadoop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	clusterT = time.Now()
	cluster, err = yarntest.Start(context.Background(), yarntest.Options{Dir: dir, Logf: func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, f+"\n", a...)
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "hadoop tests:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	started = time.Since(clusterT)
	code := plugintest.Run(m,
		"github.com/egret-stream/egret/cmd/egret-uploader-hdfs",
		"github.com/egret-stream/egret/cmd/egret-scheduler-yarn",
		"github.com/egret-stream/egret/cmd/egret-checkpointstorage-hdfs")
	cluster.Stop()
	fmt.Fprintf(os.Stderr, "hadoop tests: cluster started in %s, everything took %s\n", started.Round(time.Second), time.Since(clusterT).Round(time.Second))
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintln(os.Stderr, "hadoop tests: cluster directory kept for inspection:", dir)
	}
	os.Exit(code)
}

// needCluster skips t when the cluster does not run.
func needCluster(t *testing.T) *yarntest.Cluster {
	t.Helper()
	if cluster == nil {
		t.Skip(skipWhy)
	}
	return cluster
}
