package tracker_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/launcher"
	"github.com/egret-stream/egret/tracker"
)

// TestActionsNeedTheOperatorToken: without a token the tracker is
// read-only (403 on every action, GET /actions says disabled); with one,
// a request without it or with another is 401, and bad input is 400
// before anything is started (a kill not confirmed by the topology's
// name, an unknown component, a parallelism out of range, a bad level).
func TestActionsNeedTheOperatorToken(t *testing.T) {
	ro, store := newTracker(t)
	q := "?cluster=local&topology=wc"
	post := func(base, path, token, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := new(strings.Builder)
		_, _ = io.Copy(b, resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := post(ro.URL, "/topologies/actions/kill"+q, "anything", `{"confirm":"wc"}`); code != 403 || !strings.Contains(body, "read-only") {
		t.Errorf("read-only kill: %d %s", code, body)
	}
	if code, body := get(t, ro.URL+"/actions"); code != 200 || !strings.Contains(string(body), `"enabled":false`) {
		t.Errorf("read-only /actions: %d %s", code, body)
	}

	c, err := conf.Load(conf.LoadOptions{Cluster: "local", ConfigPath: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := tracker.New(tracker.Options{Clusters: []*conf.Cluster{c}, Backends: backends{store}, OperatorToken: "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	srv := httptest.NewServer(tr.Handler())
	t.Cleanup(srv.Close)
	const tok = "0123456789abcdef"
	for _, tc := range []struct {
		path, token, body string
		status            int
		contains          string
	}{
		{"/topologies/actions/kill" + q, "", `{"confirm":"wc"}`, 401, "operator token"},
		{"/topologies/actions/kill" + q, "0123456789abcdeX", `{"confirm":"wc"}`, 401, "operator token"},
		{"/topologies/actions/kill" + q, tok, `{}`, 400, `must be confirmed: send {\"confirm\": \"wc\"}`},
		{"/topologies/actions/kill" + q, tok, `{"confirm":"wx"}`, 400, "must be confirmed"},
		{"/topologies/actions/kill?cluster=local&topology=nope", tok, `{"confirm":"nope"}`, 404, "not found"},
		{"/topologies/actions/rescale" + q, tok, `{"component":"nope","parallelism":2}`, 400, `no component \"nope\"`},
		{"/topologies/actions/rescale" + q, tok, `{"component":"count","parallelism":0}`, 400, "parallelism 0 must be"},
		{"/topologies/actions/rescale" + q, tok, `{"component":"count","parallelism":2}`, 400, "already runs 2"},
		{"/topologies/actions/loglevel" + q, tok, `{"level":"loud"}`, 400, "loud"},
		{"/topologies/actions/loglevel" + q, tok, `{"level":"debug","duration":"48h"}`, 400, "at most"},
		{"/topologies/actions/loglevel" + q, tok, `{"level":"debug","component":"nope"}`, 400, `no component \"nope\"`},
		{"/topologies/actions/deactivate" + q, tok, `{"bogus":1}`, 400, "unknown field"},
		{"/topologies/actions/deactivate?cluster=local", tok, `{}`, 400, "topology is required"},
		{"/topologies/actions/savepoint" + q, tok, `{}`, 404, "takes no savepoints"},
	} {
		code, body := post(srv.URL, tc.path, tc.token, tc.body)
		if code != tc.status || !strings.Contains(body, tc.contains) {
			t.Errorf("POST %s %s: %d %s; want %d with %q", tc.path, tc.body, code, strings.TrimSpace(body), tc.status, tc.contains)
		}
	}
	// With savepoints offered, an at-least-once topology has none to take.
	sp, err := tracker.New(tracker.Options{Clusters: []*conf.Cluster{c}, Backends: backends{store}, OperatorToken: tok,
		Savepoint: func(context.Context, *launcher.Launcher, string) (string, error) { return "", errors.New("not called") }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sp.Close)
	spSrv := httptest.NewServer(sp.Handler())
	t.Cleanup(spSrv.Close)
	if code, body := post(spSrv.URL, "/topologies/actions/savepoint"+q, tok, `{}`); code != 400 || !strings.Contains(body, "only an effectively-once topology") {
		t.Errorf("POST savepoint of an at-least-once topology: %d %s", code, body)
	}
	// Nothing was started by a refused request.
	if code, body := get(t, srv.URL+"/actions"); code != 200 || !strings.Contains(string(body), `"enabled":true`) || !strings.Contains(string(body), `"actions":[]`) {
		t.Errorf("/actions after refused requests: %d %s", code, body)
	}
	// A kill goes through a topology whose definition is corrupt (kill is
	// the way out of one, as egret kill): the action starts, and fails
	// here only because this test has no scheduler.
	sm := store.NewSession()
	if _, err := sm.Set(context.Background(), state.TopologiesDir+"/wc", []byte("garbage"), -1); err != nil {
		t.Fatal(err)
	}
	if code, body := post(srv.URL, "/topologies/actions/rescale"+q, tok, `{"component":"count","parallelism":3}`); code != 502 {
		t.Errorf("rescale of a corrupt topology: %d %s", code, body)
	}
	if code, body := post(srv.URL, "/topologies/actions/kill"+q, tok, `{"confirm":"wc","now":true}`); code != 202 || !strings.Contains(body, `"state":"running"`) {
		t.Fatalf("kill of a corrupt topology: %d %s", code, body)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, body := get(t, srv.URL+"/actions")
		if strings.Contains(string(body), `"state":"failed"`) && strings.Contains(string(body), "scheduler") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kill did not fail for want of a scheduler: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// GET on an action is a 405 naming POST.
	if code, body := get(t, srv.URL+"/topologies/actions/kill"+q); code != 405 || !strings.Contains(string(body), "POST") {
		t.Errorf("GET action: %d %s", code, body)
	}
}
