package tmanager

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/memory"
)

// await reads messages of s until one of type T arrives.
func await[T proto.Message](s *fakeStmgr) T {
	s.t.Helper()
	deadline := time.Now().Add(waitMax)
	for time.Now().Before(deadline) {
		if m, ok := s.next().(T); ok {
			return m
		}
	}
	var zero T
	s.t.Fatalf("no %T from the topology manager", zero)
	return zero
}

// TestSavepointPinsItsCheckpoint: POST /savepoint starts a checkpoint at
// once (the interval is an hour), answers once every task stored its
// state, and the checkpoint stays out of the clean (keep_from) of later
// checkpoints until it is released, also by a restarted topology manager;
// a topology that is not effectively-once is refused.
func TestSavepointPinsItsCheckpoint(t *testing.T) {
	ms := memory.NewStore(memory.WithSessionTimeout(time.Second))
	admin := ms.NewSession()
	t.Cleanup(func() { _ = admin.Close() })
	e := &env{store: ms, admin: admin, st: state.New(admin)}
	topo := testTopology(2, 2)
	topo.Config = map[string]string{topology.KeyDeliveryMode: string(topology.EffectivelyOnce),
		topology.KeyCheckpointInterval: "1h", topology.KeyCheckpointsKept: "1"}
	if err := e.st.Submit(context.Background(), state.Submission{Topology: topo, Plan: twoContainers(),
		ExecutionState: &egretpb.ExecutionState{TopologyName: testName, TopologyId: testID}}); err != nil {
		t.Fatal(err)
	}
	m := e.start(t)
	stmgrs, _ := registerAll(t, m, 2, 1)
	for i, s := range stmgrs {
		r := await[*egretpb.RestoreTopologyState](s)
		s.send(&egretpb.RestoreTopologyStateResponse{Container: int32(i + 1), CheckpointId: r.GetCheckpointId(), Epoch: r.GetEpoch()})
	}
	for _, s := range stmgrs {
		await[*egretpb.StartProcessing](s)
	}
	savepoint := func(wantID int64, wantKeepFrom int64) {
		t.Helper()
		type result struct {
			code int
			body map[string]any
		}
		done := make(chan result, 1)
		go func() {
			code, body := m.do(t, http.MethodPost, "/savepoint", "application/x-www-form-urlencoded", "lease=1h")
			done <- result{code, body}
		}()
		var epoch int64
		for _, s := range stmgrs {
			sc := await[*egretpb.StartCheckpoint](s)
			if sc.GetCheckpointId() != wantID {
				t.Fatalf("savepoint started checkpoint %d, want %d", sc.GetCheckpointId(), wantID)
			}
			epoch = sc.GetEpoch()
		}
		for task := int32(1); task <= 4; task++ {
			stmgrs[0].send(&egretpb.InstanceStateStored{CheckpointId: wantID, TaskId: task, Epoch: epoch, SizeBytes: 10,
				AlignmentNanos: int64(task) * int64(time.Millisecond)})
		}
		for _, s := range stmgrs {
			cc := await[*egretpb.CheckpointComplete](s)
			if cc.GetCheckpointId() != wantID || cc.GetKeepFrom() != wantKeepFrom {
				t.Fatalf("checkpoint complete %d keep_from %d, want %d keep_from %d", cc.GetCheckpointId(), cc.GetKeepFrom(), wantID, wantKeepFrom)
			}
		}
		r := <-done
		if r.code != http.StatusOK || r.body["checkpoint"] != float64(wantID) || r.body["size_bytes"] != float64(40) {
			t.Fatalf("POST /savepoint: %d %v", r.code, r.body)
		}
	}
	savepoint(1, 1)
	// The checkpoint's alignment is its slowest task's (task 4: 4 ms).
	waitFor(t, "the checkpoint's alignment time in /stats", func() bool {
		var st statsJSON
		getJSON(t, m.url("/stats"), &st)
		return st.Containers["0"]["tmanager"].Metrics["checkpoint.last.alignment.ms"] == 4
	})
	savepoint(2, 1) // checkpoint 1 is pinned: kept although keep is 1
	if code, body := m.do(t, http.MethodPost, "/savepoint/release", "application/x-www-form-urlencoded", "checkpoint=1"); code != http.StatusOK || body["released"] != true {
		t.Fatalf("release: %d %v", code, body)
	}
	if code, body := m.do(t, http.MethodPost, "/savepoint/release", "application/x-www-form-urlencoded", "checkpoint=x"); code != http.StatusBadRequest {
		t.Fatalf("release of a bad id: %d %v", code, body)
	}
	savepoint(3, 2) // 2 is still pinned
	// A restarted topology manager keeps the pins (they are part of the
	// checkpoint state): the next checkpoint's clean still keeps 2.
	m.cancel()
	if err := m.wait(t); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	m = e.start(t)
	stmgrs, _ = registerAll(t, m, 2, 2)
	for i, s := range stmgrs {
		r := await[*egretpb.RestoreTopologyState](s)
		if r.GetCheckpointId() != 3 {
			t.Fatalf("the restarted topology manager restores checkpoint %d, want 3", r.GetCheckpointId())
		}
		s.send(&egretpb.RestoreTopologyStateResponse{Container: int32(i + 1), CheckpointId: r.GetCheckpointId(), Epoch: r.GetEpoch()})
	}
	for _, s := range stmgrs {
		await[*egretpb.StartProcessing](s)
	}
	savepoint(4, 2)
	if code, body := m.do(t, http.MethodPost, "/savepoint", "application/x-www-form-urlencoded", "lease=forever"); code != http.StatusBadRequest {
		t.Fatalf("bad lease: %d %v", code, body)
	}
}

// TestSavepointRefusedWithoutCheckpoints: an at-least-once topology has
// no checkpoint to save.
func TestSavepointRefusedWithoutCheckpoints(t *testing.T) {
	m := newEnv(t, false).start(t)
	code, body := m.do(t, http.MethodPost, "/savepoint", "", "")
	if code != http.StatusBadRequest || !containsStr(body["error"], "not effectively-once") {
		t.Fatalf("POST /savepoint on an at-least-once topology: %d %v", code, body)
	}
}

func containsStr(v any, sub string) bool {
	s, ok := v.(string)
	return ok && strings.Contains(s, sub)
}
