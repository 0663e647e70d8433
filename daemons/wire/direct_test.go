package wire

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/egret-stream/egret/internal/memconn"
)

var _ Attacher = (*memconn.Conn)(nil)

type recorder struct {
	data   []Batch
	frames [][]byte
}

func (r *recorder) HandleData(_ context.Context, dest uint32, count int, records []byte) error {
	r.data = append(r.data, Batch{Dest: dest, Count: count, Buf: bytes.Clone(records)})
	return nil
}

func (r *recorder) HandleFrame(_ context.Context, body []byte) error {
	r.frames = append(r.frames, bytes.Clone(body))
	return nil
}

func TestDataHeaderMatchesDataFrame(t *testing.T) {
	b := &Batch{Dest: 7, Count: 2, Buf: []byte("records")}
	whole := AppendDataFrame(nil, b)
	hdr := AppendDataHeader(nil, b.Dest, b.Count, len(b.Buf))
	if len(hdr) != DataHeaderSize || !bytes.Equal(append(hdr, b.Buf...), whole) {
		t.Fatalf("header %x + records != frame %x", hdr, whole)
	}
	n, typ := ParseFrameHeader(hdr)
	if n != DataBodySize(len(b.Buf)) || typ != FrameData {
		t.Fatalf("frame header = %d, %v", n, typ)
	}
	if dest, count := ParseDataHeader(hdr[HeaderSize:]); dest != 7 || count != 2 {
		t.Fatalf("data header = %d, %d", dest, count)
	}
	if body := AppendDataBody(nil, 7, 2, b.Buf); !bytes.Equal(body, whole[4:]) {
		t.Fatalf("body %x != frame body %x", body, whole[4:])
	}
}

func TestHandleFrames(t *testing.T) {
	var in []byte
	in = AppendDataFrame(in, &Batch{Dest: 3, Count: 1, Buf: []byte{9}})
	in = AppendEpoch(in, 5)
	in = AppendDataFrame(in, &Batch{Dest: 4, Count: 0})
	var r recorder
	if err := HandleFrames(context.Background(), &r, in); err != nil {
		t.Fatal(err)
	}
	if len(r.data) != 2 || r.data[0].Dest != 3 || r.data[1].Dest != 4 || len(r.frames) != 1 || FrameType(r.frames[0][0]) != FrameEpoch {
		t.Fatalf("handled %+v and %x", r.data, r.frames)
	}
	for _, bad := range [][]byte{{0, 0}, {0, 0, 0, 0}, {0, 0, 0, 9, 1}, AppendFrame(nil, FrameData, []byte{1})} {
		if err := HandleFrames(context.Background(), &r, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("HandleFrames(%x) = %v, want ErrCorrupt", bad, err)
		}
	}
}
