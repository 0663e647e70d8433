package streamlet

import (
	"github.com/egret-stream/egret/api"
)

// sourceSpout runs a source stage and the stages fused after it.
type sourceSpout struct {
	api.BaseSpout
	members []*node
	out     output
	next    func() (any, bool)
	push    func(any)
	cleanup func()
}

func (s *sourceSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	sup, err := s.members[0].newSource(ctx)
	if err != nil {
		return err
	}
	last := func(any) {}
	if s.out.encode != nil {
		enc := s.out.encode
		last = func(v any) { out.Emit(enc(v), nil) }
	}
	push, cleanup, err := chain(ctx, s.members, last)
	if err != nil {
		return err
	}
	s.next, s.push, s.cleanup = sup, push, cleanup
	return nil
}

func (s *sourceSpout) NextTuple() {
	if v, ok := s.next(); ok {
		s.push(v)
	}
}

func (s *sourceSpout) Close() {
	if s.cleanup != nil {
		s.cleanup()
	}
}

func (s *sourceSpout) DeclareOutputFields(d api.OutputDeclarer) {
	if s.out.fields != nil {
		d.Declare(s.out.fields...)
	}
}

// chainBolt runs a component of fused op stages: each received element
// goes through every stage, and what the last emits is anchored to the
// received tuple.
type chainBolt struct {
	api.BaseBolt
	members  []*node
	out      output
	decoders map[string]inputDecoder
	collect  api.BoltCollector
	push     func(any)
	cleanup  func()
	cur      api.Tuple
}

func (b *chainBolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.collect = out
	last := func(any) {}
	if b.out.encode != nil {
		enc := b.out.encode
		last = func(v any) { out.Emit(enc(v), b.cur) }
	}
	push, cleanup, err := chain(ctx, b.members, last)
	if err != nil {
		return err
	}
	b.push, b.cleanup = push, cleanup
	return nil
}

func (b *chainBolt) Execute(t api.Tuple) {
	if t.IsTick() {
		return
	}
	if dec := b.decoders[t.SourceComponent()]; dec != nil {
		b.cur = t
		dec(t.Values(), b.push)
		b.cur = nil
	}
	b.collect.Ack(t)
}

func (b *chainBolt) Cleanup() {
	if b.cleanup != nil {
		b.cleanup()
	}
}

func (b *chainBolt) DeclareOutputFields(d api.OutputDeclarer) {
	if b.out.fields != nil {
		d.Declare(b.out.fields...)
	}
}
