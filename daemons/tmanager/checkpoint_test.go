package tmanager

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

// TestCheckpointStateRead: an effectively-once topology manager resumes
// from the recorded checkpoint state, and refuses to start on a corrupt
// one instead of rolling every task back to empty states.
func TestCheckpointStateRead(t *testing.T) {
	e := newEnv(t, false)
	s, err := Config{TopologyName: testName, TopologyID: testID, Host: "h", StateManager: e.admin}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	in, err := readInitial(t.Context(), s, e.st, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	in.topo.Config = map[string]string{topology.KeyDeliveryMode: string(topology.EffectivelyOnce)}
	ctx := context.Background()
	if err := e.st.SetCheckpointState(ctx, testName, &egretpb.CheckpointState{TopologyName: testName, TopologyId: testID, LastCompleteId: 7, Epoch: 3}); err != nil {
		t.Fatal(err)
	}
	m, err := newManager(t.Context(), s, e.st, newMetricsStore(s.Limits), in, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if !m.ckpt.on || m.ckpt.lastComplete != 7 || m.ckpt.epoch != 3 || m.ckpt.nextID != 8 {
		t.Fatalf("resumed on=%v last=%d epoch=%d next=%d", m.ckpt.on, m.ckpt.lastComplete, m.ckpt.epoch, m.ckpt.nextID)
	}
	if _, err := e.admin.Set(ctx, state.Path(state.CheckpointsDir, testName), []byte("garbage \xff"), -1); err != nil {
		t.Fatal(err)
	}
	_, err = newManager(t.Context(), s, e.st, newMetricsStore(s.Limits), in, zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), state.CheckpointsDir) {
		t.Fatalf("newManager over a corrupt checkpoint state: %v", err)
	}
}

// TestRescaledComponents: the tasks of a checkpoint are recorded in index
// order, survive the checkpoint state's encoding, and a restore names the
// components whose tasks changed since, with their tasks then.
func TestRescaledComponents(t *testing.T) {
	p := &plan.PackingPlan{Containers: []plan.Container{
		{ID: 1, Instances: []plan.Instance{{Component: "count", TaskID: 9, Index: 1}, {Component: "spout", TaskID: 1, Index: 0}}},
		{ID: 2, Instances: []plan.Instance{{Component: "count", TaskID: 3, Index: 0}, {Component: "count", TaskID: 10, Index: 2}}},
	}}
	then := tasksOf(p.Layout())
	if want := map[string][]int32{"count": {3, 9, 10}, "spout": {1}}; !reflect.DeepEqual(then, want) {
		t.Fatalf("tasksOf = %v, want %v", then, want)
	}
	if got := tasksFromProto(tasksToProto(then)); !reflect.DeepEqual(got, then) {
		t.Fatalf("round trip = %v, want %v", got, then)
	}
	now := map[string][]int32{"count": {3, 9}, "spout": {1}, "new": {11}}
	if got, want := rescaled(then, now), map[string][]int32{"count": {3, 9, 10}}; !reflect.DeepEqual(got, want) {
		t.Errorf("rescaled = %v, want %v", got, want)
	}
	if got := rescaled(nil, now); len(got) != 0 {
		t.Errorf("rescaled without recorded tasks = %v, want none (each task reads its own checkpoint)", got)
	}
}
