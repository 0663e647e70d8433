package ckptmgr_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/checkpoints/localfs"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/ckptmgr"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// FuzzConnection: whatever a connection sends, the manager answers or
// closes it, and keeps serving others.
func FuzzConnection(f *testing.F) {
	seed := func(msgs ...any) []byte {
		var b []byte
		for _, m := range msgs {
			switch v := m.(type) {
			case []byte:
				b = append(b, v...)
			case *egretpb.SaveStateRequest:
				b, _ = wire.AppendMessage(b, v)
			case *egretpb.LoadStateRequest:
				b, _ = wire.AppendMessage(b, v)
			case *egretpb.CleanCheckpointsRequest:
				b, _ = wire.AppendMessage(b, v)
			}
		}
		return b
	}
	f.Add(seed(&egretpb.SaveStateRequest{CheckpointId: 1, TaskId: 1, State: []byte("s")}, &egretpb.LoadStateRequest{CheckpointId: 1, TaskId: 1}))
	f.Add(seed(&egretpb.CleanCheckpointsRequest{KeepFrom: 2, DeleteAfter: 5}))
	f.Add(seed(&egretpb.SaveStateRequest{CheckpointId: -1, TaskId: -7}))
	f.Add([]byte{0, 0, 0, 0})
	f.Add(wire.AppendFrame(nil, wire.FrameSaveStateRequest, []byte{0x0a, 0xff}))
	f.Add([]byte("garbage that is no frame at all"))
	// Logs go nowhere: a fuzz target may not log through f.
	st, err := localfs.New(spi.Config{localfs.KeyRoot: f.TempDir()}, nil)
	if err != nil {
		f.Fatal(err)
	}
	s := startLog(f, ckptmgr.Config{Storage: st, MaxFrame: 1 << 16}, zap.NewNop())
	sock := sockets[s]
	f.Fuzz(func(t *testing.T, in []byte) {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		go func() {
			_, _ = conn.Write(in)
			_ = conn.(*net.UnixConn).CloseWrite()
		}()
		// The manager answers what it can read and then closes.
		if _, err := io.Copy(io.Discard, conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("the connection neither answered nor closed: %v", err)
		}
		// Another connection is served.
		check, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("the manager stopped listening: %v", err)
		}
		defer check.Close()
		_ = check.SetDeadline(time.Now().Add(30 * time.Second))
		b, _ := wire.AppendMessage(nil, &egretpb.LoadStateRequest{CheckpointId: 424242, TaskId: 1})
		if _, err := check.Write(b); err != nil {
			t.Fatal(err)
		}
		var buf [64]byte
		n, err := check.Read(buf[:])
		if err != nil || n < wire.HeaderSize || !bytes.Equal(buf[4:5], []byte{byte(wire.FrameLoadStateResponse)}) {
			t.Fatalf("a health check after the input got %x, %v", buf[:n], err)
		}
	})
}
