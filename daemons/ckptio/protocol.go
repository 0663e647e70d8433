package ckptio

import (
	"encoding/binary"
	"fmt"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/wire"
)

// Msg is one message of the protocol, as a frame of package wire carries
// it. Which fields are set depends on Type:
//
//	FrameFileCreate   Name                  start writing a file on this connection (no answer)
//	FrameFileChunk    Data                  the next bytes of the file written, or read
//	FrameFileCommit   Size, Sum             the file is complete: Result (Values: its size)
//	FrameFileOpen     Name                  Result (Values: the size), Chunks, Result (the end)
//	FrameFileStat     Names                 Result (Values: each file's size, -1 if absent)
//	FrameFileManifest Checkpoint, Task      the stored manifest: as FrameFileOpen
//	FrameFileResult   Status, Error, Values the answer to a request
type Msg struct {
	Type       wire.FrameType
	Name       string
	Names      []string
	Data       []byte // aliases the frame's payload
	Size       int64
	Sum        uint64
	Checkpoint int64
	Task       int32
	Status     Status
	Error      string
	Values     []int64
}

// Status is the outcome a Result reports.
type Status uint8

// Statuses.
const (
	StatusOK Status = iota
	// StatusNotFound: the file or the manifest does not exist.
	StatusNotFound
	// StatusFailed: the storage or the request failed (Error says why).
	StatusFailed
)

// Bounds of what a decoder accepts.
const (
	maxStatNames = 1 << 16
	maxErrorText = 64 << 10
)

// AppendMsg appends m as a frame (header included).
func AppendMsg(dst []byte, m *Msg) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, byte(m.Type))
	switch m.Type {
	case wire.FrameFileCreate, wire.FrameFileOpen:
		dst = appendString(dst, m.Name)
	case wire.FrameFileChunk:
		dst = append(dst, m.Data...)
	case wire.FrameFileCommit:
		dst = binary.AppendUvarint(dst, uint64(m.Size))
		dst = binary.BigEndian.AppendUint64(dst, m.Sum)
	case wire.FrameFileStat:
		dst = binary.AppendUvarint(dst, uint64(len(m.Names)))
		for _, n := range m.Names {
			dst = appendString(dst, n)
		}
	case wire.FrameFileManifest:
		dst = binary.AppendUvarint(dst, uint64(m.Checkpoint))
		dst = binary.AppendUvarint(dst, uint64(m.Task))
	case wire.FrameFileResult:
		dst = append(dst, byte(m.Status))
		dst = appendString(dst, m.Error)
		dst = binary.AppendUvarint(dst, uint64(len(m.Values)))
		for _, v := range m.Values {
			dst = binary.AppendVarint(dst, v)
		}
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// DecodeMsg decodes the payload of a frame of type t into m (reusing its
// slices); bytes that are not a message give an error wrapping ErrCorrupt.
func DecodeMsg(t wire.FrameType, payload []byte, m *Msg) error {
	*m = Msg{Type: t, Names: m.Names[:0], Values: m.Values[:0]}
	d := decoder{b: payload}
	switch t {
	case wire.FrameFileCreate, wire.FrameFileOpen:
		m.Name = d.string(spi.MaxFileName)
		if d.err == nil {
			if err := spi.CheckFileName(m.Name); err != nil {
				d.err = err
			}
		}
	case wire.FrameFileChunk:
		m.Data, d.b = payload, nil
	case wire.FrameFileCommit:
		m.Size = int64(d.uvarint(1 << 62))
		m.Sum = d.uint64()
	case wire.FrameFileStat:
		n := d.uvarint(maxStatNames)
		for i := uint64(0); i < n && d.err == nil; i++ {
			name := d.string(spi.MaxFileName)
			if d.err == nil {
				if err := spi.CheckFileName(name); err != nil {
					d.err = err
				}
			}
			m.Names = append(m.Names, name)
		}
	case wire.FrameFileManifest:
		m.Checkpoint = int64(d.uvarint(1 << 62))
		m.Task = int32(d.uvarint(1<<31 - 1))
	case wire.FrameFileResult:
		if len(d.b) == 0 {
			d.fail("empty result")
			break
		}
		m.Status, d.b = Status(d.b[0]), d.b[1:]
		if m.Status > StatusFailed {
			d.fail("unknown status %d", m.Status)
		}
		m.Error = d.string(maxErrorText)
		n := d.uvarint(maxStatNames)
		for i := uint64(0); i < n && d.err == nil; i++ {
			v, k := binary.Varint(d.b)
			if k <= 0 {
				d.fail("truncated value")
				break
			}
			m.Values, d.b = append(m.Values, v), d.b[k:]
		}
	default:
		d.fail("frame type %s is not a message of the checkpoint file protocol", t)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the message", len(d.b))
	}
	if d.err != nil {
		return fmt.Errorf("checkpoint file protocol: %w: %s frame: %w", ErrCorrupt, t, d.err)
	}
	return nil
}
