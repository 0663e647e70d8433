package tuple

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"
)

// DecodeValues decodes a tuple written by AppendValues and appends its
// values to dst. The whole of src must be one tuple: trailing bytes are
// corrupt. Strings and byte slices are copied, so the result does not
// alias src. User values are decoded with the codecs in reg; an id without
// a codec is an error wrapping ErrNoCodec, and a codec's Decode error is
// wrapped together with ErrCorrupt.
func DecodeValues(src []byte, dst []any, reg *Registry) ([]any, error) {
	n, off, err := readLen(src, 0, 1)
	if err != nil {
		return dst, fmt.Errorf("tuple: value count: %w", err)
	}
	start := len(dst)
	dst = slices.Grow(dst, n)
	for i := 0; i < n; i++ {
		var v any
		v, off, err = decodeValue(src, off, reg, 0)
		if err != nil {
			return dst[:start], fmt.Errorf("tuple: value %d: %w", i, err)
		}
		dst = append(dst, v)
	}
	if off != len(src) {
		return dst[:start], corruptf(off, "%d trailing bytes after %d values", len(src)-off, n)
	}
	return dst, nil
}

// DecodeValue decodes the single value at the start of src (as written by
// AppendValue) and returns it with the number of bytes it used.
func DecodeValue(src []byte, reg *Registry) (v any, n int, err error) {
	return decodeValue(src, 0, reg, 0)
}

// ValueBounds finds where each value of the encoded tuple src (as written by
// AppendValues) starts, for lazy field access. For a tuple of n values it
// appends n+1 offsets to offs: with k = len(offs) on entry, value i is
// src[offs[k+i]:offs[k+i+1]], which a Reader or DecodeValue can read. It validates the
// whole tuple as the decoder does (user values need no codec) and does not
// allocate when offs has capacity for n+1 offsets.
func ValueBounds(src []byte, offs []int32) ([]int32, error) {
	if len(src) > math.MaxInt32 {
		return offs, fmt.Errorf("tuple: encoded tuple of %d bytes exceeds 2 GiB: %w", len(src), ErrCorrupt)
	}
	n, off, err := readLen(src, 0, 1)
	if err != nil {
		return offs, fmt.Errorf("tuple: value count: %w", err)
	}
	start := len(offs)
	offs = slices.Grow(offs, n+1)
	for i := 0; i < n; i++ {
		offs = append(offs, int32(off))
		off, err = skipValue(src, off, 0)
		if err != nil {
			return offs[:start], fmt.Errorf("tuple: value %d: %w", i, err)
		}
	}
	if off != len(src) {
		return offs[:start], corruptf(off, "%d trailing bytes after %d values", len(src)-off, n)
	}
	return append(offs, int32(off)), nil
}

// --- payload readers shared by the decoder, the Reader, the validator and
// the hash. Each takes the offset just after the tag and returns the offset
// after the payload.

func readSigned(b []byte, p int, tag byte) (int64, int, error) {
	u, next, err := readUvarint(b, p)
	if err != nil {
		return 0, p, err
	}
	v := unzigzag(u)
	if w := signedBits(tag); w < 64 && (v < -1<<(w-1) || v >= 1<<(w-1)) {
		return 0, p, corruptf(p, "%d does not fit %v", v, tagKind[tag])
	}
	return v, next, nil
}

func readUnsigned(b []byte, p int, tag byte) (uint64, int, error) {
	u, next, err := readUvarint(b, p)
	if err != nil {
		return 0, p, err
	}
	if w := unsignedBits(tag); w < 64 && u >= 1<<w {
		return 0, p, corruptf(p, "%d does not fit %v", u, tagKind[tag])
	}
	return u, next, nil
}

func readFixed(b []byte, p int, size int) ([]byte, int, error) {
	if len(b)-p < size {
		return nil, p, corruptf(p, "truncated: %d-byte float expected", size)
	}
	return b[p : p+size], p + size, nil
}

func readFloat32(b []byte, p int) (float32, int, error) {
	f, next, err := readFixed(b, p, 4)
	if err != nil {
		return 0, p, err
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(f)), next, nil
}

func readFloat64(b []byte, p int) (float64, int, error) {
	f, next, err := readFixed(b, p, 8)
	if err != nil {
		return 0, p, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(f)), next, nil
}

// readBytes reads a uvarint length and that many bytes (aliasing b).
func readBytes(b []byte, p int) ([]byte, int, error) {
	n, q, err := readLen(b, p, 1)
	if err != nil {
		return nil, p, err
	}
	return b[q : q+n : q+n], q + n, nil
}

// minUnixSec and maxUnixSec bound the Unix seconds of an encoded time to
// those a time.Time can represent exactly.
const (
	unixToInternal = 62135596800 // seconds from 0001-01-01 to 1970-01-01
	minUnixSec     = math.MinInt64 + unixToInternal
	maxUnixSec     = math.MaxInt64 - unixToInternal
)

func readTime(b []byte, p int) (sec int64, nsec int64, next int, err error) {
	sec, q, err := readSigned(b, p, tagInt64)
	if err != nil {
		return 0, 0, p, err
	}
	ns, q, err := readUvarint(b, q)
	if err != nil {
		return 0, 0, p, err
	}
	if ns >= 1e9 {
		return 0, 0, p, corruptf(p, "time nanoseconds %d out of range [0, 1e9)", ns)
	}
	if sec < minUnixSec || sec > maxUnixSec {
		return 0, 0, p, corruptf(p, "time Unix seconds %d out of range", sec)
	}
	return sec, int64(ns), q, nil
}

func readUser(b []byte, p int) (id uint16, payload []byte, next int, err error) {
	if len(b)-p < 2 {
		return 0, nil, p, corruptf(p, "truncated: user type id expected")
	}
	id = binary.LittleEndian.Uint16(b[p:])
	n, q, err := readLen(b, p+2, 1)
	if err != nil {
		return 0, nil, p, err
	}
	return id, b[q : q+n : q+n], q + n, nil
}

// readKey reads a map key and checks it sorts strictly after prev.
func readKey(b []byte, p int, prev []byte, first bool) ([]byte, int, error) {
	k, next, err := readBytes(b, p)
	if err != nil {
		return nil, p, err
	}
	if !first && bytes.Compare(prev, k) >= 0 {
		return nil, p, corruptf(p, "map key %q does not sort after %q (keys must be unique and ascending)", k, prev)
	}
	return k, next, nil
}

func tooDeep(off int) error {
	return fmt.Errorf("tuple: at byte %d: %w (more than %d levels): %w", off, ErrTooDeep, MaxDepth, ErrCorrupt)
}

// skipValue validates the value at b[off:] and returns the offset after it.
func skipValue(b []byte, off int, depth int) (int, error) {
	if off >= len(b) {
		return off, corruptf(off, "truncated: value expected")
	}
	tag, p := b[off], off+1
	var err error
	switch tag {
	case tagNil, tagFalse, tagTrue:
		return p, nil
	case tagInt, tagInt8, tagInt16, tagInt32, tagInt64, tagDuration:
		_, p, err = readSigned(b, p, tag)
	case tagUint, tagUint8, tagUint16, tagUint32, tagUint64:
		_, p, err = readUnsigned(b, p, tag)
	case tagFloat32:
		_, p, err = readFixed(b, p, 4)
	case tagFloat64:
		_, p, err = readFixed(b, p, 8)
	case tagString, tagBytes:
		_, p, err = readBytes(b, p)
	case tagTime:
		_, _, p, err = readTime(b, p)
	case tagUser:
		_, _, p, err = readUser(b, p)
	case tagList:
		if depth >= MaxDepth {
			return off, tooDeep(off)
		}
		var n int
		n, p, err = readLen(b, p, 1)
		for i := 0; i < n && err == nil; i++ {
			p, err = skipValue(b, p, depth+1)
		}
	case tagMap:
		if depth >= MaxDepth {
			return off, tooDeep(off)
		}
		var n int
		var k []byte
		n, p, err = readLen(b, p, 2)
		for i := 0; i < n && err == nil; i++ {
			k, p, err = readKey(b, p, k, i == 0)
			if err == nil {
				p, err = skipValue(b, p, depth+1)
			}
		}
	default:
		return off, corruptf(off, "unknown tag 0x%02x", tag)
	}
	if err != nil {
		return off, err
	}
	return p, nil
}

// decodeValue decodes the value at b[off:] into a Go value.
func decodeValue(b []byte, off int, reg *Registry, depth int) (any, int, error) {
	if off >= len(b) {
		return nil, off, corruptf(off, "truncated: value expected")
	}
	tag, p := b[off], off+1
	switch tag {
	case tagNil:
		return nil, p, nil
	case tagFalse:
		return false, p, nil
	case tagTrue:
		return true, p, nil
	case tagInt, tagInt8, tagInt16, tagInt32, tagInt64, tagDuration:
		v, next, err := readSigned(b, p, tag)
		if err != nil {
			return nil, off, err
		}
		switch tag {
		case tagInt:
			if int64(int(v)) != v {
				return nil, off, corruptf(p, "%d does not fit int on this platform", v)
			}
			return int(v), next, nil
		case tagInt8:
			return int8(v), next, nil
		case tagInt16:
			return int16(v), next, nil
		case tagInt32:
			return int32(v), next, nil
		case tagDuration:
			return time.Duration(v), next, nil
		}
		return v, next, nil
	case tagUint, tagUint8, tagUint16, tagUint32, tagUint64:
		u, next, err := readUnsigned(b, p, tag)
		if err != nil {
			return nil, off, err
		}
		switch tag {
		case tagUint:
			if uint64(uint(u)) != u {
				return nil, off, corruptf(p, "%d does not fit uint on this platform", u)
			}
			return uint(u), next, nil
		case tagUint8:
			return uint8(u), next, nil
		case tagUint16:
			return uint16(u), next, nil
		case tagUint32:
			return uint32(u), next, nil
		}
		return u, next, nil
	case tagFloat32:
		f, next, err := readFloat32(b, p)
		if err != nil {
			return nil, off, err
		}
		return f, next, nil
	case tagFloat64:
		f, next, err := readFloat64(b, p)
		if err != nil {
			return nil, off, err
		}
		return f, next, nil
	case tagString:
		s, next, err := readBytes(b, p)
		if err != nil {
			return nil, off, err
		}
		return string(s), next, nil
	case tagBytes:
		s, next, err := readBytes(b, p)
		if err != nil {
			return nil, off, err
		}
		return append([]byte{}, s...), next, nil
	case tagTime:
		sec, nsec, next, err := readTime(b, p)
		if err != nil {
			return nil, off, err
		}
		return time.Unix(sec, nsec).UTC(), next, nil
	case tagUser:
		id, payload, next, err := readUser(b, p)
		if err != nil {
			return nil, off, err
		}
		e := reg.lookupID(id)
		if e == nil {
			return nil, off, fmt.Errorf("tuple: at byte %d: user type id %d: %w; register its Codec in the Registry passed to the decoder", off, id, ErrNoCodec)
		}
		v, err := e.codec.Decode(payload)
		if err != nil {
			return nil, off, fmt.Errorf("tuple: at byte %d: codec for %v (user type id %d) rejected its payload: %w: %w", off, e.typ, id, err, ErrCorrupt)
		}
		return v, next, nil
	case tagList:
		if depth >= MaxDepth {
			return nil, off, tooDeep(off)
		}
		n, q, err := readLen(b, p, 1)
		if err != nil {
			return nil, off, err
		}
		l := make([]any, n)
		for i := range l {
			l[i], q, err = decodeValue(b, q, reg, depth+1)
			if err != nil {
				return nil, off, err
			}
		}
		return l, q, nil
	case tagMap:
		if depth >= MaxDepth {
			return nil, off, tooDeep(off)
		}
		n, q, err := readLen(b, p, 2)
		if err != nil {
			return nil, off, err
		}
		m := make(map[string]any, n)
		var k []byte
		for i := 0; i < n; i++ {
			k, q, err = readKey(b, q, k, i == 0)
			if err != nil {
				return nil, off, err
			}
			var v any
			v, q, err = decodeValue(b, q, reg, depth+1)
			if err != nil {
				return nil, off, err
			}
			m[string(k)] = v
		}
		return m, q, nil
	}
	return nil, off, corruptf(off, "unknown tag 0x%02x", tag)
}
