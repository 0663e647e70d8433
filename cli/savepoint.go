package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/savepoint"
	"github.com/egret-stream/egret/launcher"
)

// Savepoints (docs/savepoints.md): the launcher pins a checkpoint of the
// running topology, the CLI copies it with daemons/savepoint.

// defaultLease is how long the topology manager keeps the checkpoint a
// savepoint copies.
const defaultLease = 30 * time.Minute

// openStorage opens the checkpoint storage cfg selects, with its files.
func openStorage(ctx context.Context, l *launcher.Launcher, cfg spi.Config) (savepoint.Storage, error) {
	b, ok := l.Backends.(launcher.CheckpointStorages)
	if !ok {
		return nil, errors.New("this egret opens no checkpoint storage")
	}
	st, err := b.CheckpointStorage(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("checkpoint storage %s: %w", cfg.String("egret.checkpoint.storage", "localfs"), err)
	}
	s, ok := st.(savepoint.Storage)
	if !ok {
		_ = st.Close()
		_, err := spi.FilesOf(st)
		return nil, err
	}
	return s, nil
}

// savepointDir returns the cluster's savepoint directory.
func savepointDir(l *launcher.Launcher) (savepoint.Location, error) {
	loc, err := savepoint.ParseDir(l.Cluster.Config().String("egret.savepoint.directory", ""))
	if err != nil {
		return loc, usageError{fmt.Errorf("egret.savepoint.directory: %w", err)}
	}
	return loc, nil
}

// resolveSavepoint parses a savepoint URI, or a bare name in the cluster's
// savepoint directory.
func resolveSavepoint(l *launcher.Launcher, arg string) (savepoint.Location, error) {
	if !strings.ContainsAny(arg, "/\\") && !strings.Contains(arg, "://") {
		dir, err := savepointDir(l)
		if err != nil {
			return dir, err
		}
		loc, err := dir.Join(arg)
		if err != nil {
			return loc, usageError{err}
		}
		return loc, nil
	}
	loc, err := savepoint.Parse(arg)
	if err != nil {
		return loc, usageError{err}
	}
	return loc, nil
}

// takeSavepoint pins a checkpoint of the topology and copies it to target
// (a URI; "": a new name in the cluster's savepoint directory).
func takeSavepoint(ctx context.Context, l *launcher.Launcher, name, target string, lease time.Duration) (savepoint.Location, *savepoint.Manifest, error) {
	var loc savepoint.Location
	var err error
	if target != "" {
		loc, err = resolveSavepoint(l, target)
	} else if loc, err = savepointDir(l); err == nil {
		loc, err = loc.Join(fmt.Sprintf("%s-%s", name, time.Now().UTC().Format("20060102-150405")))
	}
	if err != nil {
		return loc, nil, err
	}
	dst, err := openStorage(ctx, l, loc.Config(l.Cluster.Config()))
	if err != nil {
		return loc, nil, err
	}
	defer dst.Close()
	if _, err := savepoint.Read(ctx, dst, loc); err == nil || !errors.Is(err, spi.ErrNotFound) {
		return loc, nil, usageError{fmt.Errorf("%s already holds a savepoint (or something else): choose another target, or egret savepoints delete it", loc.URI())}
	}
	pin, err := l.PinCheckpoint(ctx, name, lease)
	if err != nil {
		return loc, nil, err
	}
	defer pin.Release(ctx)
	src, err := openStorage(ctx, l, pin.Config)
	if err != nil {
		return loc, nil, err
	}
	defer src.Close()
	scratch, err := os.MkdirTemp("", "egret-savepoint-")
	if err != nil {
		return loc, nil, err
	}
	defer os.RemoveAll(scratch)
	if l.Progress != nil {
		fmt.Fprintf(l.Progress, "copying checkpoint %d to %s\n", pin.Checkpoint, loc.URI())
	}
	m, err := savepoint.Write(ctx, savepoint.Source{Storage: src, Topology: pin.Topology, Plan: pin.Plan, Checkpoint: pin.Checkpoint}, dst, loc.Name, scratch)
	if err != nil {
		return loc, nil, fmt.Errorf("savepoint of %q at %s: %w", name, loc.URI(), err)
	}
	return loc, m, nil
}

func savepointCmd(g *globals) *cobra.Command {
	var target string
	var lease time.Duration
	cmd := &cobra.Command{
		Use:   "savepoint cluster[/role[/env]] <topology> [--target URI]",
		Short: "Save the state of a running effectively-once topology to a savepoint",
		Long: `Savepoint asks the topology manager for a checkpoint now, waits until every task stored
its state, and copies that checkpoint to a self-contained savepoint at --target (a path,
file:///path or hdfs://namenode:port/path, whose last element is the savepoint's name;
default: a new name <topology>-<UTC time> in egret.savepoint.directory). The topology keeps
running. egret submit --from-savepoint starts a topology from it (docs/savepoints.md).`,
		Args: exactArgs(2, "egret savepoint local wordcount --target /backups/wordcount-1"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := g.launcher(args[0], g.logger())
			if err != nil {
				return err
			}
			loc, m, err := takeSavepoint(cmd.Context(), l, args[1], target, lease)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), savepointSummary(loc, args[1], m))
			return nil
		},
	}
	cmd.Flags().StringVar(&target, "target", "", "the savepoint's URI (a path, file:///path or hdfs://namenode:port/path; default: a new name in egret.savepoint.directory)")
	cmd.Flags().DurationVar(&lease, "lease", defaultLease, "how long the topology manager keeps the checkpoint while it is copied")
	return cmd
}

// savepointSummary says where a savepoint was written and what it holds.
func savepointSummary(loc savepoint.Location, topology string, m *savepoint.Manifest) string {
	return fmt.Sprintf("savepoint %s of topology %q: checkpoint %d, %d tasks, %s", loc.URI(), topology, m.Checkpoint, taskCount(m), byteSize(float64(m.Size())))
}

func taskCount(m *savepoint.Manifest) int {
	n := 0
	for _, c := range m.Components {
		n += len(c.Tasks)
	}
	return n
}

// restorer starts a topology from a savepoint (launcher.SavepointRestorer).
type restorer struct {
	l               *launcher.Launcher
	loc             savepoint.Location
	m               *savepoint.Manifest
	allowUnrestored bool
	seeded          savepoint.Storage
}

// openRestorer reads and checks the savepoint at arg: a missing, corrupt
// or foreign one is a usage error (exit 2) before anything starts.
func openRestorer(ctx context.Context, l *launcher.Launcher, arg string, allow bool) (*restorer, error) {
	loc, err := resolveSavepoint(l, arg)
	if err != nil {
		return nil, err
	}
	st, err := openStorage(ctx, l, loc.Config(l.Cluster.Config()))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	m, err := savepoint.Read(ctx, st, loc)
	if err == nil {
		err = savepoint.Verify(ctx, st, loc, m)
	}
	if errors.Is(err, spi.ErrNotFound) || errors.Is(err, savepoint.ErrCorrupt) || errors.Is(err, spi.ErrCorrupt) {
		return nil, usageError{err}
	}
	if err != nil {
		return nil, err
	}
	return &restorer{l: l, loc: loc, m: m, allowUnrestored: allow}, nil
}

func (r *restorer) Check(t *topology.Topology, p *plan.PackingPlan) error {
	return savepoint.Check(r.m, t, p, r.allowUnrestored)
}

func (r *restorer) Seed(ctx context.Context, cfg spi.Config, t *topology.Topology, p *plan.PackingPlan) (int64, map[string][]int32, func(), error) {
	src, err := openStorage(ctx, r.l, r.loc.Config(cfg))
	if err != nil {
		return 0, nil, nil, err
	}
	defer src.Close()
	dst, err := openStorage(ctx, r.l, cfg)
	if err != nil {
		return 0, nil, nil, err
	}
	tasks, undo, err := savepoint.Seed(ctx, r.m, src, r.loc.Name, dst, t, p)
	if err != nil {
		_ = dst.Close()
		if errors.Is(err, savepoint.ErrCorrupt) {
			err = usageError{err}
		}
		return 0, nil, nil, err
	}
	r.seeded = dst
	return r.m.Checkpoint, tasks, undo, nil
}

// close closes the checkpoint storage Seed opened (undo uses it until
// submit returns).
func (r *restorer) close() {
	if r.seeded != nil {
		_ = r.seeded.Close()
	}
}

func savepointsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "savepoints",
		Short: "List, describe and delete savepoints",
		Long: `A savepoint is given by its URI (a path, file:///path or hdfs://namenode:port/path) or by
its name in the cluster's egret.savepoint.directory (docs/savepoints.md).`,
	}
	var dir, output string
	list := &cobra.Command{
		Use:   "list cluster[/role[/env]] [--dir URI]",
		Short: "List the savepoints of a local directory (default egret.savepoint.directory)",
		Args:  exactArgs(1, "egret savepoints list local"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := g.outputLauncher(output, args[0])
			if err != nil {
				return err
			}
			loc, err := savepointDir(l)
			if dir != "" {
				if loc, err = savepoint.ParseDir(dir); err != nil {
					err = usageError{err}
				}
			}
			if err != nil {
				return err
			}
			names, err := savepoint.Names(loc)
			if errors.Is(err, spi.ErrUnsupported) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			st, err := openStorage(cmd.Context(), l, loc.Config(l.Cluster.Config()))
			if err != nil {
				return err
			}
			defer st.Close()
			var all []*savepoint.Manifest
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			if output != "json" {
				fmt.Fprintln(tw, "NAME\tTOPOLOGY\tCHECKPOINT\tCREATED\tTASKS\tSIZE")
			}
			for _, n := range names {
				sp, _ := loc.Join(n)
				m, err := savepoint.Read(cmd.Context(), st, sp)
				if err != nil {
					fmt.Fprintf(tw, "%s\t(unreadable: %v)\n", n, err)
					continue
				}
				all = append(all, m)
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\n", n, m.Topology, m.Checkpoint, m.Created.Format(time.RFC3339), taskCount(m), byteSize(float64(m.Size())))
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), all)
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&dir, "dir", "", "the directory to list (default egret.savepoint.directory)")
	list.Flags().StringVarP(&output, "output", "o", "table", "output: table or json")
	describe := &cobra.Command{
		Use:   "describe cluster[/role[/env]] <savepoint-uri-or-name>",
		Short: "Show a savepoint's topology, components, tasks and states, and check its files",
		Args:  exactArgs(2, "egret savepoints describe local /backups/wordcount-1"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := g.outputLauncher(output, args[0])
			if err != nil {
				return err
			}
			r, err := openRestorer(cmd.Context(), l, args[1], false)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), r.m)
			}
			describeSavepoint(cmd.OutOrStdout(), r.loc, r.m)
			return nil
		},
	}
	describe.Flags().StringVarP(&output, "output", "o", "table", "output: table or json")
	del := &cobra.Command{
		Use:   "delete cluster[/role[/env]] <savepoint-uri-or-name>",
		Short: "Delete a savepoint (its manifest first, then its files)",
		Args:  exactArgs(2, "egret savepoints delete local /backups/wordcount-1"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := g.launcher(args[0], g.logger())
			if err != nil {
				return err
			}
			loc, err := resolveSavepoint(l, args[1])
			if err != nil {
				return err
			}
			st, err := openStorage(cmd.Context(), l, loc.Config(l.Cluster.Config()))
			if err != nil {
				return err
			}
			defer st.Close()
			if err := savepoint.Delete(cmd.Context(), st, loc); err != nil {
				if errors.Is(err, spi.ErrNotFound) {
					return usageError{err}
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted savepoint %s\n", loc.URI())
			return nil
		},
	}
	cmd.AddCommand(list, describe, del)
	return cmd
}

func describeSavepoint(w io.Writer, loc savepoint.Location, m *savepoint.Manifest) {
	fmt.Fprintf(w, "savepoint %s (format version %d)\n", loc.URI(), m.Version)
	fmt.Fprintf(w, "topology %s (id %s), checkpoint %d, created %s, written by the %s backend, %s\n",
		m.Topology, m.TopologyID, m.Checkpoint, m.Created.Format(time.RFC3339), m.Backend, byteSize(float64(m.Size())))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tPARALLELISM\tMAX PARALLELISM\tSIZE\tSTATES")
	for _, c := range m.Components {
		var size int64
		for _, t := range c.Tasks {
			size += t.Manifest.Size()
		}
		var states []string
		for _, s := range c.States {
			kind := "operator, " + s.Restore
			if s.Keyed {
				kind = "keyed"
			}
			states = append(states, fmt.Sprintf("%s (%s: %s)", s.Name, kind, s.Descriptor))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", c.Name, c.Parallelism, c.MaxParallelism, byteSize(float64(size)), strings.Join(states, "; "))
	}
	_ = tw.Flush()
}

// defaultSavepointTarget is the value of a bare kill --savepoint.
const defaultSavepointTarget = "default"
