package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/launcher"
)

func exactArgs(n int, usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s needs %d arguments: %s", cmd.Name(), n, usage)
		}
		return nil
	}
}

func submitCmd(g *globals) *cobra.Command {
	var o launcher.SubmitOptions
	var wait time.Duration
	var fromSavepoint string
	var allowUnrestored bool
	cmd := &cobra.Command{
		Use:   "submit [flags] cluster[/role[/env]] <topology-binary-or-package> [-- args]",
		Short: "Submit a topology to a cluster",
		Long: `Submit runs the topology binary in define mode, packs its instances into containers,
uploads the topology package, records the topology in the state manager and launches its
containers. Progress is printed step by step. A Go package (./examples/wordcount) is built
for the cluster's OS and architecture first. Arguments after -- go to the topology binary.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("submit needs a cluster and a topology binary: egret submit local ./wordcount")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			log := g.logger()
			l, err := g.launcher(args[0], log)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("dry-run-format") && !o.DryRun {
				return usagef("--dry-run-format needs --dry-run")
			}
			if o.DefineTimeout <= 0 {
				return usagef("--define-timeout %s must be positive", o.DefineTimeout)
			}
			o.Binary, o.Args, o.WaitRunning, o.DryRunOut = args[1], args[2:], wait, cmd.OutOrStdout()
			if o.DryRun {
				l.Progress = cmd.ErrOrStderr()
			}
			if allowUnrestored && fromSavepoint == "" {
				return usagef("--allow-unrestored-state needs --from-savepoint")
			}
			if fromSavepoint != "" {
				r, err := openRestorer(cmd.Context(), l, fromSavepoint, allowUnrestored)
				if err != nil {
					return err
				}
				o.FromSavepoint = r
				defer r.close()
			}
			res, err := l.Submit(cmd.Context(), o)
			if err != nil {
				return err
			}
			if !o.DryRun {
				deactivated := ""
				if o.DeployDeactivated {
					deactivated = ", deactivated"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "submitted topology %q (id %s) with %d containers%s\n", res.Topology, res.TopologyID, len(res.Plan.Containers)+1, deactivated)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.DeployDeactivated, "deploy-deactivated", false, "start with the spouts deactivated (egret activate starts them)")
	f.BoolVar(&o.DryRun, "dry-run", false, "define and pack, print the result; writes, uploads and contacts nothing")
	f.StringVar(&o.DryRunFormat, "dry-run-format", "table", "--dry-run output: the packing plan as table or json, or the scheduler's own job (nomad-json: the job as nomad job validate/plan -json read it; aurora: the job for aurora job create --read-json; kubernetes-yaml: the manifests for kubectl apply -f; slurm: the sbatch command line and batch script; all name the URI the package would be uploaded to)")
	f.DurationVar(&o.DefineTimeout, "define-timeout", launcher.DefaultDefineTimeout, "stop the topology binary when it has not defined its topology after this long")
	f.DurationVar(&wait, "wait", 60*time.Second, "wait this long for the topology to run (0: return after launch)")
	f.StringVar(&o.Resources, "resources", "", "ship this directory in the package as resources/, where shell (multilang) components run (docs/multilang.md)")
	f.StringVar(&fromSavepoint, "from-savepoint", "", "start the (effectively-once) topology with the state of this savepoint: its URI, or its name in egret.savepoint.directory (docs/savepoints.md)")
	f.BoolVar(&allowUnrestored, "allow-unrestored-state", false, "with --from-savepoint: drop the saved state of components the topology no longer has, instead of refusing")
	return cmd
}

func killCmd(g *globals) *cobra.Command {
	var now, ignoreNotFound bool
	var drain time.Duration
	var savepointTarget string
	cmd := &cobra.Command{
		Use:   "kill cluster[/role[/env]] <topology> [--savepoint [URI]]",
		Short: "Drain a topology, stop it and remove its state (idempotent)",
		Args: func(cmd *cobra.Command, args []string) error {
			// kill local wc --savepoint URI: the flag takes an optional
			// value, so its URI comes as a third argument.
			if len(args) == 3 && cmd.Flags().Changed("savepoint") && savepointTarget == defaultSavepointTarget {
				return nil
			}
			return exactArgs(2, "egret kill local wordcount [--savepoint [URI]]")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if now && cmd.Flags().Changed("drain-timeout") {
				return usagef("--now and --drain-timeout exclude each other")
			}
			if drain < 0 {
				return usagef("--drain-timeout %s is negative", drain)
			}
			l, err := g.launcher(args[0], g.logger())
			if err != nil {
				return err
			}
			var o launcher.KillOptions
			switch {
			case now:
			case cmd.Flags().Changed("drain-timeout"):
				o.DrainTimeout = drain
			default:
				if o.DrainTimeout, err = l.Cluster.Duration("egret.kill.drain.timeout"); err != nil {
					return usageError{err}
				}
			}
			if cmd.Flags().Changed("savepoint") {
				// The savepoint first: when it fails, nothing is killed.
				target := savepointTarget
				if target == defaultSavepointTarget {
					target = ""
					if len(args) == 3 {
						target = args[2]
					}
				}
				loc, m, err := takeSavepoint(cmd.Context(), l, args[1], target, defaultLease)
				if err != nil {
					return fmt.Errorf("%w (nothing was killed)", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "savepoint %s of topology %q: checkpoint %d, %d tasks, %s\n", loc.URI(), args[1], m.Checkpoint, taskCount(m), byteSize(float64(m.Size())))
			}
			err = l.Kill(cmd.Context(), args[1], o)
			if ignoreNotFound && errors.Is(err, launcher.ErrNothingToKill) {
				fmt.Fprintln(cmd.OutOrStdout(), err.Error())
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "killed topology %q\n", args[1])
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&now, "now", false, "stop at once, without draining")
	f.BoolVar(&ignoreNotFound, "ignore-not-found", false, "exit 0 when there is no such topology (nothing to stop)")
	f.DurationVar(&drain, "drain-timeout", 0, "how long to drain before stopping (default egret.kill.drain.timeout, 30s; 0: no drain)")
	f.StringVar(&savepointTarget, "savepoint", "", "take a savepoint first, at this URI (--savepoint alone: a new name in egret.savepoint.directory); when it fails nothing is killed")
	f.Lookup("savepoint").NoOptDefVal = defaultSavepointTarget
	return cmd
}

func activateCmd(g *globals, active bool) *cobra.Command {
	name, short := "deactivate", "Stop the spouts of a topology"
	if active {
		name, short = "activate", "Start the spouts of a deactivated topology"
	}
	var now bool
	var drain time.Duration
	cmd := &cobra.Command{
		Use:   name + " cluster[/role[/env]] <topology>",
		Short: short,
		Args:  exactArgs(2, "egret "+name+" local wordcount"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if drain < 0 {
				return usagef("--drain-timeout %s must not be negative", drain)
			}
			l, err := g.launcher(args[0], g.logger())
			if err != nil {
				return err
			}
			if active {
				err = l.SetActive(cmd.Context(), args[1], true)
			} else {
				if !now && !cmd.Flags().Changed("drain-timeout") {
					if drain, err = l.Cluster.Duration("egret.deactivate.drain.timeout"); err != nil {
						return usageError{err}
					}
				}
				if now {
					drain = 0
				}
				err = l.Deactivate(cmd.Context(), args[1], drain)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%sd topology %q\n", name, args[1])
			return nil
		},
	}
	if !active {
		f := cmd.Flags()
		f.BoolVar(&now, "now", false, "return once the spouts are deactivated, without waiting for the drain")
		f.DurationVar(&drain, "drain-timeout", 0, "how long to wait until no tuple is in flight (default egret.deactivate.drain.timeout, 30s; 0: do not wait)")
	}
	return cmd
}

func restartCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "restart cluster[/role[/env]] <topology> [container]",
		Short: "Restart one container of a topology, or all of them",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || len(args) > 3 {
				return usagef("restart needs a cluster, a topology and optionally a container: egret restart local wordcount 1")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			container := spi.AllContainers
			if len(args) == 3 {
				n, err := names.ParseContainer(args[2])
				if err != nil {
					return usageError{err}
				}
				container = n
			}
			l, err := g.launcher(args[0], g.logger())
			if err != nil {
				return err
			}
			if err := l.Restart(cmd.Context(), args[1], container); err != nil {
				return err
			}
			if container == spi.AllContainers {
				fmt.Fprintf(cmd.OutOrStdout(), "restarted every container of topology %q\n", args[1])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "restarted container %d of topology %q\n", container, args[1])
			}
			return nil
		},
	}
}

func updateCmd(g *globals) *cobra.Command {
	var parallelism, runtimeConfig []string
	var containers int
	var drain time.Duration
	var restart bool
	cmd := &cobra.Command{
		Use:   "update cluster[/role[/env]] <topology> [--component-parallelism c:n]... [--container-number n] [--runtime-config k=v]... [--restart]",
		Short: "Rescale a running topology or change its runtime config",
		Args:  exactArgs(2, "egret update local wordcount --component-parallelism count:4"),
		RunE: func(cmd *cobra.Command, args []string) error {
			par, err := launcher.ParseParallelism(parallelism)
			if err != nil {
				return usageError{err}
			}
			rc, err := launcher.ParseKeyValues("--runtime-config", runtimeConfig)
			if err != nil {
				return usageError{err}
			}
			if len(par) == 0 && containers == 0 && len(rc) == 0 {
				return usagef("update needs --component-parallelism, --container-number or --runtime-config")
			}
			if containers < 0 {
				return usagef("--container-number %d must be at least 1", containers)
			}
			if drain < 0 {
				return usagef("--drain-timeout %s is negative", drain)
			}
			l, err := g.launcher(args[0], g.logger())
			if err != nil {
				return err
			}
			if restart && len(rc) == 0 {
				return usagef("--restart needs the settings to apply: --runtime-config key=value")
			}
			if restart && (len(par) > 0 || containers > 0) {
				return usagef("--restart applies runtime settings: rescale in another egret update (without --restart)")
			}
			if restart {
				if _, _, err := topology.SplitRestartConfig(rc); err != nil {
					return usageError{err}
				}
			}
			o := launcher.UpdateOptions{Parallelism: par, Containers: containers, RuntimeConfig: rc, DrainTimeout: drain, Restart: restart}
			if !cmd.Flags().Changed("drain-timeout") {
				if o.DrainTimeout, err = l.Cluster.Duration("egret.update.drain.timeout"); err != nil {
					return usageError{err}
				}
			}
			if err := l.Update(cmd.Context(), args[1], o); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "updated topology %q\n", args[1])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&parallelism, "component-parallelism", nil, "new task count of a component: component:count or component=count (repeatable)")
	f.IntVar(&containers, "container-number", 0, "new number of containers")
	f.StringArrayVar(&runtimeConfig, "runtime-config", nil, "runtime config value: key=value (repeatable)")
	f.DurationVar(&drain, "drain-timeout", 0, "how long a rescale (or each container restart of --restart) drains before the instances restart (default egret.update.drain.timeout, 30s; 0: no drain)")
	f.BoolVar(&restart, "restart", false, "apply the --runtime-config settings that do not change live by a rolling restart of containers 1..N (drained and health-checked, as egret upgrade)")
	return cmd
}

// dash shows an unknown value as "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// checkOutput validates an --output value.
func checkOutput(output string) error {
	if output != "table" && output != "json" {
		return usagef("--output %q: use table or json", output)
	}
	return nil
}

// writeJSON writes v as indented JSON.
func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func listCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list cluster[/role[/env]]",
		Short: "List the topologies of a cluster",
		Args:  exactArgs(1, "egret list local"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := g.outputLauncher(output, args[0])
			if err != nil {
				return err
			}
			infos, err := l.List(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				if infos == nil {
					infos = []launcher.TopologyInfo{}
				}
				return writeJSON(out, infos)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATE\tCONTAINERS\tINSTANCES\tROLE\tENV\tSUBMITTED\tID\tPACKAGES\tPROBLEM")
			for _, i := range infos {
				submitted := "-"
				if !i.Submitted.IsZero() && i.ID != "" {
					submitted = i.Submitted.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i.Name, i.State, i.Containers, i.Instances, dash(i.Role), dash(i.Environ), submitted, dash(i.ID), dash(launcher.PackagesSummary(i.Packages)), i.Problem)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

func metricsCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "metrics cluster[/role[/env]] <topology>",
		Short: "Show the latest metrics of a running topology, per component",
		Args:  exactArgs(2, "egret metrics local wordcount"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := g.outputLauncher(output, args[0])
			if err != nil {
				return err
			}
			st, err := l.Metrics(cmd.Context(), args[1])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				return writeJSON(out, st)
			}
			comps := make([]string, 0, len(st.Components))
			for c := range st.Components {
				comps = append(comps, c)
			}
			sort.Strings(comps)
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "COMPONENT\tEMITTED\tEXECUTED\tAVG EXECUTE\tERRORS\tDROPPED\tCPU s\tRSS MiB\tUSER COUNTERS\t")
			var silent []string
			for _, c := range comps {
				m := st.Components[c]
				if _, reported := m["instance.emitted"]; !reported {
					// No instance of it has reported yet: no figures,
					// not zeros.
					silent = append(silent, c)
					fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t\t\n", c)
					continue
				}
				avg := "-"
				if n := m["instance.executed"]; n > 0 {
					avg = time.Duration(m["instance.execute.nanos"] / n).String()
				}
				var user []string
				for k, v := range m {
					if name, ok := strings.CutPrefix(k, "user."); ok {
						user = append(user, fmt.Sprintf("%s=%.0f", name, v))
					}
				}
				sort.Strings(user)
				fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%.0f\t%.0f\t%.1f\t%.0f\t%s\t\n", c, m["instance.emitted"], m["instance.executed"], avg,
					m["instance.errors"], m["instance.dropped"], m["process.cpu.seconds"], m["process.rss.bytes"]/(1<<20), strings.Join(user, " "))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(silent) > 0 {
				every := "its export interval"
				if d, err := l.Cluster.Duration("egret.metrics.export.interval"); err == nil {
					every = d.String()
				}
				fmt.Fprintf(out, "no metrics report has arrived yet from %s (instances report every %s; a topology just submitted shows them after its first report)\n",
					strings.Join(silent, ", "), every)
			}
			writeCheckpoints(out, st.Checkpoints)
			writeIsolation(out, st)
			writeHealth(out, st.HealthManager)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

// writeCheckpoints summarizes the checkpoints of an effectively-once
// topology (nothing for the others).
func writeCheckpoints(w io.Writer, m map[string]float64) {
	if len(m) == 0 {
		return
	}
	if id := m["checkpoint.last.complete.id"]; id > 0 {
		fmt.Fprintf(w, "checkpoints: last complete %.0f, %.1fs ago, took %.0fms (alignment %.1fms), %s; ", id, m["checkpoint.last.complete.age.seconds"],
			m["checkpoint.last.duration.ms"], m["checkpoint.last.alignment.ms"], byteSize(m["checkpoint.last.size.bytes"]))
	} else {
		fmt.Fprint(w, "checkpoints: none complete yet; ")
	}
	fmt.Fprintf(w, "%.0f completed, %.0f aborted, %.0f failed, %.0f restores (epoch %.0f)\n",
		m["checkpoint.completed"], m["checkpoint.aborted"], m["checkpoint.failed"], m["checkpoint.restores"], m["checkpoint.epoch"])
}

func byteSize(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// writeHealth lists the health manager's decisions, oldest first
// (nothing for a topology without one).
func writeHealth(w io.Writer, h *launcher.HealthReport) {
	if h == nil {
		return
	}
	fmt.Fprintf(w, "health manager: %d decision(s), %.0f scale-up(s)", len(h.Decisions), h.Metrics["healthmgr.scaleups"])
	if ns := h.Metrics["healthmgr.backpressure.episode.ns"]; ns > 0 {
		fmt.Fprintf(w, "; back pressure for %s now", time.Duration(ns).Round(time.Second))
	}
	fmt.Fprintln(w)
	for _, d := range h.Decisions {
		fmt.Fprintf(w, "  %s  %s  %s  %d -> %d  %s", d.Time.Format(time.RFC3339), d.Component, d.Action, d.OldParallelism, d.NewParallelism, d.Reason)
		if d.Error != "" {
			fmt.Fprintf(w, "  error: %s", d.Error)
		}
		fmt.Fprintln(w)
	}
}

// writeIsolation says which containers run without cgroups (Go limits
// only) and the memory and CPU limit events of each component.
func writeIsolation(w io.Writer, st *launcher.Stats) {
	ids := make([]string, 0, len(st.Executors))
	for id := range st.Executors {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var without []string
	for _, id := range ids {
		if st.Executors[id]["executor.cgroups"] == 0 {
			without = append(without, id)
		}
	}
	if len(without) > 0 {
		fmt.Fprintf(w, "isolation: container(s) %s run without cgroups: only GOMAXPROCS, GOMEMLIMIT and the executor's RSS watchdog apply (see the executor log, docs/isolation.md)\n", strings.Join(without, ", "))
	}
	comps := make([]string, 0, len(st.Components))
	for c := range st.Components {
		comps = append(comps, c)
	}
	sort.Strings(comps)
	for _, c := range comps {
		m := st.Components[c]
		if oom, thr := m["resource.memory.oom.kills"], m["resource.cpu.throttled.seconds"]; oom > 0 || thr > 0 {
			fmt.Fprintf(w, "isolation: %s: %.0f instance(s) killed for exceeding their memory limit, %.1fs throttled at their cpu limit\n", c, oom, thr)
		}
	}
}
