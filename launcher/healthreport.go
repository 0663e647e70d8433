package launcher

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
)

// HealthReport is what a topology's health manager (topology.healthmgr.
// enabled) did: its counters and its latest decisions, oldest first.
type HealthReport struct {
	// Metrics are the health manager's healthmgr.* metrics.
	Metrics   map[string]float64 `json:"metrics,omitempty"`
	Decisions []HealthDecision   `json:"decisions"`
}

// HealthDecision is one decision of the health manager.
type HealthDecision struct {
	Time      time.Time `json:"time"`
	Component string    `json:"component"`
	// Action is scale-up, at-bound, refused or failed.
	Action string `json:"action"`
	Reason string `json:"reason"`
	// BackPressureSeconds is how long the component had caused back
	// pressure.
	BackPressureSeconds float64 `json:"backpressure_seconds"`
	OldParallelism      int     `json:"old_parallelism"`
	NewParallelism      int     `json:"new_parallelism"`
	Error               string  `json:"error,omitempty"`
}

// healthReport reads the health manager's decisions of the topology with
// id from the state manager, and takes its metrics from the topology
// manager's container 0 sources. It returns nil for a topology whose
// health manager never reported nor decided.
func healthReport(ctx context.Context, store *state.Store, name, id string, metrics map[string]float64) (*HealthReport, error) {
	var out *HealthReport
	for k, v := range metrics {
		if strings.HasPrefix(k, "healthmgr.") {
			if out == nil {
				out = &HealthReport{Metrics: map[string]float64{}}
			}
			out.Metrics[k] = v
		}
	}
	hd, err := store.HealthDecisions(ctx, name)
	if errors.Is(err, spi.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	if id != "" && hd.GetTopologyId() != id {
		return out, nil // a previous submission's
	}
	if out == nil {
		out = &HealthReport{}
	}
	for _, d := range hd.GetDecisions() {
		out.Decisions = append(out.Decisions, HealthDecision{
			Time: time.Unix(0, d.GetUnixNanos()).UTC(), Component: d.GetComponent(), Action: d.GetAction(), Reason: d.GetReason(),
			BackPressureSeconds: time.Duration(d.GetBackpressureNanos()).Seconds(),
			OldParallelism:      int(d.GetOldParallelism()), NewParallelism: int(d.GetNewParallelism()), Error: d.GetError(),
		})
	}
	return out, nil
}
