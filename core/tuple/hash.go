package tuple

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Canonical hash classes: the first byte of each value's canonical hash
// input (docs/tuple-format.md, "Fields-grouping hash"). They are independent of the
// wire tags, so the hash depends on the logical value only.
const (
	hNil      byte = 0x00
	hBool     byte = 0x01
	hInt      byte = 0x02
	hUint     byte = 0x03
	hFloat    byte = 0x04
	hBytes    byte = 0x05
	hTime     byte = 0x06
	hDuration byte = 0x07
	hList     byte = 0x08
	hMap      byte = 0x09
	hUser     byte = 0x0A
)

// canonicalNaN is the float64 bit pattern every NaN hashes as.
const canonicalNaN = 0x7FF8000000000000

// hasher feeds canonical hash input to XXH64 (seed 0). Input is gathered
// in buf and hashed in one shot when it fits (the common case of a short
// key), else streamed through d. It lives on the caller's stack.
type hasher struct {
	n       int
	spilled bool
	d       xxhash.Digest
	buf     [128]byte
	// collect, when set, makes the hasher gather its input in out
	// instead of hashing it (AppendKey).
	collect bool
	out     []byte
}

func (h *hasher) flush() {
	if h.collect {
		h.out = append(h.out, h.buf[:h.n]...)
		h.n = 0
		return
	}
	if !h.spilled {
		h.d.Reset()
		h.spilled = true
	}
	h.d.Write(h.buf[:h.n])
	h.n = 0
}

func (h *hasher) room(k int) {
	if h.n+k > len(h.buf) {
		h.flush()
	}
}

func (h *hasher) class(c byte) {
	h.room(1)
	h.buf[h.n] = c
	h.n++
}

// word writes a class byte and a little-endian 64-bit word.
func (h *hasher) word(c byte, x uint64) {
	h.room(9)
	h.buf[h.n] = c
	binary.LittleEndian.PutUint64(h.buf[h.n+1:], x)
	h.n += 9
}

func (h *hasher) bytes(p []byte) {
	if len(p) > len(h.buf)-h.n {
		h.flush()
		if len(p) >= len(h.buf) {
			if h.collect {
				h.out = append(h.out, p...)
			} else {
				h.d.Write(p)
			}
			return
		}
	}
	h.n += copy(h.buf[h.n:], p)
}

func (h *hasher) str(s string) {
	if len(s) > len(h.buf)-h.n {
		h.flush()
		if len(s) >= len(h.buf) {
			if h.collect {
				h.out = append(h.out, s...)
			} else {
				h.d.WriteString(s)
			}
			return
		}
	}
	h.n += copy(h.buf[h.n:], s)
}

func (h *hasher) sum() uint64 {
	if !h.spilled {
		return xxhash.Sum64(h.buf[:h.n])
	}
	h.flush()
	return h.d.Sum64()
}

func (h *hasher) int(v int64) { h.word(hInt, uint64(v)) }

func (h *hasher) uint(u uint64) {
	if u <= math.MaxInt64 {
		h.word(hInt, u)
		return
	}
	h.word(hUint, u)
}

func (h *hasher) float(f float64) {
	bits := math.Float64bits(f)
	switch {
	case f == 0:
		bits = 0 // -0 hashes as +0
	case f != f:
		bits = canonicalNaN
	}
	h.word(hFloat, bits)
}

func (h *hasher) time(sec, nsec int64) {
	h.word(hTime, uint64(sec))
	h.room(4)
	binary.LittleEndian.PutUint32(h.buf[h.n:], uint32(nsec))
	h.n += 4
}

func (h *hasher) user(id uint16, payload []byte) {
	h.room(11)
	h.buf[h.n] = hUser
	binary.LittleEndian.PutUint16(h.buf[h.n+1:], id)
	binary.LittleEndian.PutUint64(h.buf[h.n+3:], uint64(len(payload)))
	h.n += 11
	h.bytes(payload)
}

// HashValues returns the fields-grouping hash of vals, in order: XXH64
// (seed 0) of the concatenated canonical hash inputs of the values, as
// defined in docs/tuple-format.md. Equal logical keys hash equally whatever their Go
// integer widths (int32(7), int64(7) and uint8(7) are the same key) and
// the hash is stable across runs, machines and versions. It does not
// allocate for the basic kinds; user values are encoded with their codec
// from reg and hashed by payload. An unsupported type is an error wrapping
// ErrUnsupportedType.
func HashValues(reg *Registry, vals ...any) (uint64, error) {
	var h hasher
	for i, v := range vals {
		if err := hashValue(&h, v, reg, 0); err != nil {
			return 0, fmt.Errorf("tuple: hash value %d: %w", i, err)
		}
	}
	return h.sum(), nil
}

// FieldsHash returns the fields-grouping hash of the values of tuple at the
// given indexes, in the order given: HashValues(reg, tuple[fields[0]],
// tuple[fields[1]], ...). An index out of range is an error.
func FieldsHash(reg *Registry, tuple []any, fields []int) (uint64, error) {
	if len(fields) == 1 && fields[0] >= 0 && fields[0] < len(tuple) {
		// One field of the common key kinds: hashed without a hasher.
		switch x := tuple[fields[0]].(type) {
		case string:
			if len(x) <= shortKeyMax {
				return hashShortString(x), nil
			}
		case int64:
			return hashInt(x), nil
		case int:
			return hashInt(int64(x)), nil
		}
	}
	var h hasher
	for _, f := range fields {
		if f < 0 || f >= len(tuple) {
			return 0, fmt.Errorf("tuple: grouping field index %d out of range for a tuple of %d values", f, len(tuple))
		}
		if err := hashValue(&h, tuple[f], reg, 0); err != nil {
			return 0, fmt.Errorf("tuple: hash field %d: %w", f, err)
		}
	}
	return h.sum(), nil
}

// AppendKey appends the canonical hash input of vals (docs/tuple-format.md,
// "Fields-grouping hash") to dst: the bytes whose XXH64 is
// HashValues(reg, vals...). Equal logical keys give equal bytes whatever
// their Go integer widths, so they identify a key in keyed state the way
// the fields grouping does (api.States).
func AppendKey(dst []byte, reg *Registry, vals ...any) ([]byte, error) {
	h := hasher{collect: true, out: dst}
	for i, v := range vals {
		if err := hashValue(&h, v, reg, 0); err != nil {
			return dst, fmt.Errorf("tuple: key value %d: %w", i, err)
		}
	}
	h.flush()
	return h.out, nil
}

// AppendFieldsKey appends the canonical hash input of the values of tuple
// at the given indexes, in the order given: AppendKey(dst, reg,
// tuple[fields[0]], ...). Its XXH64 is FieldsHash(reg, tuple, fields).
func AppendFieldsKey(dst []byte, reg *Registry, tuple []any, fields []int) ([]byte, error) {
	h := hasher{collect: true, out: dst}
	for _, f := range fields {
		if f < 0 || f >= len(tuple) {
			return dst, fmt.Errorf("tuple: grouping field index %d out of range for a tuple of %d values", f, len(tuple))
		}
		if err := hashValue(&h, tuple[f], reg, 0); err != nil {
			return dst, fmt.Errorf("tuple: key field %d: %w", f, err)
		}
	}
	h.flush()
	return h.out, nil
}

// shortKeyMax is the longest string hashShortString takes.
const shortKeyMax = 119

// hashShortString is the hash of one string value: XXH64 of its
// canonical input (hBytes, its length as 8 little-endian bytes, its
// bytes). Inputs shorter than 32 bytes are hashed here, reading the words
// of that input straight from the string; longer ones are written to a
// buffer with 8-byte stores built in registers. Either way the hash never
// loads bytes just written one by one (the hasher's copy), which stalls
// the load until they reach the cache.
func hashShortString(s string) uint64 {
	n := 9 + len(s)
	if n >= 32 {
		return hashStringBuffered(s)
	}
	// XXH64 of an input under 32 bytes, seed 0: the whole-word, half-word
	// and byte steps of the reference, over input[0:8] = hBytes and the
	// length, then input[8] = 0 (the length's top byte) and s.
	h := xxPrime5 + uint64(n)
	h = xxWord(h, uint64(hBytes)|uint64(len(s))<<8)
	p, rem := -1, n-8 // input[8+k] is s[p+k], with s[-1] = 0
	for ; rem >= 8; p, rem = p+8, rem-8 {
		var w uint64
		if p >= 0 {
			w = le64(s, p)
		} else {
			w = inputBytes(s, p, 8)
		}
		h = xxWord(h, w)
	}
	if rem >= 4 {
		h ^= inputBytes(s, p, 4) * xxPrime1
		h = bits.RotateLeft64(h, 23)*xxPrime2 + xxPrime3
		p, rem = p+4, rem-4
	}
	for ; rem > 0; p, rem = p+1, rem-1 {
		h ^= inputBytes(s, p, 1) * xxPrime5
		h = bits.RotateLeft64(h, 11) * xxPrime1
	}
	h ^= h >> 33
	h *= xxPrime2
	h ^= h >> 29
	h *= xxPrime3
	return h ^ h>>32
}

// XXH64's primes.
const (
	xxPrime1 uint64 = 11400714785074694791
	xxPrime2 uint64 = 14029467366897019727
	xxPrime3 uint64 = 1609587929392839161
	xxPrime4 uint64 = 9650029242287828579
	xxPrime5 uint64 = 2870177450012600261
)

// xxWord is XXH64's step for one 8-byte word of a short input.
func xxWord(h, w uint64) uint64 {
	w *= xxPrime2
	w = bits.RotateLeft64(w, 31) * xxPrime1
	h ^= w
	return bits.RotateLeft64(h, 27)*xxPrime1 + xxPrime4
}

// inputBytes returns k bytes of s starting at p as a little-endian word,
// with s[-1] read as 0.
func inputBytes(s string, p, k int) uint64 {
	var x uint64
	for j := range k {
		if p+j >= 0 {
			x |= uint64(s[p+j]) << (8 * j)
		}
	}
	return x
}

// hashStringBuffered is hashShortString for inputs of 32 bytes or more.
func hashStringBuffered(s string) uint64 {
	var buf [9 + shortKeyMax]byte
	n := 9 + len(s)
	binary.LittleEndian.PutUint64(buf[0:], uint64(hBytes)|uint64(len(s))<<8)
	// buf[w+j] is s[w+j-9]; buf[8], the length's top byte, is 0.
	for w := 8; w < n; w += 8 {
		i := w - 9
		var x uint64
		switch {
		case i >= 0 && i+8 <= len(s):
			x = le64(s, i)
		case i == -1:
			x = le64(s, 0) << 8
		default:
			x = inputBytes(s, i, min(8, len(s)-i))
		}
		binary.LittleEndian.PutUint64(buf[w:], x)
	}
	return xxhash.Sum64(buf[:n])
}

// le64 reads s[i:i+8] as a little-endian word (one load).
func le64(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// hashInt is the hash of one integer value (hInt and its 8 bytes), written
// as hashShortString writes its input.
func hashInt(v int64) uint64 {
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[0:], uint64(hInt)|uint64(v)<<8)
	binary.LittleEndian.PutUint64(buf[8:], uint64(v)>>56)
	return xxhash.Sum64(buf[:9])
}

// HashEncodedFields computes FieldsHash straight from an encoded tuple (as
// written by AppendValues), without decoding it or needing codecs: it gives
// the same hash as FieldsHash on the decoded values. The tuple is validated
// as by ValueBounds. It does not allocate for tuples of up to 31 values.
func HashEncodedFields(src []byte, fields []int) (uint64, error) {
	var stack [32]int32
	offs, err := ValueBounds(src, stack[:0])
	if err != nil {
		return 0, err
	}
	n := len(offs) - 1
	var h hasher
	for _, f := range fields {
		if f < 0 || f >= n {
			return 0, fmt.Errorf("tuple: grouping field index %d out of range for a tuple of %d values", f, n)
		}
		if _, err := hashEncoded(&h, src, int(offs[f]), 0); err != nil {
			return 0, fmt.Errorf("tuple: hash field %d: %w", f, err)
		}
	}
	return h.sum(), nil
}

func hashValue(h *hasher, v any, reg *Registry, depth int) error {
	switch x := v.(type) {
	case nil:
		h.class(hNil)
	case bool:
		h.class(hBool)
		if x {
			h.class(1)
		} else {
			h.class(0)
		}
	case int:
		h.int(int64(x))
	case int8:
		h.int(int64(x))
	case int16:
		h.int(int64(x))
	case int32:
		h.int(int64(x))
	case int64:
		h.int(x)
	case uint:
		h.uint(uint64(x))
	case uint8:
		h.uint(uint64(x))
	case uint16:
		h.uint(uint64(x))
	case uint32:
		h.uint(uint64(x))
	case uint64:
		h.uint(x)
	case float32:
		h.float(float64(x))
	case float64:
		h.float(x)
	case string:
		h.word(hBytes, uint64(len(x)))
		h.str(x)
	case []byte:
		h.word(hBytes, uint64(len(x)))
		h.bytes(x)
	case time.Time:
		h.time(x.Unix(), int64(x.Nanosecond()))
	case time.Duration:
		h.word(hDuration, uint64(x))
	case []any:
		if depth >= MaxDepth {
			return fmt.Errorf("tuple: lists and maps nested more than %d levels: %w", MaxDepth, ErrTooDeep)
		}
		h.word(hList, uint64(len(x)))
		for _, e := range x {
			if err := hashValue(h, e, reg, depth+1); err != nil {
				return err
			}
		}
	case map[string]any:
		if depth >= MaxDepth {
			return fmt.Errorf("tuple: lists and maps nested more than %d levels: %w", MaxDepth, ErrTooDeep)
		}
		var scratch [16]string
		keys := sortedKeys(x, scratch[:])
		h.word(hMap, uint64(len(keys)))
		for _, k := range keys {
			h.word(hBytes, uint64(len(k)))
			h.str(k)
			if err := hashValue(h, x[k], reg, depth+1); err != nil {
				return err
			}
		}
	default:
		return hashUserValue(h, v, reg)
	}
	return nil
}

// hashUserValue encodes a user value with its codec (this allocates a
// scratch buffer) and hashes its id and payload.
func hashUserValue(h *hasher, v any, reg *Registry) error {
	e := reg.lookupType(reflect.TypeOf(v))
	if e == nil {
		_, err := appendUser(nil, v, reg) // for its error message
		return err
	}
	payload, err := e.codec.Append(make([]byte, 0, 64), v)
	if err != nil {
		return fmt.Errorf("tuple: codec for %T (user type id %d): %w", v, e.id, err)
	}
	h.user(e.id, payload)
	return nil
}

// hashEncoded feeds the canonical hash input of the encoded value at
// b[off:] and returns the offset after it.
func hashEncoded(h *hasher, b []byte, off int, depth int) (int, error) {
	if off >= len(b) {
		return off, corruptf(off, "truncated: value expected")
	}
	tag, p := b[off], off+1
	var err error
	switch tag {
	case tagNil:
		h.class(hNil)
	case tagFalse, tagTrue:
		h.class(hBool)
		h.class(tag - tagFalse)
	case tagInt, tagInt8, tagInt16, tagInt32, tagInt64:
		var v int64
		v, p, err = readSigned(b, p, tag)
		h.int(v)
	case tagDuration:
		var v int64
		v, p, err = readSigned(b, p, tag)
		h.word(hDuration, uint64(v))
	case tagUint, tagUint8, tagUint16, tagUint32, tagUint64:
		var u uint64
		u, p, err = readUnsigned(b, p, tag)
		h.uint(u)
	case tagFloat32:
		var f float32
		f, p, err = readFloat32(b, p)
		h.float(float64(f))
	case tagFloat64:
		var f float64
		f, p, err = readFloat64(b, p)
		h.float(f)
	case tagString, tagBytes:
		var s []byte
		s, p, err = readBytes(b, p)
		h.word(hBytes, uint64(len(s)))
		h.bytes(s)
	case tagTime:
		var sec, nsec int64
		sec, nsec, p, err = readTime(b, p)
		h.time(sec, nsec)
	case tagUser:
		var id uint16
		var payload []byte
		id, payload, p, err = readUser(b, p)
		h.user(id, payload)
	case tagList:
		if depth >= MaxDepth {
			return off, tooDeep(off)
		}
		var n int
		n, p, err = readLen(b, p, 1)
		h.word(hList, uint64(n))
		for i := 0; i < n && err == nil; i++ {
			p, err = hashEncoded(h, b, p, depth+1)
		}
	case tagMap:
		if depth >= MaxDepth {
			return off, tooDeep(off)
		}
		var n int
		var k []byte
		n, p, err = readLen(b, p, 2)
		h.word(hMap, uint64(n))
		for i := 0; i < n && err == nil; i++ {
			k, p, err = readKey(b, p, k, i == 0)
			if err == nil {
				h.word(hBytes, uint64(len(k)))
				h.bytes(k)
				p, err = hashEncoded(h, b, p, depth+1)
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
