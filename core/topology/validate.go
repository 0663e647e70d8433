package topology

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/names"
)

// fieldPattern is the form of field names.
var fieldPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedNames may not name a component: they name Egret's own processes
// and system components in metrics and logs.
var reservedNames = map[string]bool{
	"tmanager": true, "stmgr": true, "metricsmgr": true, "executor": true,
	"ckptmgr": true, "shell": true, "system": true, "acker": true,
}

// ValidationError lists every problem found in a topology, one per line.
type ValidationError struct {
	Topology string
	Problems []string
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "topology %q is invalid (%d problems):", e.Topology, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p)
	}
	return b.String()
}

// Validate checks the topology and returns a *ValidationError listing every
// problem, or nil.
func Validate(t *Topology) error {
	v := &validator{t: t}
	v.check()
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Topology: t.Name, Problems: v.problems}
}

type validator struct {
	t        *Topology
	problems []string
}

func (v *validator) addf(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

func (v *validator) check() {
	t := v.t
	if err := names.Check(names.Topology, t.Name); err != nil {
		v.addf("topology: %v", err)
	}
	if len(t.Components) == 0 {
		v.addf("topology: has no components (add a spout with SetSpout)")
		return
	}
	if len(t.Spouts()) == 0 {
		v.addf("topology: has no spout")
	}
	for _, k := range sortedKeys(t.Config) {
		if msg, ok := checkValue(k, t.Config[k], false); !ok {
			v.addf("topology config %s: %s", k, msg)
		}
	}
	seen := map[string]bool{}
	for i := range t.Components {
		c := &t.Components[i]
		label := fmt.Sprintf("component %q", c.Name)
		if err := names.Check(names.Component, c.Name); err != nil {
			v.addf("component #%d: %v", i+1, err)
		} else if reservedNames[strings.ToLower(c.Name)] {
			v.addf("%s: the name is reserved for Egret's own processes; choose another", label)
		}
		if seen[c.Name] {
			v.addf("%s: duplicate component name", label)
		}
		seen[c.Name] = true
		if c.Kind != Spout && c.Kind != Bolt {
			v.addf("%s: unknown kind %v", label, c.Kind)
		}
		if c.Parallelism < 1 {
			v.addf("%s: parallelism %d must be at least 1", label, c.Parallelism)
		} else if err := keygroup.Check(c.Parallelism, t.MaxParallelism(c.Name)); err != nil {
			v.addf("%s: %v", label, err)
		}
		if c.Kind == Spout && len(c.Inputs) > 0 {
			v.addf("%s: a spout cannot have inputs", label)
		}
		if c.Kind == Bolt && len(c.Inputs) == 0 {
			v.addf("%s: bolt subscribes to no stream (add a grouping such as ShuffleGrouping)", label)
		}
		for _, k := range sortedKeys(c.Config) {
			if msg, ok := checkValue(k, c.Config[k], true); !ok {
				v.addf("%s config %s: %s", label, k, msg)
			}
		}
		v.checkOutputs(label, c)
	}
	for i := range t.Components {
		v.checkInputs(&t.Components[i])
	}
	v.checkCycles()
}

func (v *validator) checkOutputs(label string, c *Component) {
	streams := map[string]bool{}
	for _, s := range c.Outputs {
		sl := fmt.Sprintf("%s stream %q", label, s.ID)
		if err := names.Check(names.Stream, s.ID); err != nil {
			v.addf("%s: %v", label, err)
		}
		if streams[s.ID] {
			v.addf("%s: declared twice", sl)
		}
		streams[s.ID] = true
		fields := map[string]bool{}
		for _, f := range s.Fields {
			if !fieldPattern.MatchString(f) {
				v.addf("%s: field name %q must start with a letter or '_' and contain only letters, digits and '_'", sl, f)
			}
			if fields[f] {
				v.addf("%s: field %q declared twice", sl, f)
			}
			fields[f] = true
		}
	}
}

func (v *validator) checkInputs(c *Component) {
	label := fmt.Sprintf("component %q", c.Name)
	subscribed := map[string]bool{}
	for _, in := range c.Inputs {
		il := fmt.Sprintf("%s input %s/%s", label, in.Component, in.Stream)
		key := in.Component + "\x00" + in.Stream
		if subscribed[key] {
			v.addf("%s: subscribed twice to the same stream", il)
		}
		subscribed[key] = true
		src, ok := v.t.Component(in.Component)
		if !ok {
			v.addf("%s: unknown component %q", il, in.Component)
			continue
		}
		s, ok := src.Output(in.Stream)
		if !ok {
			v.addf("%s: component %q declares no stream %q (declared: %s)", il, in.Component, in.Stream, streamIDs(src))
			continue
		}
		switch in.Grouping {
		case Fields:
			if len(in.Fields) == 0 {
				v.addf("%s: fields grouping needs at least one field", il)
			}
			for _, f := range in.Fields {
				if !contains(s.Fields, f) {
					v.addf("%s: fields grouping on undeclared field %q (stream fields: %s)", il, f, strings.Join(s.Fields, ", "))
				}
			}
		case Custom:
			if in.CustomName == "" {
				v.addf("%s: custom grouping has no name", il)
			}
		case Shuffle, All, Global, None, Direct, LocalOrShuffle:
		default:
			v.addf("%s: unknown grouping %v", il, in.Grouping)
		}
		if s.Direct && in.Grouping != Direct {
			v.addf("%s: stream is declared direct, so it needs a direct grouping", il)
		}
		if !s.Direct && in.Grouping == Direct {
			v.addf("%s: direct grouping on a stream not declared direct (declare it with DeclareDirectStream)", il)
		}
	}
}

// checkCycles reports every component that lies on a cycle of
// subscriptions; tuples would circulate forever and acking trees could
// never complete. A component is on a cycle when it can reach itself.
func (v *validator) checkCycles() {
	subscribers := map[string][]string{}
	for _, c := range v.t.Components {
		for _, in := range c.Inputs {
			subscribers[in.Component] = append(subscribers[in.Component], c.Name)
		}
	}
	reachesItself := func(name string) bool {
		seen := map[string]bool{}
		stack := append([]string(nil), subscribers[name]...)
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if n == name {
				return true
			}
			if !seen[n] {
				seen[n] = true
				stack = append(stack, subscribers[n]...)
			}
		}
		return false
	}
	onCycle := map[string]bool{}
	for _, c := range v.t.Components {
		if !onCycle[c.Name] && reachesItself(c.Name) {
			onCycle[c.Name] = true
		}
	}
	if len(onCycle) > 0 {
		v.addf("topology: subscriptions form a cycle through %s", strings.Join(sortedKeys(onCycle), ", "))
	}
}

func streamIDs(c *Component) string {
	if len(c.Outputs) == 0 {
		return "none"
	}
	ids := make([]string, len(c.Outputs))
	for i, s := range c.Outputs {
		ids[i] = s.ID
	}
	return strings.Join(ids, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CheckEffectivelyOnce refuses an effectively-once topology holding a
// component whose state cannot be checkpointed (it declares
// KeyNotCheckpointed) and that the user did not mark stateless
// (KeyStateless): after a rollback such a component would hold what it
// built from tuples that are then replayed, and count them twice. The
// error is one line naming every such component; other delivery modes
// pass.
func CheckEffectivelyOnce(t *Topology) error {
	if t.DeliveryMode() != EffectivelyOnce {
		return nil
	}
	var bad []string
	for i := range t.Components {
		c := &t.Components[i]
		why := c.Config[KeyNotCheckpointed]
		if why == "" {
			continue
		}
		if stateless, _ := strconv.ParseBool(c.Config[KeyStateless]); stateless {
			continue
		}
		bad = append(bad, fmt.Sprintf("component %q cannot be checkpointed (%s)", c.Name, why))
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("topology %q cannot run %s: %s; if such a component keeps no state, mark it stateless (SetStateless() on its declarer), else choose %s",
		t.Name, EffectivelyOnce, strings.Join(bad, "; "), AtLeastOnce)
}
