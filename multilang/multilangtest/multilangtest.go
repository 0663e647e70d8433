// Package multilangtest runs fake multilang components written in Go, so
// that the tests of package multilang and of api's shell components need
// no Python. A test binary serves as the subprocess: its TestMain calls
// Main, which runs the component named by the environment variable Env
// (and returns when it is not set):
//
//	func TestMain(m *testing.M) {
//		multilangtest.Main()
//		os.Exit(m.Run())
//	}
//
// and a test starts os.Args[0] with Env=<mode> in the environment
// (Command does both).
package multilangtest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/egret-stream/egret/multilang"
)

// Env names the variable selecting a fake component.
const Env = "EGRET_MULTILANG_FAKE"

// Modes of the fake components.
const (
	// EchoBolt emits each tuple's values anchored on it (needing task
	// ids every other tuple), then acks it; heartbeats get a sync. It
	// logs "echo bolt ready" at start and writes a line to stderr.
	EchoBolt = "echo-bolt"
	// FailBolt fails every tuple.
	FailBolt = "fail-bolt"
	// HangBolt answers the handshake, then reads nothing more.
	HangBolt = "hang-bolt"
	// GarbageBolt writes a line that is not JSON after its first tuple.
	GarbageBolt = "garbage-bolt"
	// CountSpout emits the numbers 0..N-1 (N from the conf key
	// "fake.n"), one per next, with the number as tuple id, and
	// reports acks and fails in counters via metrics commands
	// ("acked", "failed").
	CountSpout = "count-spout"
	// NoHandshake exits at once.
	NoHandshake = "no-handshake"
	// Silent never answers the handshake.
	Silent = "silent"
)

// Command returns the command and environment that run mode: the test
// binary itself.
func Command(mode string) (string, []string) {
	return os.Args[0], append(os.Environ(), Env+"="+mode)
}

// Main runs the fake component selected by Env and exits; without Env it
// returns.
func Main() {
	mode := os.Getenv(Env)
	if mode == "" {
		return
	}
	os.Exit(run(mode))
}

type conn struct {
	rd      *multilang.Reader
	w       *bufio.Writer
	pending []any // tuples read while waiting for task ids
}

// next returns the next tuple or command, pending ones first.
func (c *conn) next() any {
	if len(c.pending) > 0 {
		v := c.pending[0]
		c.pending = c.pending[1:]
		return v
	}
	return c.read()
}

// taskIDs reads the task ids of an emit; tuples that come first (they
// were queued before) wait in pending, as pystorm does.
func (c *conn) taskIDs() bool {
	for {
		switch v := c.read().(type) {
		case []any:
			return true
		case map[string]any:
			c.pending = append(c.pending, v)
		default:
			return false
		}
	}
}

func (c *conn) read() any {
	b, err := c.rd.Next()
	if err != nil {
		os.Exit(2) // stdin closed: the runtime went away
	}
	v, err := multilang.Parse(b)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake: bad message:", err)
		os.Exit(1)
	}
	return v
}

func (c *conn) send(v map[string]any) {
	b, err := multilang.AppendValue(nil, v)
	if err != nil {
		panic(err)
	}
	c.w.Write(multilang.AppendFrame(b))
	c.w.Flush()
}

func run(mode string) int {
	c := &conn{rd: multilang.NewReader(os.Stdin, 1<<20), w: bufio.NewWriter(os.Stdout)}
	if mode == NoHandshake {
		fmt.Fprintln(os.Stderr, "fake: exiting without a handshake")
		return 1
	}
	if mode == Silent {
		time.Sleep(time.Hour)
	}
	setup := c.read().(map[string]any)
	pid := os.Getpid()
	if dir, ok := setup["pidDir"].(string); ok {
		_ = os.WriteFile(dir+"/"+strconv.Itoa(pid), nil, 0o644)
	}
	c.send(map[string]any{"pid": int64(pid)})
	conf, _ := setup["conf"].(map[string]any)
	switch mode {
	case HangBolt:
		time.Sleep(time.Hour)
		return 0
	case CountSpout:
		return countSpout(c, conf)
	}
	fmt.Fprintln(os.Stderr, "fake: stderr line of", mode)
	c.send(map[string]any{"command": "log", "msg": mode + " ready", "level": int64(2)})
	n := 0
	for {
		t := c.next().(map[string]any)
		if t["stream"] == multilang.HeartbeatStream {
			c.send(map[string]any{"command": "sync"})
			continue
		}
		n++
		switch mode {
		case GarbageBolt:
			os.Stdout.WriteString("garbage, not JSON\nend\n")
		case FailBolt:
			c.send(map[string]any{"command": "fail", "id": t["id"]})
		default:
			need := n%2 == 0
			c.send(map[string]any{"command": "emit", "anchors": []any{t["id"]}, "tuple": t["tuple"], "need_task_ids": need})
			if need {
				if !c.taskIDs() {
					fmt.Fprintln(os.Stderr, "fake: want task ids")
					return 1
				}
			}
			c.send(map[string]any{"command": "ack", "id": t["id"]})
		}
	}
}

func countSpout(c *conn, conf map[string]any) int {
	n, _ := conf["fake.n"].(int64)
	next := int64(0)
	for {
		cmd := c.next().(map[string]any)
		switch cmd["command"] {
		case "next":
			if next < n {
				c.send(map[string]any{"command": "emit", "id": next, "tuple": []any{next}, "need_task_ids": false})
				next++
			}
		case "ack":
			c.send(map[string]any{"command": "metrics", "name": "acked", "params": int64(1)})
		case "fail":
			c.send(map[string]any{"command": "metrics", "name": "failed", "params": int64(1)})
		}
		c.send(map[string]any{"command": "sync"})
	}
}
