package hdfs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
)

// The storage against a real NameNode (conformance, layout, replication)
// is tested in test/hadoop; these tests need no cluster.

func TestParseSettings(t *testing.T) {
	s, err := ParseSettings(spi.Config{KeyNameNode: "nn1:8020, nn2", KeyDirectory: "/egret/ck/../ckpt/", KeyReplication: "2", KeyTimeout: "5s", KeyUser: "egret"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.NameNodes, ",") != "nn1:8020,nn2:8020" || s.Directory != "/egret/ckpt" || s.Replication != 2 || s.Timeout != 5*time.Second || s.User != "egret" {
		t.Errorf("settings %+v", s)
	}
	if s, err := ParseSettings(spi.Config{KeyNameNode: "nn", KeyDirectory: "/d"}); err != nil || s.Timeout != 30*time.Second || s.Replication != 0 {
		t.Errorf("defaults: %+v, %v", s, err)
	}
	for name, tc := range map[string]struct {
		cfg  spi.Config
		want string
	}{
		"no namenode":      {spi.Config{KeyDirectory: "/d"}, KeyNameNode + " is required"},
		"namenode url":     {spi.Config{KeyNameNode: "hdfs://nn:8020", KeyDirectory: "/d"}, "without a scheme"},
		"no directory":     {spi.Config{KeyNameNode: "nn"}, KeyDirectory + " is required"},
		"relative dir":     {spi.Config{KeyNameNode: "nn", KeyDirectory: "egret/ck"}, "absolute HDFS path"},
		"unsubstituted":    {spi.Config{KeyNameNode: "nn", KeyDirectory: "/e/${CLUSTER}"}, "unsubstituted"},
		"bad replication":  {spi.Config{KeyNameNode: "nn", KeyDirectory: "/d", KeyReplication: "-1"}, KeyReplication},
		"bad timeout":      {spi.Config{KeyNameNode: "nn", KeyDirectory: "/d", KeyTimeout: "0s"}, "must be positive"},
		"user with spaces": {spi.Config{KeyNameNode: "nn", KeyDirectory: "/d", KeyUser: "a b"}, "not a user name"},
	} {
		_, err := ParseSettings(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", name, err, tc.want)
		}
	}
}

func TestRegistered(t *testing.T) {
	f, err := spi.LookupCheckpointStorage("hdfs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f(spi.Config{KeyNameNode: "nn", KeyDirectory: "/d"}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestRefusedBeforeConnecting: bad names, a cancelled context and a closed
// storage fail without contacting the NameNode (there is none).
func TestRefusedBeforeConnecting(t *testing.T) {
	st, err := New(spi.Config{KeyNameNode: "127.0.0.1:1", KeyDirectory: "/egret/ck", KeyTimeout: "2s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, key := range []spi.CheckpointKey{{Topology: "../x", Checkpoint: 1}, {Topology: "a/b"}, {Topology: "wc", Checkpoint: -1}} {
		if err := st.Store(ctx, key, nil); err == nil || strings.Contains(err.Error(), "connect") {
			t.Errorf("Store %+v = %v; want a refusal before connecting", key, err)
		}
	}
	if err := st.Delete(ctx, "..", 1); err == nil || strings.Contains(err.Error(), "connect") {
		t.Errorf("Delete = %v; want a refusal before connecting", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.Load(cancelled, spi.CheckpointKey{Topology: "wc", Checkpoint: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with a cancelled context: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.List(ctx, "wc"); !errors.Is(err, spi.ErrClosed) {
		t.Errorf("List after Close: %v", err)
	}
}

func TestUnreachableNameNode(t *testing.T) {
	st, err := New(spi.Config{KeyNameNode: "127.0.0.1:1", KeyDirectory: "/egret/ck", KeyTimeout: "2s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.Store(context.Background(), spi.CheckpointKey{Topology: "wc", Checkpoint: 1, Task: 1}, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), KeyNameNode) || !strings.Contains(err.Error(), "wc checkpoint 1 task 1") {
		t.Fatalf("Store with no NameNode = %v; want an error naming the key and %s", err, KeyNameNode)
	}
}
