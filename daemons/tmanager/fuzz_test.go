package tmanager

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// FuzzServerConn feeds arbitrary bytes to the frame-handling path of the
// server port (frame reading, decoding, registration, heartbeats, metrics):
// it must never panic and must always end the connection.
func FuzzServerConn(f *testing.F) {
	msg := func(m proto.Message) []byte {
		b, err := wire.AppendMessage(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	reg := func(c int32) []byte {
		return msg(&egretpb.StMgrRegisterRequest{TopologyId: testID,
			Location: &egretpb.StMgrLocation{Container: c, Host: "127.0.0.1", DataPort: 7000 + c}})
	}
	hb := msg(&egretpb.StMgrHeartbeat{Container: 1})
	metrics := msg(&egretpb.MetricsPublish{Source: "instance", Component: "words", TaskId: 1,
		Metrics:    []*egretpb.Metric{{Name: "emit-count", Value: 3}},
		Exceptions: []*egretpb.ExceptionReport{{Message: "boom"}}})
	f.Add(reg(1))
	f.Add(append(append(reg(1), hb...), reg(2)...))
	f.Add(append(reg(2), metrics...))
	f.Add(metrics)
	f.Add(msg(&egretpb.StMgrRegisterRequest{TopologyId: "other"}))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 32})
	f.Add(wire.AppendFrame(nil, 0xee, []byte("x")))
	f.Add(wire.AppendFrame(nil, wire.FrameStMgrRegisterRequest, []byte{0x12, 0xff}))
	f.Add([]byte("garbage that is not a frame"))
	f.Fuzz(func(t *testing.T, data []byte) {
		srv := newTestServer(t)
		srv.serveConn(&memConn{r: bytes.NewReader(data)}, "fuzz")
		srv.shutdown()
		// The manager is still consistent: a snapshot works.
		_ = srv.mgr.snapshot()
	})
}
