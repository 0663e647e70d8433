package stmgr

import (
	"context"
	"testing"

	"go.uber.org/zap"
)

// TestPeerFramesForANewTaskAreHeld: during a rescale a peer that applied
// the new plan first routes to a task the new plan adds to this
// container; its frames wait in that task's queue instead of being
// dropped. An instance's frames for an unknown task, and a task id out of
// range, are still dropped and counted.
func TestPeerFramesForANewTaskAreHeld(t *testing.T) {
	s := &StMgr{log: zap.NewNop(), set: settings{bufferMax: 1 << 20}, bp: newBackPressure(), tasks: map[int32]*taskDest{}}
	s.pool.New = func() any { return &frame{} }
	s.eo.init("", s.log)
	s.table.Store(&routes{local: make([]*taskDest, 8)}) // task 7 is not local yet
	ctx := context.Background()
	if err := s.route(ctx, s.testData(1, 42, 0), 7, 1, true); err != nil {
		t.Fatal(err)
	}
	td := s.tasks[7]
	if td == nil {
		t.Fatalf("no held queue for task 7; unroutable %d", s.c.unroutable.Load())
	}
	if got := drain(t, td); !equal(got, []string{"d1:42"}) {
		t.Errorf("task 7 holds %v, want [d1:42]", got)
	}
	if err := s.route(ctx, s.testData(1, 43, 0), 6, 1, false); err != nil {
		t.Fatal(err)
	}
	if err := s.route(ctx, s.testData(1, 44, 0), maxTaskID+1, 1, true); err != nil {
		t.Fatal(err)
	}
	if n := s.c.unroutable.Load(); n != 2 || s.tasks[6] != nil {
		t.Errorf("unroutable = %d (want 2: an instance's frame for an unknown task, a task id out of range); held task 6: %v", n, s.tasks[6] != nil)
	}
}
