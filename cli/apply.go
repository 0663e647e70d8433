package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/launcher"
	"github.com/egret-stream/egret/launcher/manifest"
)

// An applyStep is what apply does to one topology.
type applyStep struct {
	Cluster  string `json:"cluster"`
	Topology string `json:"topology"`
	// Action is create, upgrade (a changed binary, then the scale when it
	// changes too), update, resubmit (a changed logical plan: planned and
	// reported, never done), unchanged or kill (--prune).
	Action string `json:"action"`
	// Detail says what changes (scale) or why nothing does.
	Detail string `json:"detail,omitempty"`
	// Status is planned (--dry-run), ok, failed or skipped (not run after
	// a failure).
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	Where  string `json:"where,omitempty"`

	entry *manifest.Topology
	l     *launcher.Launcher
	scale launcher.UpdateOptions
	// rescale: the upgrade step also updates the scale.
	rescale bool
}

func applyCmd(g *globals) *cobra.Command {
	var file, output string
	var dryRun, prune, keepGoing bool
	var parallel int
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR [--dry-run] [--prune] [--parallel N] [--continue-on-error] [-o json]",
		Short: "Make the running topologies what a manifest lists (create, upgrade, scale, prune)",
		Long: `Reads a manifest (a YAML file, or every .yaml/.yml file of a directory; docs/operations.md)
and makes it so: a listed topology that does not run is submitted, one that runs another binary
(another sha256 than the running package's topology binary) is upgraded (egret upgrade, drained
per container), one whose binary and arguments define another logical plan is reported as a
resubmit (not done: kill it first), one that runs with another scale is updated, and with --prune a topology of a listed cluster that the manifest does not list
is killed (drained first). Applying the same manifest twice changes nothing. --dry-run prints
the plan and changes nothing. The exit code is 1 when any step failed, 2 for a bad manifest.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef("apply needs -f FILE or -f DIR (a manifest)")
			}
			if parallel < 1 {
				return usagef("--parallel %d must be at least 1", parallel)
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			entries, err := manifest.Load(file)
			if err != nil {
				return usageError{err}
			}
			steps, err := g.applyPlan(cmd.Context(), entries, prune)
			if err != nil {
				return err
			}
			if !dryRun {
				runSteps(cmd.Context(), steps, parallel, keepGoing, wait)
			}
			return reportSteps(cmd.OutOrStdout(), steps, output)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "filename", "f", "", "manifest file or directory")
	f.BoolVar(&dryRun, "dry-run", false, "print what would be done; change nothing")
	f.BoolVar(&prune, "prune", false, "kill the topologies of the manifest's clusters that it does not list")
	f.IntVar(&parallel, "parallel", 1, "steps run at once")
	f.BoolVar(&keepGoing, "continue-on-error", false, "run the remaining steps after a failed one (default: skip them)")
	f.DurationVar(&wait, "wait", 2*time.Minute, "how long a created topology may take to run before its scale is applied")
	f.StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

// applyPlan loads every entry's cluster (with its config properties) and
// compares the manifest with what runs, before anything changes.
func (g *globals) applyPlan(ctx context.Context, entries []manifest.Topology, prune bool) ([]*applyStep, error) {
	var steps []*applyStep
	listed := map[string]map[string]bool{} // cluster argument → names
	listers := map[string]*launcher.Launcher{}
	var errs []error
	for i := range entries {
		e := &entries[i]
		l, err := g.launcherWith(e.Cluster, append(slices.Clone(g.properties), e.Config...), g.logger(), nil)
		if err != nil {
			var ue usageError
			if errors.As(err, &ue) {
				err = ue.err
			}
			errs = append(errs, fmt.Errorf("%s: topology %s: %w", e.Where(), e.Name, err))
			continue
		}
		if listed[e.Cluster] == nil {
			listed[e.Cluster] = map[string]bool{}
			listers[e.Cluster] = l
		}
		listed[e.Cluster][e.Name] = true
		steps = append(steps, &applyStep{Cluster: e.Cluster, Topology: e.Name, Where: e.Where(), entry: e, l: l})
	}
	if len(errs) > 0 {
		return nil, usageError{errors.Join(errs...)}
	}
	running := map[string]map[string]launcher.TopologyInfo{}
	for _, c := range slices.Sorted(maps.Keys(listers)) {
		infos, err := listers[c].List(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the topologies of %s: %w", c, err)
		}
		running[c] = map[string]launcher.TopologyInfo{}
		for _, in := range infos {
			running[c][in.Name] = in
		}
	}
	for _, s := range steps {
		in, ok := running[s.Cluster][s.Topology]
		switch {
		case !ok:
			s.Action, s.Detail = "create", "submit "+s.entry.Binary
			s.scale = launcher.UpdateOptions{Parallelism: s.entry.Parallelism, Containers: s.entry.Containers}
		case in.State == "corrupt" || in.State == "partial" || in.State == "down":
			s.Action, s.Status = "unchanged", "failed"
			s.Error = fmt.Sprintf("the topology is %s (%s): egret kill %s %s removes it, then apply again", in.State, in.Problem, s.Cluster, s.Topology)
		default:
			if err := s.diffScale(ctx); err != nil {
				s.Action, s.Status, s.Error = "unchanged", "failed", err.Error()
				continue
			}
			if err := s.diffBinary(ctx, in); err != nil {
				s.Action, s.Status, s.Error = "unchanged", "failed", err.Error()
			}
		}
	}
	if prune {
		for _, c := range slices.Sorted(maps.Keys(running)) {
			for _, name := range slices.Sorted(maps.Keys(running[c])) {
				if !listed[c][name] {
					steps = append(steps, &applyStep{Cluster: c, Topology: name, Action: "kill", Detail: "not in the manifest (--prune)", l: listers[c]})
				}
			}
		}
	}
	for _, s := range steps {
		if s.Status == "" {
			s.Status = "planned"
		}
	}
	return steps, nil
}

// diffScale compares the running scale with the entry's.
func (s *applyStep) diffScale(ctx context.Context) error {
	par, containers, err := s.l.Scale(ctx, s.Topology)
	if err != nil {
		return err
	}
	var changes []string
	want := map[string]int{}
	for _, c := range s.entry.Components() {
		have, ok := par[c]
		if !ok {
			return fmt.Errorf("%s: the topology has no component %q (it has %s)", s.Where, c, strings.Join(slices.Sorted(maps.Keys(par)), ", "))
		}
		if n := s.entry.Parallelism[c]; n != have {
			want[c] = n
			changes = append(changes, fmt.Sprintf("%s %d→%d", c, have, n))
		}
	}
	if n := s.entry.Containers; n != 0 && n != containers {
		changes = append(changes, fmt.Sprintf("containers %d→%d", containers, n))
		s.scale.Containers = n
	}
	if len(changes) == 0 {
		s.Action, s.Detail = "unchanged", "runs as listed"
		return nil
	}
	if len(want) > 0 {
		s.scale.Parallelism = want
	}
	s.Action, s.Detail = "update", strings.Join(changes, ", ")
	return nil
}

// diffBinary compares the entry's binary (built as submit would build it,
// defined with the entry's arguments) with the running topology: another
// digest than the running packages' topology binary plans an upgrade
// (followed by the scale update, if any); a logical plan an upgrade
// cannot roll out plans a resubmit, which apply does not do; settings
// that differ are noted.
func (s *applyStep) diffBinary(ctx context.Context, in launcher.TopologyInfo) error {
	cmp, err := s.l.Compare(ctx, s.Topology, s.entry.Binary, s.entry.Args)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Where, err)
	}
	if len(cmp.Incompatible) > 0 {
		s.Action = "resubmit"
		s.Detail = fmt.Sprintf("the binary with these arguments defines another logical plan (%s), which a rolling upgrade cannot roll out: egret kill %s %s, then apply again submits it",
			strings.Join(cmp.Incompatible, "; "), s.Cluster, s.Topology)
		return nil
	}
	var running []string
	recorded := len(in.Packages) > 0
	for _, p := range in.Packages {
		if p.BinarySHA256 == "" {
			recorded = false
		} else if !slices.Contains(running, p.BinarySHA256) {
			running = append(running, p.BinarySHA256)
		}
	}
	switch {
	case !recorded:
		s.Detail += "; binary not compared (the running package does not record its binary's digest: submitted by an older egret; egret upgrade ships the manifest's)"
	case len(running) != 1 || running[0] != cmp.BinarySHA256:
		short := make([]string, len(running))
		for i, r := range running {
			short[i] = launcher.ShortSHA(r)
		}
		detail := fmt.Sprintf("binary %s→%s (a rolling upgrade)", strings.Join(short, "+"), launcher.ShortSHA(cmp.BinarySHA256))
		if s.Action == "update" {
			detail += "; then " + s.Detail
			s.rescale = true
		}
		s.Action, s.Detail = "upgrade", detail
	}
	if len(cmp.Settings) > 0 {
		s.Detail += fmt.Sprintf("; settings %s differ from the running definition and are not applied (egret update --runtime-config changes topology-level ones, --restart the fixed ones; a component's own need a resubmit)", strings.Join(cmp.Settings, ", "))
	}
	return nil
}

// runSteps carries out the planned steps, at most parallel at once; after
// a failure the steps not yet started are skipped unless keepGoing.
func runSteps(ctx context.Context, steps []*applyStep, parallel int, keepGoing bool, wait time.Duration) {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := false
	for _, s := range steps {
		if s.Status != "planned" {
			if s.Status == "failed" {
				mu.Lock()
				failed = true
				mu.Unlock()
			}
			continue
		}
		sem <- struct{}{}
		mu.Lock()
		stop := failed && !keepGoing
		mu.Unlock()
		if stop {
			<-sem
			s.Status = "skipped"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := s.run(ctx, wait)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				s.Status, s.Error, failed = "failed", strings.ReplaceAll(err.Error(), "\n", "; "), true
				return
			}
			s.Status = "ok"
		}()
	}
	wg.Wait()
}

func (s *applyStep) run(ctx context.Context, wait time.Duration) error {
	switch s.Action {
	case "create":
		// A dry run first: the binary must define the listed name before
		// anything is uploaded or started.
		dry, err := s.l.Submit(ctx, launcher.SubmitOptions{Binary: s.entry.Binary, Args: s.entry.Args, DryRun: true, DryRunOut: io.Discard})
		if err != nil {
			return err
		}
		if dry.Topology != s.Topology {
			return fmt.Errorf("%s: the binary defines topology %q, not %q", s.Where, dry.Topology, s.Topology)
		}
		if _, err := s.l.Submit(ctx, launcher.SubmitOptions{Binary: s.entry.Binary, Args: s.entry.Args, WaitRunning: wait}); err != nil {
			return err
		}
		if s.scale.Parallelism == nil && s.scale.Containers == 0 {
			return nil
		}
		// Scale overrides apply to what the binary defined.
		if err := s.diffScale(ctx); err != nil {
			return err
		}
		if s.Action == "unchanged" {
			s.Action = "create"
			return nil
		}
		s.Action = "create"
		return s.l.Update(ctx, s.Topology, s.scale)
	case "upgrade":
		d, err := s.l.Cluster.Duration("egret.upgrade.drain.timeout")
		if err != nil {
			return err
		}
		if _, err := s.l.Upgrade(ctx, s.Topology, launcher.UpgradeOptions{Binary: s.entry.Binary, Args: s.entry.Args, DrainTimeout: d}); err != nil {
			return err
		}
		if !s.rescale {
			return nil
		}
		return s.update(ctx)
	case "update":
		return s.update(ctx)
	case "resubmit":
		return fmt.Errorf("%s: apply does not resubmit a running topology (what it holds in flight and in state would be lost): egret kill %s %s, then apply again", s.Where, s.Cluster, s.Topology)
	case "kill":
		d, err := s.l.Cluster.Duration("egret.kill.drain.timeout")
		if err != nil {
			return err
		}
		return s.l.Kill(ctx, s.Topology, launcher.KillOptions{DrainTimeout: d})
	}
	return nil
}

// update applies the step's scale, drained (egret.update.drain.timeout).
func (s *applyStep) update(ctx context.Context) error {
	d, err := s.l.Cluster.Duration("egret.update.drain.timeout")
	if err != nil {
		return err
	}
	s.scale.DrainTimeout = d
	return s.l.Update(ctx, s.Topology, s.scale)
}

func reportSteps(w io.Writer, steps []*applyStep, output string) error {
	failed := 0
	for _, s := range steps {
		if s.Status == "failed" {
			failed++
		}
	}
	if output == "json" {
		if err := writeJSON(w, map[string]any{"steps": steps, "failed": failed}); err != nil {
			return err
		}
	} else {
		for _, s := range steps {
			line := fmt.Sprintf("%-9s %-9s %s %s", s.Status, s.Action, s.Cluster, s.Topology)
			if s.Detail != "" {
				line += ": " + s.Detail
			}
			if s.Error != "" {
				line += ": " + s.Error
			}
			fmt.Fprintln(w, line)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d steps failed", failed, len(steps))
	}
	return nil
}
