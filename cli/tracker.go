package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/launcher"
	"github.com/egret-stream/egret/tracker"
)

func trackerCmd(g *globals) *cobra.Command {
	var (
		clusters  []string
		addr      string
		tokenFile string
		o         tracker.Options
	)
	cmd := &cobra.Command{
		Use:   "tracker [--cluster cluster[/role[/env]] ...] [--addr 127.0.0.1:8888]",
		Short: "Serve a read-only REST API and web UI over the topologies of one or more clusters",
		Long: `tracker serves, until interrupted, Heron's tracker API (/clusters, /topologies,
/topologies/logicalplan, /physicalplan, /packingplan, /executionstate, /metrics,
/metrics/timeline, /exceptions, /exceptionsummary; documented at /openapi.yaml)
and a web UI at / over the state managers of the given clusters (default: local)
and the topology managers of their topologies. Without --operator-token-file it
never changes any state; with it, requests that carry the token (the UI asks
for it) may activate, deactivate, kill (drained), rescale a component and
change log levels, with the CLI's safety.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(clusters) == 0 {
				clusters = []string{"local"}
			}
			if o.SampleInterval < 100*time.Millisecond || o.FineWindow < o.SampleInterval || o.CoarseWindow < time.Minute {
				return usagef("--sample-interval must be at least 100ms, --fine-window at least the interval and --coarse-window at least 1m")
			}
			if o.MaxTopologies < 1 || o.MaxTasks < 1 {
				return usagef("--max-topologies and --max-tasks must be positive")
			}
			if tokenFile != "" {
				tok, err := readOperatorToken(tokenFile)
				if err != nil {
					return usageError{err}
				}
				o.OperatorToken = tok
			}
			seen := map[string]bool{}
			for _, arg := range clusters {
				c, err := g.loadCluster(arg)
				if err != nil {
					return err
				}
				if seen[c.Name] {
					return usagef("--cluster %s: cluster %q is given twice", arg, c.Name)
				}
				seen[c.Name] = true
				o.Clusters = append(o.Clusters, c)
			}
			log := g.logger().Named("tracker")
			b := newBackends(log)
			g.closers = append(g.closers, b.Close)
			o.Backends, o.Log = b, log
			o.Savepoint = func(ctx context.Context, l *launcher.Launcher, name string) (string, error) {
				loc, m, err := takeSavepoint(ctx, l, name, "", defaultLease)
				if err != nil {
					return "", err
				}
				return savepointSummary(loc, name, m), nil
			}
			t, err := tracker.New(o)
			if err != nil {
				return usageError{err}
			}
			defer t.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("tracker: listen on %s: %w", addr, err)
			}
			return serveTracker(cmd.Context(), cmd, t, ln, o.Clusters)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&clusters, "cluster", nil, "a cluster[/role[/env]] to serve (repeatable; default local)")
	f.StringVar(&addr, "addr", "127.0.0.1:8888", "address to listen on (host:port; port 0 picks a free one)")
	f.DurationVar(&o.SampleInterval, "sample-interval", 5*time.Second, "how often the metrics of every running topology are sampled for the timeline")
	f.DurationVar(&o.FineWindow, "fine-window", 10*time.Minute, "how long samples are kept at the sample interval")
	f.DurationVar(&o.CoarseWindow, "coarse-window", time.Hour, "how long one-minute samples are kept")
	f.IntVar(&o.MaxTopologies, "max-topologies", 64, "most topologies with a timeline")
	f.IntVar(&o.MaxTasks, "max-tasks", 512, "most tasks per topology in a timeline")
	f.StringVar(&tokenFile, "operator-token-file", "", "a file holding the operator token (at least 16 characters) that enables the console's actions; none: read-only")
	return cmd
}

// minTokenLen is the shortest operator token accepted.
const minTokenLen = 16

// readOperatorToken reads the token of --operator-token-file: one line of
// at least minTokenLen printable characters.
func readOperatorToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--operator-token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < minTokenLen || strings.ContainsFunc(tok, func(c rune) bool { return c <= ' ' || c > '~' }) {
		return "", fmt.Errorf("--operator-token-file %s: the token must be one line of at least %d printable ASCII characters without spaces (for example: head -c 24 /dev/urandom | base64 > %s)", path, minTokenLen, path)
	}
	return tok, nil
}

func serveTracker(ctx context.Context, cmd *cobra.Command, t *tracker.Tracker, ln net.Listener, clusters []*conf.Cluster) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{Handler: t.Handler(), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.Run(ctx)
	}()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	names := make([]string, len(clusters))
	for i, c := range clusters {
		names[i] = c.Name
	}
	fmt.Fprintf(cmd.OutOrStdout(), "tracker listening on http://%s (clusters %v)\n", ln.Addr(), names)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	cancel()
	<-done
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("tracker: serve: %w", err)
	}
	return nil
}
