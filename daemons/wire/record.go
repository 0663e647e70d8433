package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrCorrupt is wrapped by every decoding error of this package.
var ErrCorrupt = errors.New("corrupt data-plane message")

// MaxRoots bounds the roots one tuple may carry (a tuple anchored to many
// inputs); a record claiming more is corrupt.
const MaxRoots = 1 << 12

// Root identifies one spout tuple tree a tuple belongs to: the spout task
// that owns the tree and the tree's random 64-bit id.
type Root struct {
	Task uint32
	ID   uint64
}

// Header is the routing and acking part of a tuple record.
type Header struct {
	// SrcTask is the emitting task.
	SrcTask uint32
	// Stream is the stream's index in the topology's StreamTable.
	Stream uint32
	// Edge is the tuple's random acking id; 0 for untracked tuples.
	Edge uint64
	// Roots are the tuple trees the tuple belongs to (empty if untracked).
	Roots []Root
}

// AppendRecord appends one tuple record to dst: a uvarint length of the
// rest, then the header, then values (encoded with core/tuple). It does not
// allocate when dst has room.
func AppendRecord(dst []byte, h *Header, values []byte) []byte {
	n := uvarintLen(uint64(h.SrcTask)) + uvarintLen(uint64(h.Stream)) + 8 +
		uvarintLen(uint64(len(h.Roots))) + len(values)
	for _, r := range h.Roots {
		n += uvarintLen(uint64(r.Task)) + 8
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	return append(appendHeader(dst, h), values...)
}

// appendHeader appends the header of a record (after its length).
func appendHeader(dst []byte, h *Header) []byte {
	dst = binary.AppendUvarint(dst, uint64(h.SrcTask))
	dst = binary.AppendUvarint(dst, uint64(h.Stream))
	dst = binary.LittleEndian.AppendUint64(dst, h.Edge)
	dst = binary.AppendUvarint(dst, uint64(len(h.Roots)))
	for _, r := range h.Roots {
		dst = binary.AppendUvarint(dst, uint64(r.Task))
		dst = binary.LittleEndian.AppendUint64(dst, r.ID)
	}
	return dst
}

// BeginRecord starts a record whose values the caller encodes in place,
// appended to the returned slice, without a copy; EndRecord(dst, start)
// completes it. It appends h after one byte reserved for the length.
func BeginRecord(dst []byte, h *Header) (out []byte, start int) {
	start = len(dst)
	return appendHeader(append(dst, 0), h), start
}

// EndRecord sets the length of the record BeginRecord started at start
// in dst, moving its contents when the length needs more than the one
// byte reserved (records of 128 bytes or more).
func EndRecord(dst []byte, start int) []byte {
	n := len(dst) - start - 1
	if n < 0x80 {
		dst[start] = byte(n)
		return dst
	}
	k := uvarintLen(uint64(n))
	dst = append(dst, make([]byte, k-1)...)
	copy(dst[start+k:], dst[start+1:start+1+n])
	binary.PutUvarint(dst[start:], uint64(n))
	return dst
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// RecordReader iterates over the records of a batch without allocating:
// the Header's Roots slice and the returned values alias reader-owned
// memory and the batch buffer, valid until the next call.
type RecordReader struct {
	buf   []byte
	off   int
	roots []Root
}

// Reset starts reading buf.
func (r *RecordReader) Reset(buf []byte) {
	r.buf, r.off = buf, 0
}

// More reports whether records remain.
func (r *RecordReader) More() bool { return r.off < len(r.buf) }

// uvarint reads a uvarint at b[p:]; one-byte values, the common case of
// task and stream numbers, take the inlined fast path.
func uvarint(b []byte, p int) (uint64, int) {
	// The one-byte case is small enough to inline.
	if p < len(b) && b[p] < 0x80 {
		return uint64(b[p]), 1
	}
	return uvarintLong(b, p)
}

func uvarintLong(b []byte, p int) (uint64, int) { return binary.Uvarint(b[p:]) }

// Next decodes the next record into h and returns its encoded values.
func (r *RecordReader) Next(h *Header) (values []byte, err error) {
	// Lengths, tasks, streams and root counts below 128 take one byte:
	// that case is read inline, the rest by uvarint.
	var n uint64
	k := 0
	if r.off < len(r.buf) && r.buf[r.off] < 0x80 {
		n, k = uint64(r.buf[r.off]), 1
	} else {
		n, k = uvarint(r.buf, r.off)
	}
	if k <= 0 || n > uint64(len(r.buf)-r.off-k) {
		return nil, fmt.Errorf("%w: record length at offset %d", ErrCorrupt, r.off)
	}
	rec := r.buf[r.off+k : r.off+k+int(n)]
	r.off += k + int(n)
	var src, stream, nroots uint64
	p := 0
	if len(rec) >= 2 && rec[0] < 0x80 && rec[1] < 0x80 {
		src, stream, p = uint64(rec[0]), uint64(rec[1]), 2
	} else {
		if src, p = uvarint(rec, 0); p <= 0 {
			return nil, recordErr("source task")
		}
		if stream, k = uvarint(rec, p); k <= 0 {
			return nil, recordErr("stream")
		}
		p += k
	}
	if len(rec)-p < 9 {
		return nil, fmt.Errorf("%w: record edge id or root count truncated", ErrCorrupt)
	}
	edge := binary.LittleEndian.Uint64(rec[p:])
	p += 8
	if rec[p] < 0x80 {
		nroots, k = uint64(rec[p]), 1
	} else if nroots, k = uvarint(rec, p); k <= 0 {
		return nil, recordErr("root count")
	}
	p += k
	if nroots > MaxRoots || nroots*9 > uint64(len(rec)-p) {
		return nil, fmt.Errorf("%w: record claims %d roots", ErrCorrupt, nroots)
	}
	if src > 1<<31 || stream > 1<<31 {
		return nil, fmt.Errorf("%w: record task or stream out of range", ErrCorrupt)
	}
	r.roots = r.roots[:0]
	for i := uint64(0); i < nroots; i++ {
		task, k := uvarint(rec, p)
		if k <= 0 {
			return nil, recordErr("root task")
		}
		p += k
		if task > 1<<31 || len(rec)-p < 8 {
			return nil, fmt.Errorf("%w: record root truncated", ErrCorrupt)
		}
		r.roots = append(r.roots, Root{Task: uint32(task), ID: binary.LittleEndian.Uint64(rec[p:])})
		p += 8
	}
	h.SrcTask, h.Stream, h.Edge, h.Roots = uint32(src), uint32(stream), edge, r.roots
	return rec[p:], nil
}

func recordErr(what string) error { return fmt.Errorf("%w: record %s", ErrCorrupt, what) }

// Batch is a sequence of tuple records for one destination task.
type Batch struct {
	Dest  uint32
	Count int
	Buf   []byte
}

// Reset empties the batch for reuse, keeping its buffer.
func (b *Batch) Reset(dest uint32) {
	b.Dest, b.Count, b.Buf = dest, 0, b.Buf[:0]
}
