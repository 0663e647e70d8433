package multilang_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/egret-stream/egret/multilang"
	"github.com/egret-stream/egret/multilang/multilangtest"
)

func TestMain(m *testing.M) {
	multilangtest.Main()
	os.Exit(m.Run())
}

func start(t *testing.T, mode string, mod func(*multilang.Config)) (*multilang.Process, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	cmd, env := multilangtest.Command(mode)
	cfg := multilang.Config{
		Command: cmd, Env: env, Dir: t.TempDir(), PidDir: filepath.Join(t.TempDir(), "pids"),
		Conf: map[string]any{"k": "v"}, Context: map[string]any{"taskid": int64(3)},
		Logger: zap.New(core), StartTimeout: time.Minute, HeartbeatTimeout: time.Minute,
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := multilang.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(p.Close)
	return p, logs
}

func recv(t *testing.T, p *multilang.Process) *multilang.Message {
	t.Helper()
	select {
	case m := <-p.In():
		return m
	case <-time.After(time.Minute):
		t.Fatal("no message from the subprocess within a minute")
	}
	return nil
}

func tuple(t *testing.T, id string, values ...any) []byte {
	b, err := multilang.AppendTuple(nil, id, "src", "default", 1, values)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProcessBolt(t *testing.T) {
	p, logs := start(t, multilangtest.EchoBolt, nil)
	if m := recv(t, p); m.Command != multilang.CmdLog || m.Msg != "echo-bolt ready" {
		t.Fatalf("first message %+v, want the ready log", m)
	}
	p.Out() <- tuple(t, "1", "a", int64(1))
	if m := recv(t, p); m.Command != multilang.CmdEmit || m.NeedTaskIDs || m.Anchors[0] != "1" || m.Tuple[0] != "a" || m.Tuple[1] != int64(1) {
		t.Fatalf("emit %+v", m)
	}
	if m := recv(t, p); m.Command != multilang.CmdAck || m.IDKey != "1" {
		t.Fatalf("ack %+v", m)
	}
	p.Out() <- tuple(t, "2", "b")
	if m := recv(t, p); m.Command != multilang.CmdEmit || !m.NeedTaskIDs {
		t.Fatalf("emit %+v, want one needing task ids", m)
	}
	p.Out() <- multilang.AppendTaskIDs(nil, []int{4})
	if m := recv(t, p); m.Command != multilang.CmdAck || m.IDKey != "2" {
		t.Fatalf("ack %+v", m)
	}
	deadline := time.Now().Add(time.Minute)
	for logs.FilterField(zap.String("line", "fake: stderr line of echo-bolt")).Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the subprocess's stderr line is not in the log: %v", logs.All())
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Close()
	if err := p.Err(); err == nil {
		t.Error("Err after Close = nil, want the exit")
	}
}

func TestProcessPidFile(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	if err := os.MkdirAll(pids, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(pids, "999999")
	if err := os.WriteFile(stale, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p, _ := start(t, multilangtest.EchoBolt, func(c *multilang.Config) { c.PidDir = pids })
	if _, err := os.Stat(filepath.Join(pids, strconv.Itoa(p.Pid()))); err != nil {
		t.Errorf("no pid file of the subprocess: %v", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale pid file is still there: %v", err)
	}
}

// TestProcessHeartbeatTimeout: a bolt that stops reading is killed once
// silent for the heartbeat timeout, with ErrHung as the reason.
func TestProcessHeartbeatTimeout(t *testing.T) {
	p, _ := start(t, multilangtest.HangBolt, func(c *multilang.Config) {
		c.Heartbeats = true
		c.HeartbeatTimeout = 500 * time.Millisecond
	})
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		t.Fatal("the hung subprocess was not killed within a minute")
	}
	if err := p.Err(); !errors.Is(err, multilang.ErrHung) {
		t.Errorf("Err = %v, want ErrHung", err)
	}
}

// TestProcessAnswersHeartbeats: a healthy idle bolt answers heartbeats
// and is not killed.
func TestProcessAnswersHeartbeats(t *testing.T) {
	p, _ := start(t, multilangtest.EchoBolt, func(c *multilang.Config) {
		c.Heartbeats = true
		c.HeartbeatTimeout = 3 * time.Second
	})
	syncs := 0
	for syncs < 3 {
		select {
		case m := <-p.In():
			if m.Command == multilang.CmdSync {
				syncs++
			}
		case <-p.Done():
			t.Fatalf("a healthy subprocess ended: %v", p.Err())
		case <-time.After(time.Minute):
			t.Fatal("no heartbeat answered within a minute")
		}
	}
}

func TestProcessGarbage(t *testing.T) {
	p, _ := start(t, multilangtest.GarbageBolt, nil)
	p.Out() <- tuple(t, "1", "x")
	for {
		select {
		case <-p.In():
			continue
		case <-p.Done():
		case <-time.After(time.Minute):
			t.Fatal("the subprocess writing garbage was not stopped within a minute")
		}
		break
	}
	err := p.Err()
	if !errors.Is(err, multilang.ErrProtocol) || !strings.Contains(err.Error(), "garbage, not JSON") {
		t.Errorf("Err = %v, want a protocol error quoting the garbage", err)
	}
}

func TestStartFailures(t *testing.T) {
	cmd, env := multilangtest.Command(multilangtest.NoHandshake)
	_, err := multilang.Start(context.Background(), multilang.Config{Command: cmd, Env: env, PidDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "closed its stdout before answering") {
		t.Errorf("Start of a subprocess that exits = %v", err)
	}
	_, err = multilang.Start(context.Background(), multilang.Config{Command: filepath.Join(t.TempDir(), "missing"), PidDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Start of a missing command = %v", err)
	}
	cmd, env = multilangtest.Command(multilangtest.Silent)
	_, err = multilang.Start(context.Background(), multilang.Config{Command: cmd, Env: env, PidDir: t.TempDir(), StartTimeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no handshake reply within 200ms") {
		t.Errorf("Start of a silent subprocess = %v", err)
	}
}
