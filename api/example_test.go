package api_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/egret-stream/egret/api"
)

// ShoutBolt is the bolt under test: it upper-cases words, drops empty ones
// and acks every tuple. Copy the pattern below to unit-test your own bolts
// without any runtime.
type ShoutBolt struct {
	api.BaseBolt
	out api.BoltCollector
}

func (b *ShoutBolt) Prepare(_ api.Context, out api.BoltCollector) error {
	b.out = out
	return nil
}

func (b *ShoutBolt) Execute(t api.Tuple) {
	if w := t.String(t.FieldIndex("word")); w != "" {
		b.out.Emit(api.Values{strings.ToUpper(w) + "!"}, t)
	}
	b.out.Ack(t)
}

func (b *ShoutBolt) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("shout") }

// emission is one tuple a bolt emitted.
type emission struct {
	Stream  string
	Task    int // -1 unless EmitDirect
	Values  api.Values
	Anchors []api.Tuple
}

// fakeCollector records what a bolt emits, acks, fails and reports. Like
// the runtime's collector it keeps copies, not the bolt's slices (a bolt
// may reuse its Values and anchors slices).
type fakeCollector struct {
	Emitted        []emission
	Acked, Failed  []api.Tuple
	ReportedErrors []error
}

func (c *fakeCollector) Emit(v api.Values, anchors ...api.Tuple) {
	c.EmitStream("default", v, anchors...)
}

func (c *fakeCollector) EmitStream(stream string, v api.Values, anchors ...api.Tuple) {
	c.EmitDirect(-1, stream, v, anchors...)
}

func (c *fakeCollector) EmitDirect(task int, stream string, v api.Values, anchors ...api.Tuple) {
	c.Emitted = append(c.Emitted, emission{stream, task, append(api.Values(nil), v...), append([]api.Tuple(nil), anchors...)})
}

func (c *fakeCollector) Ack(t api.Tuple)       { c.Acked = append(c.Acked, t) }
func (c *fakeCollector) Fail(t api.Tuple)      { c.Failed = append(c.Failed, t) }
func (c *fakeCollector) ReportError(err error) { c.ReportedErrors = append(c.ReportedErrors, err) }

// Unit-test a bolt: give it a fake collector, feed it tuples built with
// api.NewTuple and look at what it emitted and acked.
func Example_unitTestABolt() {
	out := &fakeCollector{}
	bolt := &ShoutBolt{}
	// ShoutBolt does not use its Context, so nil will do.
	if err := bolt.Prepare(nil, out); err != nil {
		fmt.Println("prepare:", err)
		return
	}
	fields := []string{"word"}
	bolt.Execute(api.NewTuple("split", "default", 1, fields, "hello"))
	bolt.Execute(api.NewTuple("split", "default", 2, fields, ""))
	bolt.Execute(api.NewTuple("split", "default", 1, fields, "egret"))

	for _, e := range out.Emitted {
		fmt.Println(e.Stream, e.Values, "anchored to", e.Anchors[0].Value(0))
	}
	fmt.Println("acked", len(out.Acked), "failed", len(out.Failed))
	// Output:
	// default [HELLO!] anchored to hello
	// default [EGRET!] anchored to egret
	// acked 3 failed 0
}

// TestShoutBolt is the same check as a test.
func TestShoutBolt(t *testing.T) {
	out := &fakeCollector{}
	bolt := &ShoutBolt{}
	if err := bolt.Prepare(nil, out); err != nil {
		t.Fatal(err)
	}
	in := api.NewTuple("split", "default", 1, []string{"word"}, "hello")
	bolt.Execute(in)
	bolt.Execute(api.NewTuple("split", "default", 1, []string{"word"}, ""))

	want := []emission{{Stream: "default", Task: -1, Values: api.Values{"HELLO!"}, Anchors: []api.Tuple{in}}}
	if !reflect.DeepEqual(out.Emitted, want) {
		t.Errorf("emitted %+v, want %+v", out.Emitted, want)
	}
	if len(out.Acked) != 2 || len(out.Failed) != 0 || len(out.ReportedErrors) != 0 {
		t.Errorf("acked %d, failed %d, errors %v", len(out.Acked), len(out.Failed), out.ReportedErrors)
	}
}
