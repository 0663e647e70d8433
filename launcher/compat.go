package launcher

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/egret-stream/egret/core/topology"
)

// CompatibilityDiff lists, one line each, what a new topology definition
// changes in the logical plan of a running one that a rolling upgrade
// cannot carry: a component added, removed or of another kind; an output
// stream added, removed, with other fields or another direct flag; a
// subscription added or removed, or with another grouping, grouping fields
// or custom grouping. Containers of both versions exchange tuples during
// the roll, so each must understand what the other sends. Parallelism,
// settings and the order of declarations are not compared (the running
// plan keeps its own). An empty list means the upgrade is possible.
func CompatibilityDiff(running, next *topology.Topology) []string {
	var diff []string
	add := func(format string, args ...any) { diff = append(diff, fmt.Sprintf(format, args...)) }
	old, neu := byName(running), byName(next)
	for _, name := range sortedNames(old, neu) {
		oc, inOld := old[name]
		nc, inNew := neu[name]
		switch {
		case !inNew:
			add("%s %q is gone", oc.Kind, name)
			continue
		case !inOld:
			add("%s %q is new", nc.Kind, name)
			continue
		case oc.Kind != nc.Kind:
			add("component %q is a %s, the new binary makes it a %s", name, oc.Kind, nc.Kind)
			continue
		}
		diff = append(diff, streamDiff(name, oc.Outputs, nc.Outputs)...)
		diff = append(diff, inputDiff(name, oc.Inputs, nc.Inputs)...)
	}
	return diff
}

func byName(t *topology.Topology) map[string]*topology.Component {
	out := map[string]*topology.Component{}
	for i := range t.Components {
		out[t.Components[i].Name] = &t.Components[i]
	}
	return out
}

func sortedNames[V any](a, b map[string]V) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	names := slices.Collect(maps.Keys(set))
	sort.Strings(names)
	return names
}

func streamDiff(comp string, old, neu []topology.Stream) []string {
	var diff []string
	om, nm := map[string]topology.Stream{}, map[string]topology.Stream{}
	for _, s := range old {
		om[s.ID] = s
	}
	for _, s := range neu {
		nm[s.ID] = s
	}
	for _, id := range sortedNames(om, nm) {
		o, inOld := om[id]
		n, inNew := nm[id]
		switch {
		case !inNew:
			diff = append(diff, fmt.Sprintf("stream %s/%s is gone", comp, id))
		case !inOld:
			diff = append(diff, fmt.Sprintf("stream %s/%s is new", comp, id))
		default:
			if !slices.Equal(o.Fields, n.Fields) {
				diff = append(diff, fmt.Sprintf("stream %s/%s has fields %s, the new binary %s", comp, id, fieldList(o.Fields), fieldList(n.Fields)))
			}
			if o.Direct != n.Direct {
				diff = append(diff, fmt.Sprintf("stream %s/%s is %s, the new binary makes it %s", comp, id, directness(o.Direct), directness(n.Direct)))
			}
		}
	}
	return diff
}

func inputDiff(bolt string, old, neu []topology.Input) []string {
	var diff []string
	key := func(in topology.Input) string { return in.Component + "/" + in.Stream }
	om, nm := map[string]topology.Input{}, map[string]topology.Input{}
	for _, in := range old {
		om[key(in)] = in
	}
	for _, in := range neu {
		nm[key(in)] = in
	}
	for _, k := range sortedNames(om, nm) {
		o, inOld := om[k]
		n, inNew := nm[k]
		switch {
		case !inNew:
			diff = append(diff, fmt.Sprintf("bolt %q no longer subscribes to %s", bolt, k))
		case !inOld:
			diff = append(diff, fmt.Sprintf("bolt %q subscribes to %s (new, %s)", bolt, k, grouping(n)))
		case o.Grouping != n.Grouping || !slices.Equal(o.Fields, n.Fields) || o.CustomName != n.CustomName:
			diff = append(diff, fmt.Sprintf("bolt %q takes %s by %s, the new binary by %s", bolt, k, grouping(o), grouping(n)))
		}
	}
	return diff
}

func grouping(in topology.Input) string {
	switch in.Grouping {
	case topology.Fields:
		return "fields grouping on " + fieldList(in.Fields)
	case topology.Custom:
		return fmt.Sprintf("custom grouping %q", in.CustomName)
	}
	return in.Grouping.String() + " grouping"
}

func fieldList(f []string) string { return "[" + strings.Join(f, " ") + "]" }

func directness(d bool) string {
	if d {
		return "direct"
	}
	return "not direct"
}

// configDiff lists the topology and component settings a new definition
// changes: an upgrade does not apply them (the running plan keeps its
// settings; egret update --runtime-config changes the live ones).
func configDiff(running, next *topology.Topology) []string {
	var diff []string
	cmp := func(where string, o, n map[string]string) {
		for _, k := range sortedNames(o, n) {
			ov, inOld := o[k]
			nv, inNew := n[k]
			if inOld != inNew || ov != nv {
				diff = append(diff, fmt.Sprintf("%s%s", where, k))
			}
		}
	}
	cmp("", running.Config, next.Config)
	old, neu := byName(running), byName(next)
	for name, oc := range old {
		if nc, ok := neu[name]; ok {
			cmp(name+":", oc.Config, nc.Config)
		}
	}
	sort.Strings(diff)
	return diff
}
