package tracker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/tracker/trackertest"
)

// TestHealthManagerDecisions: /topologies/healthmanager serves the
// decisions the health manager recorded for this submission, and none of
// a previous submission of the same name.
func TestHealthManagerDecisions(t *testing.T) {
	srv, store := newTracker(t)
	doc, err := trackertest.Load()
	if err != nil {
		t.Fatal(err)
	}
	s := state.New(store.NewSession())
	path := "/topologies/healthmanager"
	url := srv.URL + path + "?cluster=local&topology=wc"
	for _, tc := range []struct {
		id, want string
	}{
		{"wc-0", `"decisions":[]`},
		{"wc-1", `"decisions":[{"unix_nanos":5,"component":"count","action":"scale-up","reason":"slow","backpressure_nanos":7,"old_parallelism":2,"new_parallelism":4,"error":""}]`},
	} {
		hd := &egretpb.HealthDecisions{TopologyName: "wc", TopologyId: tc.id, Decisions: []*egretpb.HealthDecision{
			{UnixNanos: 5, Component: "count", Action: "scale-up", Reason: "slow", BackpressureNanos: 7, OldParallelism: 2, NewParallelism: 4}}}
		if err := s.SetHealthDecisions(context.Background(), "wc", hd); err != nil {
			t.Fatal(err)
		}
		code, body := get(t, url)
		if code != 200 || !strings.Contains(string(body), tc.want) {
			t.Errorf("recorded for %s: GET %s: %d %s; want %s", tc.id, path, code, body, tc.want)
		}
		if err := doc.Check(path, code, body); err != nil {
			t.Error(err)
		}
	}
}
