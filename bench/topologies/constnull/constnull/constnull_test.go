package constnull

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/daemons/instance/inproc"
)

func TestBuilderOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       Options
		par     map[string]int
		wantErr string
	}{
		{"defaults", Options{}, map[string]int{SpoutName: 1, BoltName: 1}, ""},
		{"parallelism", Options{Containers: 3, Spouts: 2, Bolts: 4}, map[string]int{SpoutName: 2, BoltName: 4}, ""},
		{"negative", Options{Bolts: -1}, nil, "--bolts must be at least 1"},
		{"acking", Options{Acking: true, MaxPending: 100}, map[string]int{SpoutName: 1, BoltName: 1}, ""},
		{"negative max pending", Options{Acking: true, MaxPending: -1}, nil, "--max-pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Builder(tc.o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			topo, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range topo.Logical.Components {
				if c.Parallelism != tc.par[c.Name] {
					t.Errorf("%s parallelism %d, want %d", c.Name, c.Parallelism, tc.par[c.Name])
				}
			}
		})
	}
}

// TestEveryTupleReachesTheBolt runs the topology in this process until the
// null bolts have executed a few thousand tuples and checks nothing was
// dropped or failed.
func TestEveryTupleReachesTheBolt(t *testing.T) {
	for _, acking := range []bool{false, true} {
		t.Run(map[bool]string{false: "at-most-once", true: "at-least-once"}[acking], func(t *testing.T) { runLocal(t, acking) })
	}
}

func runLocal(t *testing.T, acking bool) {
	b, err := Builder(Options{Spouts: 1, Bolts: 2, Acking: acking, MaxPending: 100})
	if err != nil {
		t.Fatal(err)
	}
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := inproc.New(topo, inproc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *inproc.Summary, 1)
	go func() {
		s, err := r.Run(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var executed int64
		for _, m := range r.Metrics() {
			executed += m.Executed.Load()
		}
		if executed >= 5000 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("only %d tuples executed after 30s", executed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	s := <-done
	if s == nil {
		t.Fatal("no summary")
	}
	spout, bolt := s.Component(SpoutName), s.Component(BoltName)
	if spout.Emitted == 0 || bolt.Executed != spout.Emitted || bolt.Errors != 0 || bolt.Dropped != 0 || spout.Dropped != 0 {
		t.Errorf("spout emitted %d, bolt executed %d (errors %d, dropped %d/%d)", spout.Emitted, bolt.Executed, bolt.Errors, spout.Dropped, bolt.Dropped)
	}
	if bolt.Emitted != 0 {
		t.Errorf("the null bolt emitted %d tuples", bolt.Emitted)
	}
	if acking && (spout.Acked == 0 || spout.Failed != 0 || spout.TimedOut != 0) {
		t.Errorf("at-least-once: acked %d, failed %d, timed out %d", spout.Acked, spout.Failed, spout.TimedOut)
	}
	if !acking && spout.Acked != 0 {
		t.Errorf("at-most-once: %d tuples acked", spout.Acked)
	}
}
