package table

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
)

// ckBolt is a bolt that is also api.Stateful (GroupBolt, JoinBolt).
type ckBolt interface {
	api.Bolt
	api.Stateful
}

// checkRollback feeds in to a bolt made by mk, checkpointing after
// event ckAt; a task that ran some events past the checkpoint dies, and a
// new task restored from the checkpoint gets the rest of the input again.
// What it emits must be what an uninterrupted task emits.
func checkRollback(t *testing.T, mk func() ckBolt, in []api.Tuple, ckAt int) {
	t.Helper()
	ref, refStates := mk(), api.NewStates()
	out := start(t, ref, refStates)
	feed(ref, out, in[:ckAt])
	if err := ref.PreSave(1); err != nil {
		t.Fatal(err)
	}
	blob, err := refStates.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := feed(ref, out, in[ckAt:])
	lost := mk()
	feed(lost, start(t, lost, restored(t, blob)), in[ckAt:min(len(in), ckAt+7)])
	b := mk()
	if got := feed(b, start(t, b, restored(t, blob)), in[ckAt:]); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored from the checkpoint after event %d it emitted\n%v\nuninterrupted\n%v", ckAt, got, want)
	}
}

func start(t *testing.T, b ckBolt, states *api.States) *collector {
	t.Helper()
	out := &collector{}
	if err := b.Prepare(&fakeContext{tasks: map[string][]int{"src": {1, 2}}}, out); err != nil {
		t.Fatal(err)
	}
	if err := b.InitState(states); err != nil {
		t.Fatal(err)
	}
	return out
}

func restored(t *testing.T, blob []byte) *api.States {
	t.Helper()
	s, err := api.UnmarshalStates(blob)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// feed executes in and returns what the bolt emitted meanwhile, sorted.
func feed(b api.Bolt, out *collector, in []api.Tuple) []string {
	n := len(out.rows)
	for _, tp := range in {
		b.Execute(tp)
	}
	var rows []string
	for _, r := range out.rows[n:] {
		rows = append(rows, fmt.Sprint(r))
	}
	sort.Strings(rows)
	return rows
}

func TestTableBoltsRestoreFromACheckpoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 36))
	var groupIn, joinIn []api.Tuple
	for i := 0; i < 300; i++ {
		groupIn = append(groupIn, tup("default", 1+rng.IntN(2), fmt.Sprint("g", rng.IntN(5)), fmt.Sprint("v", rng.IntN(20))))
		side := []string{"l", "r"}[rng.IntN(2)]
		if side == "l" {
			joinIn = append(joinIn, tup("l", 1, int64(rng.IntN(6)), []string{fmt.Sprint(i)}))
		} else {
			joinIn = append(joinIn, tup("r", 1, int64(rng.IntN(6)), int64(i)))
		}
	}
	groupIn = append(groupIn, tup("end", 1, int64(0)), tup("end", 2, int64(0)))
	group := func() ckBolt {
		b, err := NewGroupBolt(GroupSpec[string, string, Distinct[string], int64]{
			Key:          func(t api.Tuple) string { return t.String(0) },
			Value:        func(t api.Tuple) string { return t.String(1) },
			Aggregate:    DistinctCount[string](),
			Output:       func(k string, n int64, emit func(api.Values)) { emit(api.Values{k, n}) },
			OutputFields: []string{"k", "n"},
			Flush:        time.Hour,
			End:          End{Component: "src", Stream: "end"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	join := func() ckBolt {
		b, err := NewJoinBolt(JoinSpec[int64, []string, int64]{
			IsLeft:       func(t api.Tuple) bool { return t.SourceStream() == "l" },
			LeftKey:      func(t api.Tuple) int64 { return t.Int64(0) },
			RightKey:     func(t api.Tuple) int64 { return t.Int64(0) },
			Left:         func(t api.Tuple) []string { return t.Value(1).([]string) },
			Right:        func(t api.Tuple) int64 { return t.Int64(1) },
			Output:       func(l *[]string, r *int64) api.Values { return api.Values{(*l)[0], *r} },
			OutputFields: []string{"l", "r"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, at := range []int{0, 1, 57, 150, 299} {
		checkRollback(t, group, groupIn, at)
		checkRollback(t, join, joinIn, at)
	}
}
