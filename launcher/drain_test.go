package launcher

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/proto/egretpb"
)

// statsServer serves /stats answers built by next, one per request.
func statsServer(t *testing.T, next func(call int) string) *egretpb.TManagerLocation {
	var mu sync.Mutex
	call := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		call++
		n := call
		mu.Unlock()
		fmt.Fprint(w, next(n))
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return &egretpb.TManagerLocation{Host: host, HttpPort: int32(p)}
}

func stats(ts int64, pending, queued, received float64) string {
	return fmt.Sprintf(`{"components":{"spout":{"tasks":{"1":{"unix_nanos":%d,"metrics":{"instance.pending.roots":%v,"instance.emitted":100}}}},
"bolt":{"tasks":{"2":{"unix_nanos":%d,"metrics":{"gateway.in.queue.bytes":%v,"gateway.tuples.in":%v,"instance.executed":0}}}}},
"containers":{"1":{"stmgr":{"unix_nanos":%d,"metrics":{"stmgr.queue.bytes":0}}}}}`, ts, pending, ts, queued, received, ts)
}

func TestWaitDrained(t *testing.T) {
	l := &Launcher{Log: zaptest.NewLogger(t)}
	since := time.Now()
	base := since.UnixNano()
	for _, tc := range []struct {
		name   string
		answer func(call int) string
		want   bool
	}{
		// Reports from before the deactivation never count.
		{"stale", func(int) string { return stats(base-1, 0, 0, 5) }, false},
		{"pending roots", func(c int) string { return stats(base+int64(c), 3, 0, 5) }, false},
		{"queued bytes", func(c int) string { return stats(base+int64(c), 0, 512, 5) }, false},
		// Quiet but still executing: each round moves.
		{"moving", func(c int) string { return stats(base+int64(c), 0, 0, float64(c)) }, false},
		// Quiet, and a later round of reports saw the same counts.
		{"drained", func(c int) string { return stats(base+int64(c), 0, 0, 5) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := statsServer(t, tc.answer)
			d := l.waitDrained(context.Background(), loc, since, 2*time.Second)
			if d.ok != tc.want {
				t.Fatalf("drained = %v (%+v), want %v", d.ok, d, tc.want)
			}
		})
	}
}
