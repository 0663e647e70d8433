package mesostest

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"
)

// FrameworksPath is the master's read-only endpoint listing its frameworks
// (the v0 operator endpoint /master/frameworks).
const FrameworksPath = "/master/frameworks"

// FrameworksJSON is the part of /master/frameworks' answer the fake
// serves: every framework the master knows, connected or not (removed ones
// are in completed_frameworks), with the fields of Mesos' JSON model of a
// framework that a scheduler may use to find its own.
type FrameworksJSON struct {
	Frameworks          []FrameworkJSON `json:"frameworks"`
	CompletedFrameworks []FrameworkJSON `json:"completed_frameworks"`
}

// FrameworkJSON is one framework in /master/frameworks.
type FrameworkJSON struct {
	ID              string      `json:"id"`
	Name            string      `json:"name"`
	User            string      `json:"user"`
	Role            string      `json:"role,omitempty"`
	Hostname        string      `json:"hostname,omitempty"`
	Principal       string      `json:"principal,omitempty"`
	FailoverTimeout float64     `json:"failover_timeout"`
	Active          bool        `json:"active"`
	Connected       bool        `json:"connected"`
	RegisteredTime  float64     `json:"registered_time"`
	Labels          []LabelJSON `json:"labels,omitempty"`
}

// LabelJSON is a label of a framework.
type LabelJSON struct {
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
}

// serveFrameworks answers GET /master/frameworks (optionally
// ?framework_id=) as JSON; the master's credentials, when set, are
// required as for the scheduler API.
func (m *Master) serveFrameworks(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "Expecting 'GET', received '"+r.Method+"'", http.StatusMethodNotAllowed)
		return
	}
	if err := m.authenticate(r); err != nil {
		var he *httpError
		errors.As(err, &he)
		w.Header().Set("WWW-Authenticate", `Basic realm="mesos"`)
		http.Error(w, he.msg, he.code)
		return
	}
	only := r.URL.Query().Get("framework_id")
	out := FrameworksJSON{Frameworks: []FrameworkJSON{}, CompletedFrameworks: []FrameworkJSON{}}
	m.mu.Lock()
	for id, fw := range m.frameworks {
		if only != "" && id != only {
			continue
		}
		fi := fw.info
		j := FrameworkJSON{
			ID: id, Name: fi.Name, User: fi.User, Role: fi.GetRole(), Hostname: fi.GetHostname(),
			Principal: fi.GetPrincipal(), FailoverTimeout: fi.GetFailoverTimeout(),
			Active: fw.stream != nil, Connected: fw.stream != nil,
			RegisteredTime: float64(fw.registered.UnixNano()) / 1e9,
		}
		for _, l := range fi.GetLabels().GetLabels() {
			j.Labels = append(j.Labels, LabelJSON{Key: l.Key, Value: l.GetValue()})
		}
		out.Frameworks = append(out.Frameworks, j)
	}
	m.mu.Unlock()
	sort.Slice(out.Frameworks, func(i, j int) bool { return out.Frameworks[i].ID < out.Frameworks[j].ID })
	w.Header().Set("Content-Type", MediaJSON)
	_ = json.NewEncoder(w).Encode(out)
}
