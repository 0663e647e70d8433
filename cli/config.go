package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/spi"
	egrethttp "github.com/egret-stream/egret/uploaders/http"
)

func configCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect and check per-cluster config"}
	var connectivity bool
	validate := &cobra.Command{
		Use:   "validate cluster[/role[/env]] [--check-connectivity]",
		Short: "Check a cluster's config without submitting; lists every problem with file and key",
		Args:  exactArgs(1, "egret config validate local"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.loadCluster(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "config of cluster %s is valid\n", args[0])
			if connectivity {
				return checkConnectivity(cmd, g, c)
			}
			return nil
		},
	}
	validate.Flags().BoolVar(&connectivity, "check-connectivity", false, "also check that the scheduler, uploader and state manager the config names answer (changes nothing)")
	cmd.AddCommand(validate, &cobra.Command{
		Use:   "show cluster[/role[/env]]",
		Short: "Print the resolved config of a cluster, with where each value comes from",
		Args:  exactArgs(1, "egret config show local"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.loadCluster(args[0])
			if err != nil {
				return err
			}
			cfg := c.Config()
			for _, k := range cfg.Keys() {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\t# %s\n", k, cfg[k], c.Origin(k))
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "clusters",
		Short: "List the known clusters",
		Args:  exactArgs(0, "egret config clusters"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), strings.Join(conf.Clusters(g.configPath), "\n"))
			return nil
		},
	})
	return cmd
}

// checkConnectivity builds the cluster's state manager, uploader and
// scheduler (for a topology named connectivity-check) and asks those that
// implement spi.Checker to check what their config names.
func checkConnectivity(cmd *cobra.Command, g *globals, c *conf.Cluster) error {
	c, err := c.WithTopology("connectivity-check")
	if err != nil {
		return err
	}
	cfg := c.Config()
	ctx := cmd.Context()
	b := newBackends(g.logger())
	defer b.Close()
	out := cmd.OutOrStdout()
	check := func(kind, key string, build func() (io.Closer, error)) error {
		be, err := build()
		if err != nil {
			return fmt.Errorf("%s %s: %w", kind, cfg.String(key, ""), err)
		}
		defer be.Close()
		if ck, ok := be.(spi.Checker); ok {
			if err := ck.Check(ctx); err != nil {
				return fmt.Errorf("%s %s: %w", kind, cfg.String(key, ""), err)
			}
			fmt.Fprintf(out, "%s %s: reachable\n", kind, cfg.String(key, ""))
		} else {
			fmt.Fprintf(out, "%s %s: created (it has no connectivity check of its own)\n", kind, cfg.String(key, ""))
		}
		return nil
	}
	return errors.Join(
		check("state manager", "egret.statemgr", func() (io.Closer, error) { return b.StateManager(ctx, cfg) }),
		check("uploader", "egret.uploader", func() (io.Closer, error) { return b.Uploader(ctx, cfg) }),
		check("scheduler", "egret.scheduler", func() (io.Closer, error) { return b.Scheduler(ctx, cfg) }),
	)
}

func servePackagesCmd(g *globals) *cobra.Command {
	var dir, addr, tokenFile string
	var maxBytes int64
	cmd := &cobra.Command{
		Use:   "serve-packages --dir DIR [--addr :7780]",
		Short: "Serve topology packages over HTTP for the http uploader",
		Long: `serve-packages stores packages that "egret submit" uploads with the http uploader
(egret.uploader: http, egret.uploader.http.uri: http://<this host>:7780/packages/) and serves
them to containers that cannot read the submitter's disk.`,
		Args: exactArgs(0, "egret serve-packages --dir /var/lib/egret/packages"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usagef("serve-packages needs --dir")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			var opts []egrethttp.ServerOption
			if tokenFile != "" {
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return usagef("--token-file: %v", err)
				}
				opts = append(opts, egrethttp.WithToken(strings.TrimSpace(string(b))))
			}
			if maxBytes > 0 {
				opts = append(opts, egrethttp.WithMaxBytes(maxBytes))
			}
			log := g.logger()
			srv := &http.Server{Addr: addr, Handler: egrethttp.NewServer(dir, log, opts...), ReadHeaderTimeout: 30 * time.Second}
			go func() { <-cmd.Context().Done(); _ = srv.Close() }()
			log.Info("serving packages", zap.String("dir", dir), zap.String("addr", addr))
			fmt.Fprintf(cmd.OutOrStdout(), "serving packages from %s on %s\n", dir, addr)
			if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "directory holding the packages")
	f.StringVar(&addr, "addr", ":7780", "listen address")
	f.StringVar(&tokenFile, "token-file", "", "file holding a bearer token clients must send")
	f.Int64Var(&maxBytes, "max-bytes", 0, "largest accepted package in bytes (default 2 GiB)")
	return cmd
}
