package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/proto/egretpb"
)

// FuzzReadFrame feeds arbitrary bytes to the frame handling path of a
// stream manager and an instance gateway: ReadFrame, then DecodeMessage
// for control frames, or DataFrameDest, ParseDataFrame and a RecordReader
// for data frames. Nothing may panic; every frame is either accepted or
// rejected with an error.
func FuzzReadFrame(f *testing.F) {
	good, _ := AppendMessage(nil, &egretpb.StMgrHello{TopologyId: "t-1", Container: 2})
	f.Add(good)
	var rec []byte
	rec = AppendRecord(rec, &Header{SrcTask: 1, Stream: 1, Roots: []Root{{Task: 1, ID: 7}}}, []byte{1, 2, 3})
	f.Add(AppendDataFrame(nil, &Batch{Dest: 3, Count: 1, Buf: rec}))
	for _, m := range []proto.Message{
		&egretpb.RestoreInstanceState{CheckpointId: 3, Epoch: 2, State: []byte("EGS1\x00")},
		&egretpb.StoreInstanceState{CheckpointId: 3, Epoch: 2, TaskId: 4, State: []byte{1}},
		&egretpb.SaveStateRequest{CheckpointId: 1, TaskId: 2, State: []byte{3}},
		&egretpb.LoadStateResponse{CheckpointId: 1, TaskId: 2, NotFound: true},
	} {
		b, _ := AppendMessage(nil, m)
		f.Add(b)
	}
	f.Add(AppendBarrier(nil, Barrier{Dest: 1, Src: 2, Checkpoint: 3, Epoch: 4}))
	f.Add(AppendEpoch(nil, 5))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{0, 0, 0, 1, 99})
	f.Add([]byte{0, 0, 0, 5, 1, 0, 0, 0})
	f.Add(append(binary.BigEndian.AppendUint32(nil, 9), 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		var buf []byte
		for i := 0; i < 64; i++ {
			ft, payload, nb, err := ReadFrame(r, buf, 1<<16)
			buf = nb
			if err != nil {
				return
			}
			switch ft {
			case FrameBarrier:
				_, _ = ParseBarrier(payload)
				continue
			case FrameEpoch:
				_, _ = ParseEpoch(payload)
				continue
			}
			if ft != FrameData {
				_, _ = DecodeMessage(ft, payload)
				continue
			}
			_, _ = FirstSource(payload)
			body := buf[:len(payload)+1]
			if _, err := DataFrameDest(body); err != nil {
				continue
			}
			_, count, records, err := ParseDataFrame(payload)
			if err != nil {
				continue
			}
			var rd RecordReader
			var h Header
			rd.Reset(records)
			for n := 0; rd.More() && n <= count; n++ {
				if _, err := rd.Next(&h); err != nil {
					break
				}
			}
		}
	})
}
