package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// ckptProc is an `egret ckptmgr` process.
type ckptProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	socket string
	stderr *bytes.Buffer
	exited chan error
}

func startCkptMgr(t *testing.T, dir string, cfg map[string]string, extra ...string) *ckptProc {
	t.Helper()
	b, _ := json.Marshal(cfg)
	cfgFile := filepath.Join(dir, "cluster.json")
	if err := os.WriteFile(cfgFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p := &ckptProc{t: t, socket: filepath.Join(dir, "ckptmgr.sock"), stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
	args := append([]string{"ckptmgr", "--topology", "wc", "--container", "1", "--socket", p.socket, "--config", cfgFile}, extra...)
	p.cmd = exec.Command(binary(t, "egret"), args...)
	p.cmd.Dir = dir
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("ckptmgr stderr:\n%s", p.stderr)
		}
	})
	return p
}

// dial waits until the manager listens and connects.
func (p *ckptProc) dial() *ckptConn {
	p.t.Helper()
	var conn net.Conn
	waitFor(p.t, "the checkpoint manager's socket", 30*time.Second, func() bool {
		select {
		case err := <-p.exited:
			p.t.Fatalf("ckptmgr exited: %v\n%s", err, p.stderr)
		default:
		}
		var err error
		conn, err = net.Dial("unix", p.socket)
		return err == nil
	})
	p.t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	return &ckptConn{t: p.t, conn: conn, r: bufio.NewReader(conn)}
}

type ckptConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func (c *ckptConn) call(m proto.Message) (proto.Message, error) {
	b, err := wire.AppendMessage(nil, m)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.conn.Write(b); err != nil {
		return nil, err
	}
	ft, payload, _, err := wire.ReadFrame(c.r, nil, 64<<20)
	if err != nil {
		return nil, err
	}
	return wire.DecodeMessage(ft, payload)
}

func (c *ckptConn) mustCall(m proto.Message) proto.Message {
	c.t.Helper()
	resp, err := c.call(m)
	if err != nil {
		c.t.Fatalf("%T: %v", m, err)
	}
	return resp
}

// TestCkptMgrProcess runs `egret ckptmgr` as a real process with the
// localfs storage: the state lands under egret.checkpoint.localfs.root in
// the documented layout, a frame above egret.wire.max.frame.bytes
// closes only its connection, the counters reach the metrics socket, and
// SIGTERM ends it cleanly.
func TestCkptMgrProcess(t *testing.T) {
	dir, err := os.MkdirTemp("", "ckpt-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root := filepath.Join(dir, "checkpoints")
	msock := filepath.Join(dir, "metricsmgr.sock")
	ln, err := net.Listen("unix", msock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := startCkptMgr(t, dir, map[string]string{
		"egret.checkpoint.storage":      "localfs",
		"egret.checkpoint.localfs.root": root,
		"egret.wire.max.frame.bytes":    "4KiB",
		"egret.metrics.export.interval": "100ms",
	}, "--metrics-socket", msock)
	c := p.dial()
	for task := int32(1); task <= 3; task++ {
		for ckpt := int64(1); ckpt <= 3; ckpt++ {
			r := c.mustCall(&egretpb.SaveStateRequest{CheckpointId: ckpt, TaskId: task, State: []byte{byte(ckpt), byte(task)}}).(*egretpb.SaveStateResponse)
			if r.GetError() != "" {
				t.Fatalf("save: %s", r.GetError())
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "wc", "2", "3.state")); err != nil || !bytes.Equal(b[16:], []byte{2, 3}) {
		t.Fatalf("state file under the root: %q, %v", b, err)
	}
	lr := c.mustCall(&egretpb.LoadStateRequest{CheckpointId: 3, TaskId: 2}).(*egretpb.LoadStateResponse)
	if !bytes.Equal(lr.GetState(), []byte{3, 2}) {
		t.Fatalf("load: %v", lr)
	}
	if r := c.mustCall(&egretpb.CleanCheckpointsRequest{KeepFrom: 3}).(*egretpb.CleanCheckpointsResponse); r.GetError() != "" {
		t.Fatalf("clean: %s", r.GetError())
	}
	entries, _ := os.ReadDir(filepath.Join(root, "wc"))
	if len(entries) != 1 || entries[0].Name() != "3" {
		t.Fatalf("after clean(keep_from 3) the topology directory holds %v", entries)
	}

	// Above the size limit: that connection is closed, others are served.
	big := p.dial()
	if _, err := big.call(&egretpb.SaveStateRequest{CheckpointId: 4, TaskId: 1, State: make([]byte, 8<<10)}); err == nil {
		t.Fatal("a frame above egret.wire.max.frame.bytes was answered")
	}
	if r := c.mustCall(&egretpb.SaveStateRequest{CheckpointId: 4, TaskId: 1, State: make([]byte, 3<<10)}).(*egretpb.SaveStateResponse); r.GetError() != "" {
		t.Fatalf("save below the limit after a connection was closed: %s", r.GetError())
	}

	// Metrics.
	mconn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer mconn.Close()
	_ = mconn.SetReadDeadline(time.Now().Add(30 * time.Second))
	mr := bufio.NewReader(mconn)
	for saves := 0.0; saves < 10; {
		ft, payload, _, err := wire.ReadFrame(mr, nil, 1<<20)
		if err != nil {
			t.Fatalf("no ckptmgr.saves of 10 published: %v", err)
		}
		m, err := wire.DecodeMessage(ft, payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range m.(*egretpb.MetricsPublish).GetMetrics() {
			if x.GetName() == "ckptmgr.saves" {
				saves = x.GetValue()
			}
		}
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("ckptmgr after SIGTERM: %v\n%s", err, p.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ckptmgr did not exit after SIGTERM")
	}
	if _, err := os.Stat(p.socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after exit: %v", err)
	}
	if _, err := io.Copy(io.Discard, c.r); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("connection after exit: %v", err)
	}
}

// TestCkptMgrPluginStorage: egret.checkpoint.storage naming a plugin runs
// the plugin binary of egret.plugin.directory (states above gRPC's message
// limit pass); a name that is neither built in nor installed is a usage
// error; when the plugin is killed the manager exits.
func TestCkptMgrPluginStorage(t *testing.T) {
	dir, err := os.MkdirTemp("", "ckpt-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	pluginDir := filepath.Join(dir, "plugins")
	if err := os.MkdirAll(pluginDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary(t, "egret-checkpointstorage-localfs"), filepath.Join(pluginDir, "egret-checkpointstorage-disk")); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "checkpoints")

	bad := startCkptMgr(t, dir, map[string]string{"egret.checkpoint.storage": "nosuch", "egret.plugin.directory": pluginDir})
	select {
	case err := <-bad.exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(bad.stderr.String(), "egret-checkpointstorage-nosuch") {
			t.Fatalf("unknown storage: %v\n%s", err, bad.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ckptmgr with an unknown storage did not exit")
	}

	p := startCkptMgr(t, dir, map[string]string{
		"egret.checkpoint.storage":      "disk",
		"egret.plugin.directory":        pluginDir,
		"egret.checkpoint.localfs.root": root,
	})
	c := p.dial()
	state := bytes.Repeat([]byte("plugin state "), 500_000) // ~6 MiB: above gRPC's message limit
	if r := c.mustCall(&egretpb.SaveStateRequest{CheckpointId: 9, TaskId: 4, State: state}).(*egretpb.SaveStateResponse); r.GetError() != "" {
		t.Fatalf("save through the plugin: %s", r.GetError())
	}
	if fi, err := os.Stat(filepath.Join(root, "wc", "9", "4.state")); err != nil || fi.Size() != int64(16+len(state)) {
		t.Fatalf("the plugin's state file: %v, %v", fi, err)
	}
	lr := c.mustCall(&egretpb.LoadStateRequest{CheckpointId: 9, TaskId: 4}).(*egretpb.LoadStateResponse)
	if !bytes.Equal(lr.GetState(), state) {
		t.Fatalf("load through the plugin: %d bytes, error %q", len(lr.GetState()), lr.GetError())
	}
	if lr := c.mustCall(&egretpb.LoadStateRequest{CheckpointId: 9, TaskId: 5}).(*egretpb.LoadStateResponse); !lr.GetNotFound() {
		t.Fatalf("load of a missing state through the plugin: %v", lr)
	}
	plugin := childPid(p.cmd.Process.Pid, "egret-checkpoin")
	if plugin == 0 {
		t.Fatal("no plugin process egret-checkpointstorage-disk is a child of the checkpoint manager")
	}

	// kill -9 of the plugin: the next request is answered with the error
	// and the manager exits non-zero, for the executor to restart it.
	if err := syscall.Kill(plugin, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r, err := c.call(&egretpb.SaveStateRequest{CheckpointId: 10, TaskId: 4, State: []byte("x")})
	if err != nil {
		t.Fatalf("save after the plugin died: %v", err)
	}
	if e := r.(*egretpb.SaveStateResponse).GetError(); !strings.Contains(e, "plugin exited") {
		t.Fatalf("save after the plugin died: error %q", e)
	}
	select {
	case err := <-p.exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("ckptmgr after its plugin died: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ckptmgr did not exit after its plugin died")
	}
}

// childPid returns a child of pid whose command name starts with comm
// (Linux cuts it to 15 bytes), or 0.
func childPid(pid int, comm string) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || close < open {
			continue
		}
		fields := strings.Fields(string(b[close+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) && strings.HasPrefix(string(b[open+1:close]), comm) {
			child, _ := strconv.Atoi(strings.Fields(string(b[:open]))[0])
			return child
		}
	}
	return 0
}
