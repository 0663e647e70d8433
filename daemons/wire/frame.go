package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/proto/egretpb"
)

// FrameType is the first byte of every frame's body.
type FrameType uint8

// Frame types. Data frames carry tuple batches in the hand-written format of
// this package; the others carry one protobuf control message each.
const (
	FrameData FrameType = 1
	// 2..15 are reserved for data-plane control (acks, back pressure).

	FrameRegisterInstanceRequest  FrameType = 16
	FrameRegisterInstanceResponse FrameType = 17
	FrameNewPhysicalPlan          FrameType = 18

	FrameStMgrRegisterRequest   FrameType = 32
	FrameStMgrRegisterResponse  FrameType = 33
	FrameStMgrHeartbeat         FrameType = 34
	FrameStMgrHeartbeatResponse FrameType = 35

	FrameStMgrHello         FrameType = 48
	FrameStMgrHelloResponse FrameType = 49

	FrameMetricsPublish FrameType = 64

	// Effectively-once checkpoints (80..95) and the checkpoint manager's
	// requests (96..111).
	FrameStartCheckpoint              FrameType = 80
	FrameStoreInstanceState           FrameType = 81
	FrameInstanceStateStored          FrameType = 82
	FrameCheckpointComplete           FrameType = 83
	FrameRestoreTopologyState         FrameType = 84
	FrameRestoreTopologyStateResponse FrameType = 85
	FrameRestoreInstanceState         FrameType = 86
	FrameRestoreInstanceStateResponse FrameType = 87
	FrameStartProcessing              FrameType = 88
	FrameResetTopologyState           FrameType = 89
	FrameSaveStateRequest             FrameType = 96
	FrameSaveStateResponse            FrameType = 97
	FrameLoadStateRequest             FrameType = 98
	FrameLoadStateResponse            FrameType = 99
	FrameCleanCheckpointsRequest      FrameType = 100
	FrameCleanCheckpointsResponse     FrameType = 101
	// Checkpoint files (daemons/ckptio): hand-written payloads that
	// stream a task's state files to and from the checkpoint manager.
	FrameFileCreate   FrameType = 102
	FrameFileChunk    FrameType = 103
	FrameFileCommit   FrameType = 104
	FrameFileOpen     FrameType = 105
	FrameFileStat     FrameType = 106
	FrameFileManifest FrameType = 107
	FrameFileResult   FrameType = 108
)

// HeaderSize is the size of a frame header: a 4-byte big-endian length of
// the body (type byte + payload) and the type byte.
const HeaderSize = 5

// DefaultMaxFrame bounds a frame's body unless configured otherwise.
const DefaultMaxFrame = 16 << 20

// dataHeaderSize is the fixed part of a data frame's payload: destination
// task and tuple count, 4 bytes each, big-endian.
const dataHeaderSize = 8

var messageTypes = map[FrameType]func() proto.Message{
	FrameRegisterInstanceRequest:  func() proto.Message { return &egretpb.RegisterInstanceRequest{} },
	FrameRegisterInstanceResponse: func() proto.Message { return &egretpb.RegisterInstanceResponse{} },
	FrameNewPhysicalPlan:          func() proto.Message { return &egretpb.NewPhysicalPlan{} },
	FrameStMgrRegisterRequest:     func() proto.Message { return &egretpb.StMgrRegisterRequest{} },
	FrameStMgrRegisterResponse:    func() proto.Message { return &egretpb.StMgrRegisterResponse{} },
	FrameStMgrHeartbeat:           func() proto.Message { return &egretpb.StMgrHeartbeat{} },
	FrameStMgrHeartbeatResponse:   func() proto.Message { return &egretpb.StMgrHeartbeatResponse{} },
	FrameStMgrHello:               func() proto.Message { return &egretpb.StMgrHello{} },
	FrameStMgrHelloResponse:       func() proto.Message { return &egretpb.StMgrHelloResponse{} },
	FrameMetricsPublish:           func() proto.Message { return &egretpb.MetricsPublish{} },

	FrameStartCheckpoint:              func() proto.Message { return &egretpb.StartCheckpoint{} },
	FrameStoreInstanceState:           func() proto.Message { return &egretpb.StoreInstanceState{} },
	FrameInstanceStateStored:          func() proto.Message { return &egretpb.InstanceStateStored{} },
	FrameCheckpointComplete:           func() proto.Message { return &egretpb.CheckpointComplete{} },
	FrameRestoreTopologyState:         func() proto.Message { return &egretpb.RestoreTopologyState{} },
	FrameRestoreTopologyStateResponse: func() proto.Message { return &egretpb.RestoreTopologyStateResponse{} },
	FrameRestoreInstanceState:         func() proto.Message { return &egretpb.RestoreInstanceState{} },
	FrameRestoreInstanceStateResponse: func() proto.Message { return &egretpb.RestoreInstanceStateResponse{} },
	FrameStartProcessing:              func() proto.Message { return &egretpb.StartProcessing{} },
	FrameResetTopologyState:           func() proto.Message { return &egretpb.ResetTopologyState{} },
	FrameSaveStateRequest:             func() proto.Message { return &egretpb.SaveStateRequest{} },
	FrameSaveStateResponse:            func() proto.Message { return &egretpb.SaveStateResponse{} },
	FrameLoadStateRequest:             func() proto.Message { return &egretpb.LoadStateRequest{} },
	FrameLoadStateResponse:            func() proto.Message { return &egretpb.LoadStateResponse{} },
	FrameCleanCheckpointsRequest:      func() proto.Message { return &egretpb.CleanCheckpointsRequest{} },
	FrameCleanCheckpointsResponse:     func() proto.Message { return &egretpb.CleanCheckpointsResponse{} },
}

var frameTypeOf = func() map[string]FrameType {
	m := map[string]FrameType{}
	for t, f := range messageTypes {
		m[string(proto.MessageName(f()))] = t
	}
	return m
}()

func (t FrameType) String() string {
	switch t {
	case FrameData:
		return "data"
	case FrameAck:
		return "ack"
	case FrameFail:
		return "fail"
	case FrameAckResult:
		return "ack-result"
	case FrameAckInit:
		return "ack-init"
	case FrameBackPressure:
		return "back-pressure"
	case FrameBarrier:
		return "barrier"
	case FrameEpoch:
		return "epoch"
	case FrameFileCreate:
		return "file-create"
	case FrameFileChunk:
		return "file-chunk"
	case FrameFileCommit:
		return "file-commit"
	case FrameFileOpen:
		return "file-open"
	case FrameFileStat:
		return "file-stat"
	case FrameFileManifest:
		return "file-manifest"
	case FrameFileResult:
		return "file-result"
	}
	if f, ok := messageTypes[t]; ok {
		return string(proto.MessageName(f()).Name())
	}
	return fmt.Sprintf("frame(%d)", uint8(t))
}

// AppendDataFrame appends b as a data frame.
func AppendDataFrame(dst []byte, b *Batch) []byte {
	return append(AppendDataHeader(dst, b.Dest, b.Count, len(b.Buf)), b.Buf...)
}

// AppendDataHeader appends what precedes the records of a data frame for
// task dest holding count tuples in recordsLen bytes: the frame header
// (length, type) and the destination and count.
func AppendDataHeader(dst []byte, dest uint32, count, recordsLen int) []byte {
	return AppendDataBody(AppendLength(dst, DataBodySize(recordsLen)), dest, count, nil)
}

// AppendDataBody appends the body of a data frame (type byte, destination,
// count, records): a frame without its length, as the direct hand-off
// carries it.
func AppendDataBody(dst []byte, dest uint32, count int, records []byte) []byte {
	dst = append(dst, byte(FrameData))
	dst = binary.BigEndian.AppendUint32(dst, dest)
	dst = binary.BigEndian.AppendUint32(dst, uint32(count))
	return append(dst, records...)
}

// DataHeaderSize is the size of what precedes a data frame's records: the
// frame header, then the destination and count.
const DataHeaderSize = HeaderSize + dataHeaderSize

// ParseFrameHeader reads a frame header (HeaderSize bytes): the length of
// the body (type byte and payload) and the type.
func ParseFrameHeader(h []byte) (bodyLen int, t FrameType) {
	return int(binary.BigEndian.Uint32(h)), FrameType(h[4])
}

// ParseDataHeader reads the destination and count of a data frame from
// the bytes after its frame header (DataHeaderSize-HeaderSize of them).
func ParseDataHeader(p []byte) (dest uint32, count int) {
	return binary.BigEndian.Uint32(p), int(binary.BigEndian.Uint32(p[4:]))
}

// DataBodySize is the size of the body of a data frame with recordsLen
// bytes of records, which the frame limit bounds.
func DataBodySize(recordsLen int) int { return 1 + dataHeaderSize + recordsLen }

// AppendFrameHeader appends the header of a frame of type t with payloadLen
// bytes of payload: the body's length, then the type byte.
func AppendFrameHeader(dst []byte, t FrameType, payloadLen int) []byte {
	return append(AppendLength(dst, 1+payloadLen), byte(t))
}

// beginFrame appends the header of a frame of type t whose payload is
// appended next; endFrame, given the returned start, fills its length in.
func beginFrame(dst []byte, t FrameType) ([]byte, int) {
	return append(dst, 0, 0, 0, 0, byte(t)), len(dst)
}

func endFrame(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// AppendLength appends the length prefix of a frame whose body (type byte
// and payload) is bodyLen bytes.
func AppendLength(dst []byte, bodyLen int) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(bodyLen))
}

// ParseDataFrame splits a data frame's payload into its destination task,
// tuple count and records. The records are not checked; RecordReader does.
func ParseDataFrame(payload []byte) (dest uint32, count int, records []byte, err error) {
	if len(payload) < dataHeaderSize {
		return 0, 0, nil, fmt.Errorf("%w: data frame of %d bytes is shorter than its %d-byte header", ErrCorrupt, len(payload), dataHeaderSize)
	}
	dest = binary.BigEndian.Uint32(payload)
	n := binary.BigEndian.Uint32(payload[4:])
	records = payload[dataHeaderSize:]
	if uint64(n) > uint64(len(records)) {
		return 0, 0, nil, fmt.Errorf("%w: data frame claims %d tuples in %d bytes", ErrCorrupt, n, len(records))
	}
	return dest, int(n), records, nil
}

// DataFrameDest returns the destination task of a data frame body (type
// byte included) without parsing the rest: what a stream manager routes by.
func DataFrameDest(body []byte) (uint32, error) {
	if len(body) < 1+dataHeaderSize || FrameType(body[0]) != FrameData {
		return 0, fmt.Errorf("%w: not a data frame", ErrCorrupt)
	}
	return binary.BigEndian.Uint32(body[1:]), nil
}

// AppendMessage appends m as a control frame.
func AppendMessage(dst []byte, m proto.Message) ([]byte, error) {
	t, ok := frameTypeOf[string(proto.MessageName(m))]
	if !ok {
		return dst, fmt.Errorf("wire: %s has no frame type", proto.MessageName(m))
	}
	dst, start := beginFrame(dst, t)
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, m)
	if err != nil {
		return dst[:start], fmt.Errorf("wire: encode %s: %w", proto.MessageName(m), err)
	}
	return endFrame(dst, start), nil
}

// DecodeMessage decodes a control frame's payload.
func DecodeMessage(t FrameType, payload []byte) (proto.Message, error) {
	f, ok := messageTypes[t]
	if !ok {
		return nil, fmt.Errorf("%w: unknown frame type %d", ErrCorrupt, uint8(t))
	}
	m := f()
	if err := proto.Unmarshal(payload, m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, t, err)
	}
	return m, nil
}

// IsFileFrame reports whether t is a frame of daemons/ckptio's protocol.
func IsFileFrame(t FrameType) bool { return t >= FrameFileCreate && t <= FrameFileResult }

// ErrFrameTooLarge is returned for a frame above the reader's limit.
var ErrFrameTooLarge = errors.New("frame too large")

// ReadFrame reads one frame from r into buf (grown as needed, up to max
// bytes of body) and returns its type, its payload (aliasing the returned
// buffer) and the buffer for reuse. A frame above max, a zero-length frame
// or an unknown type is an error; the connection should then be closed.
func ReadFrame(r *bufio.Reader, buf []byte, max int) (t FrameType, payload, newBuf []byte, err error) {
	// Peek does not allocate; an array passed to io.ReadFull would
	// escape to the heap on every frame.
	hdr, err := r.Peek(4)
	if err != nil {
		if len(hdr) > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, buf, err
	}
	n := binary.BigEndian.Uint32(hdr)
	_, _ = r.Discard(4)
	if n == 0 {
		return 0, nil, buf, fmt.Errorf("%w: empty frame", ErrCorrupt)
	}
	if uint64(n) > uint64(max) {
		return 0, nil, buf, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, max)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	body := buf[:n]
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, buf, err
	}
	t = FrameType(body[0])
	if _, known := messageTypes[t]; !known && t != FrameData && t != FrameBackPressure && t != FrameBarrier && t != FrameEpoch && !IsAckFrame(t) && !IsFileFrame(t) {
		return 0, nil, buf, fmt.Errorf("%w: unknown frame type %d", ErrCorrupt, body[0])
	}
	return t, body[1:], buf, nil
}

// AppendFrame appends a frame with the given type and payload; a stream
// manager uses it to forward a frame it read without decoding it.
func AppendFrame(dst []byte, t FrameType, payload []byte) []byte {
	return append(AppendFrameHeader(dst, t, len(payload)), payload...)
}
