package ckptio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/egret-stream/egret/daemons/wire"
)

func msgs() []*Msg {
	return []*Msg{
		{Type: wire.FrameFileCreate, Name: "12-3-keyed"},
		{Type: wire.FrameFileChunk, Data: []byte("some bytes")},
		{Type: wire.FrameFileChunk, Data: []byte{}},
		{Type: wire.FrameFileCommit, Size: 1 << 40, Sum: 0xdeadbeef},
		{Type: wire.FrameFileOpen, Name: "1-0-operator"},
		{Type: wire.FrameFileStat, Names: []string{"a", "b-c"}},
		{Type: wire.FrameFileManifest, Checkpoint: 77, Task: 5},
		{Type: wire.FrameFileResult, Status: StatusFailed, Error: "disk full", Values: []int64{-1, 5, 1 << 50}},
		{Type: wire.FrameFileResult},
	}
}

func TestMsgRoundTrip(t *testing.T) {
	for _, m := range msgs() {
		b := AppendMsg(nil, m)
		if int(binary.BigEndian.Uint32(b)) != len(b)-4 || wire.FrameType(b[4]) != m.Type {
			t.Fatalf("%s: bad frame header % x", m.Type, b[:5])
		}
		var got Msg
		if err := DecodeMsg(m.Type, b[5:], &got); err != nil {
			t.Fatalf("%s: %v", m.Type, err)
		}
		norm := func(m Msg) Msg {
			if len(m.Names) == 0 {
				m.Names = nil
			}
			if len(m.Values) == 0 {
				m.Values = nil
			}
			if m.Type == wire.FrameFileChunk && len(m.Data) == 0 {
				m.Data = nil
			}
			return m
		}
		if !reflect.DeepEqual(norm(got), norm(*m)) {
			t.Fatalf("round trip %+v, want %+v", got, *m)
		}
	}
}

func TestMsgRefused(t *testing.T) {
	for _, c := range []struct {
		t       wire.FrameType
		payload []byte
	}{
		{wire.FrameFileCreate, AppendMsg(nil, &Msg{Type: wire.FrameFileCreate, Name: "../x"})[5:]},
		{wire.FrameFileCreate, AppendMsg(nil, &Msg{Type: wire.FrameFileCreate, Name: ".tmp-x"})[5:]},
		{wire.FrameFileOpen, []byte{5, 'a'}},
		{wire.FrameFileCommit, []byte{1}},
		{wire.FrameFileCommit, append(AppendMsg(nil, &Msg{Type: wire.FrameFileCommit})[5:], 0)},
		{wire.FrameFileStat, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
		{wire.FrameFileResult, nil},
		{wire.FrameFileResult, []byte{9, 0, 0}},
		{wire.FrameSaveStateRequest, nil},
	} {
		var m Msg
		if err := DecodeMsg(c.t, c.payload, &m); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s % x: %v, want ErrCorrupt", c.t, c.payload, err)
		}
	}
}

func FuzzDecodeMsg(f *testing.F) {
	for _, m := range msgs() {
		b := AppendMsg(nil, m)
		f.Add(b[4], b[5:])
	}
	f.Fuzz(func(t *testing.T, typ byte, payload []byte) {
		var m Msg
		if err := DecodeMsg(wire.FrameType(typ), payload, &m); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		var again Msg
		b := AppendMsg(nil, &m)
		if err := DecodeMsg(m.Type, b[5:], &again); err != nil {
			t.Fatalf("a decoded message does not decode once encoded: %v", err)
		}
		if m.Type != wire.FrameFileChunk && m.Type != wire.FrameFileResult && !bytes.Equal(b[5:], payload) {
			t.Fatalf("encode(decode(% x)) = % x", payload, b[5:])
		}
	})
}
