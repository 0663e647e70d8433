package plugins_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/plugins"
)

// The host helper: the test binary re-executed with envHostDir set loads
// the memory state manager plugin from that directory, prints the plugin's
// pid and waits to be killed.
const (
	envHostDir       = "EGRET_PLUGINTEST_HOST_DIR"
	envHostPdeathsig = "EGRET_PLUGINTEST_HOST_PDEATHSIG"
	hostPidPrefix    = "PLUGIN_PID="
)

func runHost() {
	l := plugins.NewLoader(os.Getenv(envHostDir), zap.NewNop())
	plugins.SetParentDeathSignal(l, os.Getenv(envHostPdeathsig) == "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sm, err := l.LoadStateManager(ctx, "memory", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "host helper:", err)
		os.Exit(2)
	}
	p, _ := plugins.ProcessOf(sm)
	fmt.Printf("%s%d\n", hostPidPrefix, p.Pid)
	// The test SIGKILLs this process; the sleep only bounds a forgotten
	// helper's life.
	time.Sleep(2 * time.Minute)
	os.Exit(3)
}
