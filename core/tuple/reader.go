package tuple

import (
	"fmt"
	"math"
	"time"
)

// Reader reads encoded values one after another straight from a buffer,
// without boxing them into interfaces and without allocating. It is the
// fast way for a consumer to read typed fields:
//
//	var r tuple.Reader
//	r.Reset(encodedTuple)
//	n, err := r.Count()        // the value count written by AppendValues
//	word, err := r.StringBytes() // field 0, aliasing encodedTuple
//	count, err := r.Int()        // field 1
//
// Lists and maps are read in place: ListLen consumes a list header and the
// elements follow as ordinary values; MapLen consumes a map header and each
// entry follows as MapKey then a value. Skip passes over any value.
//
// A method that fails leaves the position unchanged, so after ErrWrongKind
// the caller may try another method. The zero Reader reads an empty buffer.
type Reader struct {
	b   []byte
	off int
}

// NewReader returns a Reader over b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Reset makes r read b from its start.
func (r *Reader) Reset(b []byte) { r.b, r.off = b, 0 }

// Offset returns the position of the next value in the buffer.
func (r *Reader) Offset() int { return r.off }

// Remaining returns the number of unread bytes.
func (r *Reader) Remaining() int { return len(r.b) - r.off }

// Done reports whether the whole buffer has been read.
func (r *Reader) Done() bool { return r.off >= len(r.b) }

// Kind returns the kind of the next value without consuming it, or
// KindInvalid at the end of the buffer or before an unknown tag.
func (r *Reader) Kind() Kind {
	if r.off >= len(r.b) {
		return KindInvalid
	}
	return tagKind[r.b[r.off]]
}

// Count reads a value count, as written at the start of AppendValues. It
// is bounded by the bytes that remain (every value takes at least one).
func (r *Reader) Count() (int, error) {
	n, next, err := readLen(r.b, r.off, 1)
	if err != nil {
		return 0, fmt.Errorf("tuple: value count: %w", err)
	}
	r.off = next
	return n, nil
}

func (r *Reader) tag() (byte, error) {
	if r.off >= len(r.b) {
		return 0, corruptf(r.off, "truncated: value expected")
	}
	return r.b[r.off], nil
}

func (r *Reader) wrongKind(want string) error {
	k := r.Kind()
	if k == KindInvalid && r.off < len(r.b) {
		return corruptf(r.off, "unknown tag 0x%02x", r.b[r.off])
	}
	return fmt.Errorf("tuple: at byte %d: want %s, found %v: %w", r.off, want, k, ErrWrongKind)
}

// Nil consumes a nil value.
func (r *Reader) Nil() error {
	t, err := r.tag()
	if err != nil {
		return err
	}
	if t != tagNil {
		return r.wrongKind("nil")
	}
	r.off++
	return nil
}

// Bool reads a bool.
func (r *Reader) Bool() (bool, error) {
	t, err := r.tag()
	if err != nil {
		return false, err
	}
	switch t {
	case tagFalse:
		r.off++
		return false, nil
	case tagTrue:
		r.off++
		return true, nil
	}
	return false, r.wrongKind("bool")
}

// Int reads an integer of any width, signed or unsigned, whose value fits
// int64. time.Duration is not an integer here; use Duration.
func (r *Reader) Int() (int64, error) {
	t, err := r.tag()
	if err != nil {
		return 0, err
	}
	switch tagKind[t] {
	case KindInt, KindInt8, KindInt16, KindInt32, KindInt64:
		v, next, err := readSigned(r.b, r.off+1, t)
		if err != nil {
			return 0, err
		}
		r.off = next
		return v, nil
	case KindUint, KindUint8, KindUint16, KindUint32, KindUint64:
		u, next, err := readUnsigned(r.b, r.off+1, t)
		if err != nil {
			return 0, err
		}
		if u > math.MaxInt64 {
			return 0, fmt.Errorf("tuple: at byte %d: %v %d overflows int64: %w", r.off, tagKind[t], u, ErrWrongKind)
		}
		r.off = next
		return int64(u), nil
	}
	return 0, r.wrongKind("an integer")
}

// Uint reads a non-negative integer of any width, signed or unsigned.
func (r *Reader) Uint() (uint64, error) {
	t, err := r.tag()
	if err != nil {
		return 0, err
	}
	switch tagKind[t] {
	case KindUint, KindUint8, KindUint16, KindUint32, KindUint64:
		u, next, err := readUnsigned(r.b, r.off+1, t)
		if err != nil {
			return 0, err
		}
		r.off = next
		return u, nil
	case KindInt, KindInt8, KindInt16, KindInt32, KindInt64:
		v, next, err := readSigned(r.b, r.off+1, t)
		if err != nil {
			return 0, err
		}
		if v < 0 {
			return 0, fmt.Errorf("tuple: at byte %d: %v %d is negative: %w", r.off, tagKind[t], v, ErrWrongKind)
		}
		r.off = next
		return uint64(v), nil
	}
	return 0, r.wrongKind("an integer")
}

// Float reads a float32 (converted to float64 exactly, except that the
// conversion may quiet a signalling NaN) or a float64.
func (r *Reader) Float() (float64, error) {
	t, err := r.tag()
	if err != nil {
		return 0, err
	}
	switch t {
	case tagFloat32:
		f, next, err := readFloat32(r.b, r.off+1)
		if err != nil {
			return 0, err
		}
		r.off = next
		return float64(f), nil
	case tagFloat64:
		f, next, err := readFloat64(r.b, r.off+1)
		if err != nil {
			return 0, err
		}
		r.off = next
		return f, nil
	}
	return 0, r.wrongKind("a float")
}

// Float32 reads a float32 only, bit for bit.
func (r *Reader) Float32() (float32, error) {
	t, err := r.tag()
	if err != nil {
		return 0, err
	}
	if t != tagFloat32 {
		return 0, r.wrongKind("float32")
	}
	f, next, err := readFloat32(r.b, r.off+1)
	if err != nil {
		return 0, err
	}
	r.off = next
	return f, nil
}

// StringBytes reads a string or a []byte and returns its bytes, aliasing
// the buffer (copy them to keep them after the buffer is reused).
func (r *Reader) StringBytes() ([]byte, error) {
	t, err := r.tag()
	if err != nil {
		return nil, err
	}
	if t != tagString && t != tagBytes {
		return nil, r.wrongKind("a string or []byte")
	}
	s, next, err := readBytes(r.b, r.off+1)
	if err != nil {
		return nil, err
	}
	r.off = next
	return s, nil
}

// StringValue reads a string or a []byte as a new string (one allocation
// unless empty).
func (r *Reader) StringValue() (string, error) {
	s, err := r.StringBytes()
	return string(s), err
}

// Time reads a time.Time, in UTC.
func (r *Reader) Time() (time.Time, error) {
	t, err := r.tag()
	if err != nil {
		return time.Time{}, err
	}
	if t != tagTime {
		return time.Time{}, r.wrongKind("time.Time")
	}
	sec, nsec, next, err := readTime(r.b, r.off+1)
	if err != nil {
		return time.Time{}, err
	}
	r.off = next
	return time.Unix(sec, nsec).UTC(), nil
}

// Duration reads a time.Duration.
func (r *Reader) Duration() (time.Duration, error) {
	t, err := r.tag()
	if err != nil {
		return 0, err
	}
	if t != tagDuration {
		return 0, r.wrongKind("time.Duration")
	}
	v, next, err := readSigned(r.b, r.off+1, t)
	if err != nil {
		return 0, err
	}
	r.off = next
	return time.Duration(v), nil
}

// ListLen consumes the header of a list and returns its length; the
// elements follow as values. The length is bounded by the remaining bytes.
func (r *Reader) ListLen() (int, error) {
	t, err := r.tag()
	if err != nil {
		return 0, err
	}
	if t != tagList {
		return 0, r.wrongKind("a list")
	}
	n, next, err := readLen(r.b, r.off+1, 1)
	if err != nil {
		return 0, err
	}
	r.off = next
	return n, nil
}

// MapLen consumes the header of a map and returns its number of entries;
// each entry follows as MapKey then a value, keys in ascending byte order.
func (r *Reader) MapLen() (int, error) {
	t, err := r.tag()
	if err != nil {
		return 0, err
	}
	if t != tagMap {
		return 0, r.wrongKind("a map")
	}
	n, next, err := readLen(r.b, r.off+1, 2)
	if err != nil {
		return 0, err
	}
	r.off = next
	return n, nil
}

// MapKey reads the key of a map entry (untagged), aliasing the buffer. Call
// it only where a key is due, after MapLen or after the previous entry's
// value.
func (r *Reader) MapKey() ([]byte, error) {
	k, next, err := readBytes(r.b, r.off)
	if err != nil {
		return nil, err
	}
	r.off = next
	return k, nil
}

// User reads a user value and returns its type id and payload (aliasing
// the buffer), without needing its codec.
func (r *Reader) User() (id uint16, payload []byte, err error) {
	t, err := r.tag()
	if err != nil {
		return 0, nil, err
	}
	if t != tagUser {
		return 0, nil, r.wrongKind("a user value")
	}
	id, payload, next, err := readUser(r.b, r.off+1)
	if err != nil {
		return 0, nil, err
	}
	r.off = next
	return id, payload, nil
}

// SkipScalar validates and skips the next value and returns its kind and,
// for a string or []byte, its bytes (aliasing the buffer). A list, map or
// user value is not consumed: SkipScalar returns its kind alone, and the
// caller reads it with Value or Raw. It is Kind followed by StringBytes or
// Skip in one call, for decoders that validate every value of a tuple.
func (r *Reader) SkipScalar() (Kind, []byte, error) {
	b, off := r.b, r.off
	if off >= len(b) {
		return KindInvalid, nil, corruptf(off, "truncated: value expected")
	}
	tag := b[off]
	switch tag {
	case tagString, tagBytes:
		if p := off + 1; p < len(b) && int(b[p]) < min(0x80, len(b)-p) {
			// A one-byte length that fits.
			end := p + 1 + int(b[p])
			r.off = end
			return tagKind[tag], b[p+1 : end : end], nil
		}
		s, next, err := readBytes(b, off+1)
		if err != nil {
			return KindInvalid, nil, err
		}
		r.off = next
		return tagKind[tag], s, nil
	case tagInt, tagInt64, tagUint, tagUint64, tagDuration:
		// 64-bit: a canonical varint is all there is to check.
		next, err := skipUvarint(b, off+1)
		if err != nil {
			return KindInvalid, nil, err
		}
		r.off = next
		return tagKind[tag], nil, nil
	case tagList, tagMap, tagUser:
		return tagKind[tag], nil, nil
	}
	next, err := skipValue(b, off, 0)
	if err != nil {
		return KindInvalid, nil, err
	}
	r.off = next
	return tagKind[tag], nil, nil
}

// Skip validates and passes over the next value, lists and maps included.
func (r *Reader) Skip() error {
	_, err := r.Raw()
	return err
}

// Raw validates the next value and returns its whole encoding, aliasing the
// buffer; it can be copied into another tuple verbatim.
func (r *Reader) Raw() ([]byte, error) {
	next, err := skipValue(r.b, r.off, 0)
	if err != nil {
		return nil, err
	}
	raw := r.b[r.off:next:next]
	r.off = next
	return raw, nil
}

// Value decodes the next value into a Go value, as DecodeValue does
// (allocating; user values through reg).
func (r *Reader) Value(reg *Registry) (any, error) {
	v, next, err := decodeValue(r.b, r.off, reg, 0)
	if err != nil {
		return nil, err
	}
	r.off = next
	return v, nil
}
