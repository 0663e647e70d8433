package e2e

// Garbage on every listening port of a running topology: each daemon must
// log an error and close that connection, never crash, and the topology
// must keep flowing.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// closeTimeout bounds how long a daemon may take to close a connection
// that sent garbage.
const closeTimeout = 30 * time.Second

// garbage is one kind of bad input.
type garbage struct {
	name string
	data []byte
}

// appendU32 appends n big-endian (the byte order of the wire format).
func appendU32(b []byte, n uint32) []byte {
	return append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// frame returns body with the frame header that announces its length.
func frame(body ...byte) []byte {
	return append(appendU32(nil, uint32(len(body))), body...)
}

// framedGarbage is what is sent to ports that speak the framed protocol;
// expect is the control frame the port expects first. Every kind gives the
// reader a complete decision: a frame that is whole, or a header it must
// refuse.
func framedGarbage(expect wire.FrameType) []garbage {
	rng := rand.New(rand.NewPCG(7, 11))
	random := make([]byte, 1024)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	huge := append([]byte{0xff, 0xff, 0xff, 0xff, byte(expect)}, bytes.Repeat([]byte("x"), 64)...)
	corrupt := append([]byte{byte(expect)}, bytes.Repeat([]byte{0xff}, 16)...) // an endless varint
	data := appendU32([]byte{byte(wire.FrameData)}, 1)                         // to task 1
	data = appendU32(data, 1)                                                  // one tuple, no record
	return []garbage{
		{"random bytes", frame(random...)},
		{"huge length prefix", huge},
		{"empty frame", frame()},
		{"unknown frame type", frame(0xee, 'j', 'u', 'n', 'k')},
		{"corrupt protobuf", frame(corrupt...)},
		{"data frame first", frame(data...)},
		{"HTTP request", []byte("GET /stats HTTP/1.1\r\nHost: egret\r\n\r\n")},
	}
}

// httpGarbage is what is sent to HTTP ports. Each ends its line so that
// the server has a whole (bad) request line to refuse.
func httpGarbage(t *testing.T) []garbage {
	rng := rand.New(rand.NewPCG(13, 17))
	random := make([]byte, 1024)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	hello, err := wire.AppendMessage(nil, &egretpb.StMgrHello{TopologyId: "garbage", Container: 1})
	if err != nil {
		t.Fatal(err)
	}
	end := []byte("\r\n\r\n")
	return []garbage{
		{"random bytes", append(random, end...)},
		{"huge length prefix", append([]byte{0xff, 0xff, 0xff, 0xff, 0x20, 'x', 'x', 'x'}, end...)},
		{"framed message", append(hello, end...)},
	}
}

// target is one listening port of a daemon.
type target struct {
	name    string
	network string // "tcp" or "unix"
	addr    string
	http    bool
	expect  wire.FrameType // first control frame of a framed port
	proc    proc           // the daemon
	pidOf   func() int     // the daemon's pid as recorded now (executor's pids.json, scheduler.json)
	log     string         // the daemon's log file
}

// sendGarbage sends data on a new connection and reads until the peer
// closes it. It returns what the peer answered, the local address of the
// connection, and an error if the peer did not close it in time.
func sendGarbage(network, addr string, data []byte) (reply []byte, local string, err error) {
	conn, err := net.DialTimeout(network, addr, closeTimeout)
	if err != nil {
		return nil, "", fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	local = conn.LocalAddr().String()
	_ = conn.SetDeadline(time.Now().Add(closeTimeout))
	// A daemon that closes at once may make the write fail: that is fine.
	_, _ = conn.Write(data)
	reply, err = io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return reply, local, fmt.Errorf("the connection is still open %s after the garbage (read %d bytes)", closeTimeout, len(reply))
	}
	// EOF (ReadAll's nil) or a reset: closed.
	return reply, local, nil
}

// logSize returns the size of a log file (0 if it does not exist yet).
func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// errorLines counts the error lines of a log excerpt (JSON or console
// encoded).
func errorLines(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, `"level":"error"`) || strings.Contains(line, "\tERROR\t") {
			n++
		}
	}
	return n
}

// logSince returns what path gained after offset.
func logSince(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < offset {
		return ""
	}
	return string(b[offset:])
}

// socketFlag returns the value of --socket on a process's command line.
func socketFlag(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	args := strings.Split(string(b), "\x00")
	for i, a := range args {
		if a == "--socket" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// targets lists every listening port of the topology's daemons.
func (w *wordCount) targets() []target {
	t := w.t
	ctx := context.Background()
	wd := w.c.workDir(w.name)
	var out []target
	daemon := func(container int, name string) (proc, func() int, string) {
		p, ok := w.procs(container)[name]
		if !ok {
			t.Fatalf("container %d runs no %s", container, name)
		}
		pidOf := func() int { return w.c.pids(w.name, container)[name] }
		return p, pidOf, filepath.Join(wd, fmt.Sprintf("container-%d", container), "logs", name+".log")
	}

	loc, err := w.store.TManagerLocation(ctx, w.name)
	if err != nil {
		t.Fatal(err)
	}
	tm, tmPid, tmLog := daemon(0, "tmanager")
	out = append(out,
		target{name: "tmanager server port", network: "tcp", addr: net.JoinHostPort(loc.GetHost(), strconv.Itoa(int(loc.GetServerPort()))),
			expect: wire.FrameStMgrRegisterRequest, proc: tm, pidOf: tmPid, log: tmLog},
		target{name: "tmanager http port", network: "tcp", addr: net.JoinHostPort(loc.GetHost(), strconv.Itoa(int(loc.GetHttpPort()))),
			http: true, proc: tm, pidOf: tmPid, log: tmLog})

	pp := w.pplan()
	for _, sl := range pp.GetStmgrs() {
		id := int(sl.GetContainer())
		st, stPid, stLog := daemon(id, "stmgr")
		sock := socketFlag(st.pid)
		if sock == "" {
			t.Fatalf("stmgr of container %d (pid %d) has no --socket flag", id, st.pid)
		}
		out = append(out,
			target{name: fmt.Sprintf("stmgr %d data port", id), network: "tcp", addr: net.JoinHostPort(sl.GetHost(), strconv.Itoa(int(sl.GetDataPort()))),
				expect: wire.FrameStMgrHello, proc: st, pidOf: stPid, log: stLog},
			target{name: fmt.Sprintf("stmgr %d socket", id), network: "unix", addr: sock,
				expect: wire.FrameRegisterInstanceRequest, proc: st, pidOf: stPid, log: stLog})
	}
	for id := 0; id <= w.containers; id++ {
		mm, mmPid, mmLog := daemon(id, "metricsmgr")
		sock := socketFlag(mm.pid)
		if sock == "" {
			t.Fatalf("metricsmgr of container %d (pid %d) has no --socket flag", id, mm.pid)
		}
		out = append(out, target{name: fmt.Sprintf("metricsmgr %d socket", id), network: "unix", addr: sock,
			expect: wire.FrameMetricsPublish, proc: mm, pidOf: mmPid, log: mmLog})
	}

	var ep struct {
		URL string `json:"url"`
		PID int    `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(wd, "scheduler.json"))
	if err == nil {
		err = json.Unmarshal(b, &ep)
	}
	if err != nil || !strings.HasPrefix(ep.URL, "http://") {
		t.Fatalf("read the scheduler's endpoint %s: %v (%q)", filepath.Join(wd, "scheduler.json"), err, b)
	}
	sp, ok := procOf(ep.PID)
	if !ok {
		t.Fatalf("the scheduler service (pid %d) is not running", ep.PID)
	}
	out = append(out, target{name: "scheduler http endpoint", network: "tcp", addr: strings.TrimPrefix(ep.URL, "http://"), http: true,
		proc: sp, pidOf: func() int { return ep.PID }, log: filepath.Join(wd, "scheduler.log")})
	return out
}

// TestGarbageOnEveryDaemonPort sends several kinds of garbage to every
// listening port of a running 2-container topology — the topology
// manager's server and HTTP ports, each stream manager's TCP data port and
// Unix socket, each metrics manager's Unix socket and the local
// scheduler's HTTP endpoint — and checks that each connection is closed,
// the daemon logs an error and keeps its pid, and tuples keep flowing.
func TestGarbageOnEveryDaemonPort(t *testing.T) {
	c := newCluster(t, "local")
	w := startWordCount(t, c, 2)
	targets := w.targets()
	sentToStmgr := map[int]int{} // pid → garbage connections
	for _, tg := range targets {
		t.Run(strings.ReplaceAll(tg.name, " ", "_"), func(t *testing.T) {
			kinds := framedGarbage(tg.expect)
			if tg.http {
				kinds = httpGarbage(t)
			}
			offset := logSize(tg.log)
			for _, g := range kinds {
				errsBefore := errorLines(logSince(tg.log, offset))
				reply, local, err := sendGarbage(tg.network, tg.addr, g.data)
				if err != nil {
					t.Errorf("%s to %s %s: %v", g.name, tg.network, tg.addr, err)
					continue
				}
				if tg.http && !bytes.HasPrefix(reply, []byte("HTTP/1.1 4")) && !bytes.HasPrefix(reply, []byte("HTTP/1.0 4")) {
					t.Errorf("%s: the HTTP server answered %q, want a 4xx status", g.name, firstLine(reply))
				}
				if !tg.http {
					if len(reply) > 0 {
						t.Logf("%s: the daemon answered %d bytes before closing", g.name, len(reply))
					}
					if strings.HasPrefix(tg.name, "stmgr") {
						sentToStmgr[tg.proc.pid]++
					}
					// A framed port logs an error for each bad connection,
					// naming the peer when it has an address.
					await(t, fmt.Sprintf("%s to log an error for %s", tg.name, g.name), closeTimeout, func() (bool, string) {
						errs := errorLines(logSince(tg.log, offset))
						if errs <= errsBefore {
							return false, fmt.Sprintf("%d error lines in %s since the first garbage, as before", errs, tg.log)
						}
						if tg.network == "tcp" && !strings.Contains(logSince(tg.log, offset), local) {
							return false, fmt.Sprintf("no log line names the peer %s", local)
						}
						return true, summarize(lastErrorLine(logSince(tg.log, offset)))
					})
				}
				if !tg.proc.alive() {
					t.Fatalf("%s: the daemon (pid %d) died after %s; see %s", tg.name, tg.proc.pid, g.name, tg.log)
				}
				if pid := tg.pidOf(); pid != tg.proc.pid {
					t.Fatalf("%s: the daemon's pid changed from %d to %d after %s", tg.name, tg.proc.pid, pid, g.name)
				}
			}
			if tg.http {
				// net/http answers 400 and closes without logging; the
				// daemons' listeners log it (internal/httpguard). The
				// executor copies a daemon's output into its log: wait.
				await(t, fmt.Sprintf("%s to log the bad requests it answered with 400", tg.name), closeTimeout, func() (bool, string) {
					if errorLines(logSince(tg.log, offset)) == 0 {
						return false, fmt.Sprintf("no error line in %s since the first bad request", tg.log)
					}
					return true, ""
				})
			}
		})
	}
	// The stream managers counted the connections they rejected.
	since := time.Now().UnixNano()
	await(t, "the stream managers to report the rejected connections", recoverTimeout, func() (bool, string) {
		s, err := w.stats()
		if err != nil {
			return false, err.Error()
		}
		var status []string
		ok := true
		for id := 1; id <= w.containers; id++ {
			e := s.Containers[strconv.Itoa(id)]["stmgr"]
			pid := w.c.pids(w.name, id)["stmgr"]
			got, want := e.Metrics["stmgr.connections.rejected"], sentToStmgr[pid]
			if e.UnixNanos <= since || int(got) < want {
				ok = false
			}
			status = append(status, fmt.Sprintf("stmgr %d: %v rejected, %d sent", id, got, want))
		}
		return ok, strings.Join(status, "; ")
	})
	w.waitStmgrsFlow("the stream managers to keep carrying tuples after the garbage")
	w.waitCountsGrow("the count tasks of both containers to keep counting after the garbage", w.countTasks())
	for _, tg := range targets {
		if !tg.proc.alive() {
			t.Errorf("%s: the daemon (pid %d) is gone", tg.name, tg.proc.pid)
		}
	}
	w.kill()
}

func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > 300 {
		b = b[:300]
	}
	return string(b)
}

// summarize returns the message and error of a JSON log line.
func summarize(line string) string {
	var l struct {
		Msg   string `json:"msg"`
		Peer  string `json:"peer"`
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(line), &l) != nil {
		return firstLine([]byte(line))
	}
	return fmt.Sprintf("%s (peer %q): %s", l.Msg, l.Peer, l.Error)
}

func lastErrorLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], `"level":"error"`) || strings.Contains(lines[i], "\tERROR\t") {
			return lines[i]
		}
	}
	return ""
}
