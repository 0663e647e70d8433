package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// TestMetricsMgrFeedsTheConfiguredSinks: egret.metrics.sinks decides which
// sinks the metrics manager command runs; the file sink alone needs no
// state manager.
func TestMetricsMgrFeedsTheConfiguredSinks(t *testing.T) {
	dir := t.TempDir()
	writeConfig := func(name, json string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(json), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	args := func(cfg string) []string {
		return []string{"metricsmgr", "--topology", "wc", "--container", "1", "--socket", filepath.Join(dir, "m.sock"),
			"--metrics-file", filepath.Join(dir, "metrics.jsonl"), "--config", cfg}
	}
	// No state manager is configured: the tmanager sink cannot run...
	code, _, stderr := egret(t, args(writeConfig("tm.json", `{"egret.metrics.sinks": "tmanager"}`))...)
	if code != ExitFailure || !strings.Contains(stderr, "egret.statemgr is not set") {
		t.Errorf("tmanager sink without a state manager: exit %d, %q", code, stderr)
	}
	code, _, stderr = egret(t, args(writeConfig("bad.json", `{"egret.metrics.sinks": "file,statsd"}`))...)
	if code != ExitUsage || !strings.Contains(stderr, `metrics sink "statsd" is not built in (built in: [file graphite prometheus tmanager]) and no plugin directory is configured`) {
		t.Errorf("unknown sink: exit %d, %q", code, stderr)
	}

	// ...the file sink alone runs and writes what is published.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan int, 1)
	go func() {
		code, _, _ := egretCtx(ctx, args(writeConfig("file.json", `{"egret.metrics.sinks": "file", "egret.metrics.file.max.size": "200", "egret.metrics.file.max.files": "2"}`))...)
		exited <- code
	}()
	deadline := time.Now().Add(30 * time.Second)
	var conn net.Conn
	for {
		var err error
		if conn, err = net.Dial("unix", filepath.Join(dir, "m.sock")); err == nil {
			break
		}
		select {
		case code := <-exited:
			t.Fatalf("metricsmgr with the file sink exited with %d", code)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("metricsmgr does not listen: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer conn.Close()
	frame, err := wire.AppendMessage(nil, &egretpb.MetricsPublish{Source: "instance", Component: "split", TaskId: 7,
		Metrics: []*egretpb.Metric{{Name: "executed", Value: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	// Enough reports to rotate the 200-byte file more than twice.
	for range 12 {
		if _, err := conn.Write(frame); err != nil {
			t.Fatal(err)
		}
	}
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "metrics.jsonl"))
		_, err1 := os.Stat(filepath.Join(dir, "metrics.jsonl.1"))
		_, err2 := os.Stat(filepath.Join(dir, "metrics.jsonl.2"))
		if strings.Contains(string(b), `"taskId":7`) && err1 == nil && err2 == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the file sink wrote %q", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-exited; code != ExitOK {
		t.Errorf("metricsmgr exited with %d after cancel", code)
	}
	// egret.metrics.file.max.size and .max.files: files of at most 200
	// bytes, two rotated ones kept.
	if _, err := os.Stat(filepath.Join(dir, "metrics.jsonl.3")); err == nil {
		t.Error("metrics.jsonl.3 exists: egret.metrics.file.max.files is 2")
	}
	if st, err := os.Stat(filepath.Join(dir, "metrics.jsonl.1")); err != nil || st.Size() > 200 {
		t.Errorf("metrics.jsonl.1: %v, %v; want at most 200 bytes (egret.metrics.file.max.size)", st, err)
	}
}

// TestCkptMgrUsageErrors: the checkpoint manager command refuses missing
// flags and bad config values before it listens.
func TestCkptMgrUsageErrors(t *testing.T) {
	dir := t.TempDir()
	n := 0
	cfg := func(json string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("c%d.json", n))
		if err := os.WriteFile(p, []byte(json), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sock := filepath.Join(dir, "k.sock")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ckptmgr", "--container", "1", "--socket", sock, "--config", cfg(`{}`)}, "ckptmgr needs --topology, --container (1 or more) and --socket"},
		{[]string{"ckptmgr", "--topology", "wc", "--socket", sock, "--config", cfg(`{}`)}, "ckptmgr needs --topology, --container (1 or more) and --socket"},
		{[]string{"ckptmgr", "--topology", "wc", "--container", "1", "--socket", sock}, "ckptmgr needs --config"},
		{[]string{"ckptmgr", "--topology", "wc", "--container", "1", "--socket", sock, "--config", cfg(`{"egret.wire.max.frame.bytes": "lots"}`)}, "egret.wire.max.frame.bytes"},
		{[]string{"ckptmgr", "--topology", "wc", "--container", "1", "--socket", sock, "--config", cfg(`{"egret.checkpoint.timeout": "soon"}`)}, "egret.checkpoint.timeout"},
		{[]string{"ckptmgr", "--topology", "wc", "--container", "1", "--socket", sock, "--config", cfg(`{"egret.checkpoint.storage": "s3"}`)},
			`config key egret.checkpoint.storage: checkpoint storage "s3" is not built in (built in: [hdfs localfs]) and no plugin directory is configured`},
	} {
		code, _, stderr := egret(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
	// A storage whose config is bad fails to start, not as a usage error.
	code, _, stderr := egret(t, "ckptmgr", "--topology", "wc", "--container", "1", "--socket", sock, "--config", cfg(`{"egret.checkpoint.storage": "hdfs"}`))
	if code != ExitFailure || !strings.Contains(stderr, "egret.checkpoint.hdfs.namenode is required") {
		t.Errorf("hdfs storage without a NameNode: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(sock); err == nil {
		t.Error("a refused checkpoint manager left its socket")
	}
}
