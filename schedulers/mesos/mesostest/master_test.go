package mesostest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

func post(t *testing.T, m *Master, contentType, accept, streamID string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, m.URL+Path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if streamID != "" {
		req.Header.Set("Mesos-Stream-Id", streamID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func subscribeCall(id string) *scheduler.Call {
	fi := &mesos.FrameworkInfo{User: "u", Name: "test", FailoverTimeout: ptr(0.0)}
	if id != "" {
		fi.ID = &mesos.FrameworkID{Value: id}
	}
	return &scheduler.Call{Type: scheduler.Call_SUBSCRIBE, Subscribe: &scheduler.Call_Subscribe{FrameworkInfo: fi}}
}

// readRecord reads one RecordIO record.
func readRecord(t *testing.T, r *bufio.Reader) []byte {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read a record length: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("record length %q: %v", line, err)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSchedulerAPI checks the encodings, the stream and the status codes.
func TestSchedulerAPI(t *testing.T) {
	m := New(t, Options{HeartbeatInterval: 50 * time.Millisecond})

	// SUBSCRIBE in JSON, events in JSON.
	body, _ := json.Marshal(subscribeCall(""))
	resp := post(t, m, MediaJSON, MediaJSON, "", body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != MediaJSON {
		t.Fatalf("SUBSCRIBE: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	sid := resp.Header.Get("Mesos-Stream-Id")
	if sid == "" {
		t.Fatal("no Mesos-Stream-Id header")
	}
	r := bufio.NewReader(resp.Body)
	var ev scheduler.Event
	if err := json.Unmarshal(readRecord(t, r), &ev); err != nil || ev.Type != scheduler.Event_SUBSCRIBED {
		t.Fatalf("first event: %v %v", ev.Type, err)
	}
	id := ev.GetSubscribed().GetFrameworkID().GetValue()
	seen := map[scheduler.Event_Type]bool{}
	for !seen[scheduler.Event_HEARTBEAT] || !seen[scheduler.Event_OFFERS] {
		var e scheduler.Event
		if err := json.Unmarshal(readRecord(t, r), &e); err != nil {
			t.Fatal(err)
		}
		seen[e.Type] = true
	}

	revive := &scheduler.Call{Type: scheduler.Call_REVIVE, FrameworkID: &mesos.FrameworkID{Value: id}}
	pb, _ := revive.Marshal()
	for _, c := range []struct {
		name, ct, accept, sid string
		body                  []byte
		want                  int
		msg                   string
	}{
		{"protobuf call", MediaProtobuf, "", sid, pb, http.StatusAccepted, ""},
		{"no content type", "", "", sid, pb, http.StatusUnsupportedMediaType, "Content-Type"},
		{"other content type", "text/plain", "", sid, pb, http.StatusUnsupportedMediaType, "Content-Type"},
		{"garbage", MediaProtobuf, "", sid, []byte("\xff\xff"), http.StatusBadRequest, "Failed to parse"},
		{"missing stream id", MediaProtobuf, "", "", pb, http.StatusBadRequest, "Mesos-Stream-Id"},
		{"wrong stream id", MediaProtobuf, "", "nope", pb, http.StatusBadRequest, "didn't match"},
		{"unknown framework", MediaJSON, "", sid, []byte(`{"type":"REVIVE","framework_id":{"value":"x"}}`), http.StatusBadRequest, "Framework cannot be found"},
		{"no framework id", MediaJSON, "", sid, []byte(`{"type":"REVIVE"}`), http.StatusBadRequest, "framework_id"},
		{"unacceptable accept", MediaJSON, "text/html", "", body, http.StatusNotAcceptable, "Accept"},
	} {
		resp := post(t, m, c.ct, c.accept, c.sid, c.body)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != c.want || !strings.Contains(string(b), c.msg) {
			t.Errorf("%s: %s %q, want %d mentioning %q", c.name, resp.Status, b, c.want, c.msg)
		}
	}

	// The stream breaks: calls are forbidden until the framework subscribes
	// again; with failover_timeout 0 the master removes it.
	m.DropSubscription("test")
	waitRemoved := time.Now().Add(10 * time.Second)
	for !m.Removed(id) && time.Now().Before(waitRemoved) {
		time.Sleep(10 * time.Millisecond)
	}
	resp = post(t, m, MediaProtobuf, "", sid, pb)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "Framework has been removed") {
		t.Errorf("call of a removed framework: %s %q, want 403 Framework has been removed", resp.Status, b)
	}
	// Subscribing again as a removed framework: an ERROR event.
	pbs, _ := subscribeCall(id).Marshal()
	resp = post(t, m, MediaProtobuf, MediaProtobuf, "", pbs)
	var e scheduler.Event
	if err := e.Unmarshal(readRecord(t, bufio.NewReader(resp.Body))); err != nil || e.Type != scheduler.Event_ERROR || e.GetError().GetMessage() != "Framework has been removed" {
		t.Errorf("re-subscribing a removed framework: %v %v", e.Type, err)
	}
}

func TestAuthentication(t *testing.T) {
	m := New(t, Options{Principal: "p", Secret: "s"})
	body, _ := json.Marshal(subscribeCall(""))
	resp := post(t, m, MediaJSON, MediaJSON, "", body)
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("no credentials: %s, WWW-Authenticate %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
}
