package mesos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// A SUBSCRIBE without a framework id registers a new framework, and the
// master tells the framework its id only in the stream's first event. A
// connection that breaks between the two leaves a framework the scheduler
// cannot name; the master keeps it, disconnected, for its failover timeout
// (a week by default) with the offers and tasks it gets. Subscribing
// without an id again would register a second framework for the same
// topology. So before every subscription without an id the framework asks
// the master (GET /master/frameworks) for a framework carrying its
// topology id label, and fails over to it when there is one.

// frameworksPath is the master's endpoint listing its frameworks.
const frameworksPath = "/master/frameworks"

// errUnauthorized: the master refused the credentials.
var errUnauthorized = errors.New("401 Unauthorized")

// masterFrameworks is the part of /master/frameworks the lookup reads.
type masterFrameworks struct {
	Frameworks []struct {
		ID             string  `json:"id"`
		Name           string  `json:"name"`
		RegisteredTime float64 `json:"registered_time"`
		Labels         []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"labels"`
	} `json:"frameworks"`
}

// findOwn returns the id of the master's framework registered for this
// submission of the topology (its topology id label), or "" when there is
// none. With more than one (which only a scheduler without this lookup
// could leave) it takes the earliest registered.
func (f *framework) findOwn(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.s.master+frameworksPath, nil)
	if err != nil {
		return "", err
	}
	if f.s.principal != "" && f.s.secret != "" {
		req.SetBasicAuth(f.s.principal, f.s.secret)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("list the master's frameworks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return "", errUnauthorized
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("list the master's frameworks: GET %s: %s", frameworksPath, resp.Status)
	}
	var mf masterFrameworks
	if err := json.NewDecoder(resp.Body).Decode(&mf); err != nil {
		return "", fmt.Errorf("list the master's frameworks: decode %s: %w", frameworksPath, err)
	}
	id, at := "", 0.0
	for _, fw := range mf.Frameworks {
		if fw.Name != FrameworkName(f.job.Topology) {
			continue
		}
		for _, l := range fw.Labels {
			if l.Key == LabelTopologyID && l.Value == f.job.TopologyID && (id == "" || fw.RegisteredTime < at) {
				id, at = fw.ID, fw.RegisteredTime
			}
		}
	}
	return id, nil
}

// subscribeOwn subscribes with the framework id when it has one; without
// one it first fails over to the framework an earlier subscription may
// have registered (findOwn). A failed lookup is retried like a failed
// subscription: subscribing blind could leave two frameworks.
func (f *framework) subscribeOwn(ctx context.Context) {
	if f.id == "" {
		id, err := f.findOwn(ctx)
		switch {
		case errors.Is(err, errUnauthorized):
			f.fatal = f.unauthorized()
			return
		case err != nil:
			f.lastErr = err
			f.log.Warn("could not ask the Mesos master for this topology's framework; retrying", zap.String("master", f.s.master), zap.Error(err), zap.Duration("after", f.retryDelay))
			f.scheduleRetry()
			return
		case id != "":
			f.log.Warn("the master has a framework of this topology that an earlier subscription registered without learning its id; failing over to it", zap.String("framework_id", id))
			f.setID(id)
		}
	}
	f.subscribe(ctx)
}
