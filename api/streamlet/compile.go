package streamlet

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/window"
)

// group is one compiled component: a head stage and the stages fused
// after it.
type group struct {
	name    string
	members []*node
}

func (g *group) head() *node { return g.members[0] }
func (g *group) tail() *node { return g.members[len(g.members)-1] }

// canFuse reports whether n runs in its input's component: a stateless
// or per-task stage whose only input has no other consumer, with the
// same parallelism and no repartitioning between them.
func (b *Builder) canFuse(n *node) bool {
	if b.noFusing || n.kind != kindOp || len(n.parents) != 1 || n.separate || n.partition != nil {
		return false
	}
	p := n.parents[0]
	return (p.kind == kindOp || p.kind == kindSource) && len(p.children) == 1 && !p.separate &&
		!p.keyed && p.parallelism == n.parallelism
}

// Compile turns the pipeline into a topology of spouts and bolts. Fused
// stages form one component named after its stages joined by "_".
func (b *Builder) Compile() (*api.TopologyBuilder, error) {
	problems := append([]string(nil), b.problems...)
	groups := []*group{}
	of := map[*node]*group{}
	for _, n := range b.nodes {
		if n.parallelism < 1 {
			problems = append(problems, fmt.Sprintf("stage %s: parallelism %d must be at least 1", n.label(), n.parallelism))
		}
		// A terminal stage is not fused into a spout: a spout that never
		// emits is backed off by the runtime as idle.
		if b.canFuse(n) && (of[n.parents[0]].head().kind != kindSource || len(n.children) > 0) {
			g := of[n.parents[0]]
			g.members = append(g.members, n)
			of[n] = g
			continue
		}
		g := &group{members: []*node{n}}
		groups = append(groups, g)
		of[n] = g
	}
	tb := api.NewTopologyBuilder(b.name)
	for k, v := range b.config {
		tb.SetConfig(k, v)
	}
	for _, r := range b.types {
		tb.RegisterType(r.id, r.sample, r.codec)
	}
	for _, g := range groups {
		var names []string
		for _, m := range g.members {
			names = append(names, m.label())
		}
		g.name = strings.Join(names, "_")
	}
	for _, g := range groups {
		head, tail := g.head(), g.tail()
		out := outputOf(tail)
		var inputs []string
		for _, p := range head.parents {
			inputs = append(inputs, of[p].name)
		}
		switch head.kind {
		case kindSource:
			members := g.members
			tb.SetSpout(g.name, func() api.Spout { return &sourceSpout{members: members, out: out} }, head.parallelism)
			continue
		case kindWindow:
			f, err := head.newBolt(inputs)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			d := tb.SetBolt(g.name, f, head.parallelism).SetTickFrequency(100 * time.Millisecond)
			subscribe(d, head, of)
		default:
			members := g.members
			decoders := map[string]inputDecoder{}
			for _, p := range head.parents {
				decoders[of[p].name] = decoderOf(p)
			}
			d := tb.SetBolt(g.name, func() api.Bolt {
				return &chainBolt{members: members, out: out, decoders: decoders}
			}, head.parallelism)
			if out.stamp != nil {
				d.SetTickFrequency(watermarkEvery)
			}
			subscribe(d, head, of)
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("streamlet %s: %w", b.name, errors.New(strings.Join(problems, "; ")))
	}
	return tb, nil
}

// subscribe subscribes a component's head stage to its inputs: by key
// after a key-by, with the repartitioner after Repartition, else
// shuffled.
func subscribe(d *api.BoltDeclarer, head *node, of map[*node]*group) {
	for _, p := range head.parents {
		src := of[p].name
		switch {
		case p.keyed:
			d.FieldsGrouping(src, "key")
			if p.stamp != nil {
				d.Input(src, window.WatermarkStream, api.All())
			}
		case head.partition != nil:
			part, dec := head.partition, decoderOf(p)
			d.CustomGrouping(src, fmt.Sprintf("streamlet-%s", head.label()), func(values []any, tasks []int) []int {
				var chosen []int
				dec(values, func(v any) {
					for _, i := range part(v, len(tasks)) {
						if i >= 0 && i < len(tasks) {
							chosen = append(chosen, tasks[i])
						}
					}
				})
				return chosen
			})
		default:
			d.ShuffleGrouping(src)
		}
	}
}

// output is how a component emits its tail stage's elements.
type output struct {
	fields []string // nil: the component emits nothing
	encode func(v any) api.Values
	// stamp and delay: the component generates watermarks (see
	// node.stamp).
	stamp func(v any) time.Time
	delay time.Duration
}

func outputOf(tail *node) output {
	if len(tail.children) == 0 {
		return output{}
	}
	enc := tail.vc.enc
	if tail.keyed {
		return output{fields: []string{"key", "value"}, encode: func(v any) api.Values {
			kv := v.(keyValue)
			return api.Values{kv.key, enc(kv.value)}
		}, stamp: tail.stamp, delay: tail.delay}
	}
	return output{fields: []string{"value"}, encode: func(v any) api.Values { return api.Values{enc(v)} }}
}

// inputDecoder turns a received tuple's values into elements.
type inputDecoder func(values []any, emit func(any))

func decoderOf(p *node) inputDecoder {
	dec := p.vc.dec
	if p.multi {
		return func(values []any, emit func(any)) {
			l, _ := values[0].([]any)
			for _, v := range l {
				emit(dec(v))
			}
		}
	}
	return func(values []any, emit func(any)) { emit(dec(values[0])) }
}

// chain builds the functions of a component's stages, each feeding the
// next; last receives the tail's output.
func chain(ctx api.Context, members []*node, last func(any)) (func(any), func(), error) {
	next := last
	var cleanups []func()
	for i := len(members) - 1; i >= 0; i-- {
		m := members[i]
		if m.newOp == nil {
			continue // the source itself
		}
		process, cleanup, err := m.newOp(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("stage %s: %w", m.label(), err)
		}
		if cleanup != nil {
			cleanups = append(cleanups, cleanup)
		}
		emit := next
		next = func(v any) { process(v, emit) }
	}
	return next, func() {
		for _, c := range cleanups {
			c()
		}
	}, nil
}
