package tmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Bounds of the HTTP API.
const (
	maxBodyBytes         = 1 << 20
	maxRuntimeConfigKeys = 1024
	maxKeysPerRequest    = 256
	maxKeyLen            = 256
	maxValueLen          = 4096
	// topologyIDParam, when given, must match the topology id: it guards
	// against acting on another submission of the same name.
	topologyIDParam = "topology_id"
)

// endpoints maps each path to its method (for 405 answers).
var endpoints = map[string]string{
	"/activate": "POST", "/deactivate": "POST", "/runtime-config": "POST",
	"/savepoint": "POST", "/savepoint/release": "POST",
	"/pplan": "GET", "/stats": "GET", "/exceptions": "GET", "/healthz": "GET",
}

type api struct {
	mgr     *manager
	metrics *metricsStore
	log     *zap.Logger
	maxExc  int
}

func (a *api) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /activate", func(w http.ResponseWriter, r *http.Request) {
		a.setState(w, r, egretpb.TopologyState_TOPOLOGY_STATE_RUNNING)
	})
	mux.HandleFunc("POST /deactivate", func(w http.ResponseWriter, r *http.Request) {
		a.setState(w, r, egretpb.TopologyState_TOPOLOGY_STATE_PAUSED)
	})
	mux.HandleFunc("POST /runtime-config", a.runtimeConfig)
	mux.HandleFunc("POST /savepoint", a.savepoint)
	mux.HandleFunc("POST /savepoint/release", a.releaseSavepoint)
	mux.HandleFunc("GET /pplan", a.pplan)
	mux.HandleFunc("GET /stats", a.stats)
	mux.HandleFunc("GET /exceptions", a.exceptions)
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if method, ok := endpoints[r.URL.Path]; ok {
			w.Header().Set("Allow", method)
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s takes %s, not %s", r.URL.Path, method, r.Method))
			return
		}
		writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s; the topology manager serves POST /activate, POST /deactivate, POST /runtime-config, POST /savepoint, POST /savepoint/release, GET /pplan, GET /stats, GET /exceptions, GET /healthz", r.URL.Path))
	})
	return mux
}

// checkTopologyID rejects a request naming another topology id.
func (a *api) checkTopologyID(w http.ResponseWriter, r *http.Request) bool {
	if id := r.URL.Query().Get(topologyIDParam); id != "" && id != a.mgr.id {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s %q does not match this topology manager's %q", topologyIDParam, id, a.mgr.id))
		return false
	}
	return true
}

type stateResponse struct {
	Topology string `json:"topology"`
	State    string `json:"state"`
	Version  uint64 `json:"version"`
	Changed  bool   `json:"changed"`
}

func (a *api) setState(w http.ResponseWriter, r *http.Request, st egretpb.TopologyState) {
	if !a.checkTopologyID(w, r) {
		return
	}
	v, changed, err := a.mgr.setState(st)
	if err != nil {
		writeManagerError(w, err)
		return
	}
	a.log.Info("topology state request", zap.String("state", stateName(st)), zap.Bool("changed", changed), zap.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusOK, stateResponse{Topology: a.mgr.name, State: stateName(st), Version: v, Changed: changed})
}

type runtimeConfigResponse struct {
	Version       uint64            `json:"version"`
	Changed       bool              `json:"changed"`
	RuntimeConfig map[string]string `json:"runtime_config"`
}

func (a *api) runtimeConfig(w http.ResponseWriter, r *http.Request) {
	if !a.checkTopologyID(w, r) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	kv, err := parseRuntimeConfig(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	v, cfg, changed, err := a.mgr.updateRuntimeConfig(kv)
	if err != nil {
		writeManagerError(w, err)
		return
	}
	a.log.Info("runtime config request", zap.Int("keys", len(kv)), zap.Bool("changed", changed), zap.String("remote", r.RemoteAddr))
	writeJSON(w, http.StatusOK, runtimeConfigResponse{Version: v, Changed: changed, RuntimeConfig: cfg})
}

// parseRuntimeConfig reads k=v settings from a JSON object body
// (Content-Type application/json) or from form values (URL-encoded body or
// query string; the topology_id parameter excepted).
func parseRuntimeConfig(r *http.Request) (map[string]string, error) {
	kv := map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return nil, fmt.Errorf("body is not a JSON object of settings (for example {\"key\": \"value\"}): %v", err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, errors.New("body has data after the JSON object")
		}
		for k, v := range obj {
			switch x := v.(type) {
			case string:
				kv[k] = x
			case json.Number:
				kv[k] = x.String()
			case bool:
				kv[k] = strconv.FormatBool(x)
			case nil:
				kv[k] = ""
			default:
				return nil, fmt.Errorf("setting %q: value must be a string, number, boolean or null, not %T", k, v)
			}
		}
	} else {
		if err := r.ParseForm(); err != nil {
			return nil, fmt.Errorf("cannot parse form values: %v", err)
		}
		for k, vs := range r.Form {
			if k == topologyIDParam {
				continue
			}
			if len(vs) != 1 {
				return nil, fmt.Errorf("setting %q is given %d times", k, len(vs))
			}
			kv[k] = vs[0]
		}
	}
	if len(kv) == 0 {
		return nil, errors.New("no settings given: send key=value form values or a JSON object (an empty value deletes a key)")
	}
	if len(kv) > maxKeysPerRequest {
		return nil, fmt.Errorf("%d settings in one request, limit %d", len(kv), maxKeysPerRequest)
	}
	for k, v := range kv {
		if err := checkSetting(k, v); err != nil {
			return nil, err
		}
	}
	if err := topology.CheckRuntimeConfig(kv); err != nil {
		return nil, err
	}
	return kv, nil
}

func checkSetting(k, v string) error {
	if k == "" || len(k) > maxKeyLen || !utf8.ValidString(k) {
		return fmt.Errorf("setting key %.40q must be 1..%d bytes of UTF-8", k, maxKeyLen)
	}
	for _, c := range k {
		if unicode.IsSpace(c) || unicode.IsControl(c) || c == '=' {
			return fmt.Errorf("setting key %q must not contain spaces, control characters or '='", k)
		}
	}
	if len(v) > maxValueLen || !utf8.ValidString(v) {
		return fmt.Errorf("value of setting %q must be at most %d bytes of UTF-8", k, maxValueLen)
	}
	if strings.ContainsFunc(v, func(c rune) bool { return unicode.IsControl(c) && c != '\t' }) {
		return fmt.Errorf("value of setting %q must not contain control characters", k)
	}
	return nil
}

func (a *api) pplan(w http.ResponseWriter, _ *http.Request) {
	snap := a.mgr.snapshot()
	if snap.pplan == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no physical plan yet: stream managers registered %v of containers %v", snap.registered, snap.expected))
		return
	}
	b, err := protojson.MarshalOptions{Multiline: true, UseProtoNames: true}.Marshal(snap.pplan)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encode physical plan: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Egret-Pplan-Complete", strconv.FormatBool(snap.complete))
	_, _ = w.Write(append(b, '\n'))
}

func (a *api) stats(w http.ResponseWriter, _ *http.Request) {
	snap := a.mgr.snapshot()
	var comps []string
	for _, c := range snap.topo.Components {
		comps = append(comps, c.Name)
	}
	writeJSON(w, http.StatusOK, a.metrics.stats(a.mgr.name, a.mgr.id, comps))
}

func (a *api) exceptions(w http.ResponseWriter, r *http.Request) {
	limit := a.maxExc
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit %q must be a positive integer", s))
			return
		}
		limit = min(n, a.maxExc)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"topology":   a.mgr.name,
		"exceptions": a.metrics.exceptionsOf(r.URL.Query().Get("component"), limit),
	})
}

type healthJSON struct {
	Status     string `json:"status"`
	Topology   string `json:"topology"`
	TopologyID string `json:"topology_id"`
	State      string `json:"state"`
	Version    uint64 `json:"version"`
	// Complete: every container of the packing plan has a registered
	// stream manager and the last plan includes them all.
	Complete   bool  `json:"complete"`
	Registered []int `json:"registered"`
	Expected   []int `json:"expected"`
}

func (a *api) healthz(w http.ResponseWriter, _ *http.Request) {
	snap := a.mgr.snapshot()
	writeJSON(w, http.StatusOK, healthJSON{
		Status: "ok", Topology: a.mgr.name, TopologyID: a.mgr.id, State: stateName(snap.state), Version: snap.version,
		Complete: snap.complete, Registered: nonNil(snap.registered), Expected: nonNil(snap.expected),
	})
}

func nonNil(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

func writeManagerError(w http.ResponseWriter, err error) {
	if errors.Is(err, errConflict) {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	writeError(w, http.StatusBadRequest, err.Error())
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(map[string]string{"error": "encode response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
