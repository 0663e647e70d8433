package tuple

import (
	"fmt"
	"math/bits"
)

// MaxDepth is the deepest nesting of lists and maps that is encoded or
// decoded: a top-level value has depth 0, each list or map adds one level to
// its elements. Deeper values are rejected (ErrTooDeep), which also stops
// self-referencing lists from recursing forever.
const MaxDepth = 64

// Wire tags: the first byte of every encoded value. docs/tuple-format.md is the
// normative table.
const (
	tagNil      byte = 0x01
	tagFalse    byte = 0x02
	tagTrue     byte = 0x03
	tagInt      byte = 0x10
	tagInt8     byte = 0x11
	tagInt16    byte = 0x12
	tagInt32    byte = 0x13
	tagInt64    byte = 0x14
	tagUint     byte = 0x18
	tagUint8    byte = 0x19
	tagUint16   byte = 0x1A
	tagUint32   byte = 0x1B
	tagUint64   byte = 0x1C
	tagFloat32  byte = 0x20
	tagFloat64  byte = 0x21
	tagString   byte = 0x28
	tagBytes    byte = 0x29
	tagTime     byte = 0x30
	tagDuration byte = 0x31
	tagList     byte = 0x38
	tagMap      byte = 0x39
	tagUser     byte = 0x40
)

// Kind is the Go kind of an encoded value, as reported by Reader.Kind.
type Kind uint8

// The kinds. KindInvalid is returned for an unknown tag or at the end of
// the input.
const (
	KindInvalid Kind = iota
	KindNil
	KindBool
	KindInt
	KindInt8
	KindInt16
	KindInt32
	KindInt64
	KindUint
	KindUint8
	KindUint16
	KindUint32
	KindUint64
	KindFloat32
	KindFloat64
	KindString
	KindBytes
	KindTime
	KindDuration
	KindList
	KindMap
	KindUser
)

var kindNames = [...]string{
	KindInvalid: "invalid", KindNil: "nil", KindBool: "bool",
	KindInt: "int", KindInt8: "int8", KindInt16: "int16", KindInt32: "int32", KindInt64: "int64",
	KindUint: "uint", KindUint8: "uint8", KindUint16: "uint16", KindUint32: "uint32", KindUint64: "uint64",
	KindFloat32: "float32", KindFloat64: "float64", KindString: "string", KindBytes: "[]byte",
	KindTime: "time.Time", KindDuration: "time.Duration", KindList: "[]any",
	KindMap: "map[string]any", KindUser: "user",
}

// String returns the Go type name of the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// IsSigned reports whether the kind is a signed integer (time.Duration
// excluded).
func (k Kind) IsSigned() bool { return k >= KindInt && k <= KindInt64 }

// IsUnsigned reports whether the kind is an unsigned integer.
func (k Kind) IsUnsigned() bool { return k >= KindUint && k <= KindUint64 }

// tagKind maps a wire tag to its kind; KindInvalid for unknown tags.
var tagKind = [256]Kind{
	tagNil: KindNil, tagFalse: KindBool, tagTrue: KindBool,
	tagInt: KindInt, tagInt8: KindInt8, tagInt16: KindInt16, tagInt32: KindInt32, tagInt64: KindInt64,
	tagUint: KindUint, tagUint8: KindUint8, tagUint16: KindUint16, tagUint32: KindUint32, tagUint64: KindUint64,
	tagFloat32: KindFloat32, tagFloat64: KindFloat64, tagString: KindString, tagBytes: KindBytes,
	tagTime: KindTime, tagDuration: KindDuration, tagList: KindList, tagMap: KindMap, tagUser: KindUser,
}

// signedBits is the width of each signed tag (int is encoded as 64 bits).
func signedBits(tag byte) uint {
	switch tag {
	case tagInt8:
		return 8
	case tagInt16:
		return 16
	case tagInt32:
		return 32
	}
	return 64
}

func unsignedBits(tag byte) uint {
	switch tag {
	case tagUint8:
		return 8
	case tagUint16:
		return 16
	case tagUint32:
		return 32
	}
	return 64
}

// appendUvarint appends x as an unsigned LEB128 varint (7 bits per byte,
// least significant group first, high bit set on every byte but the last).
func appendUvarint(dst []byte, x uint64) []byte {
	for x >= 0x80 {
		dst = append(dst, byte(x)|0x80)
		x >>= 7
	}
	return append(dst, byte(x))
}

// uvarintLen is the number of bytes appendUvarint writes for x.
func uvarintLen(x uint64) int {
	return (bits.Len64(x|1) + 6) / 7
}

func zigzag(x int64) uint64   { return uint64(x<<1) ^ uint64(x>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// readUvarint decodes the canonical varint at b[off:]. It returns the value
// and the offset after it. A varint longer than 10 bytes, one that
// overflows 64 bits, one that is truncated, or one with a redundant final
// zero group (non-minimal) is corrupt.
func readUvarint(b []byte, off int) (uint64, int, error) {
	// The one-byte case is small enough to inline.
	if off < len(b) && b[off] < 0x80 {
		return uint64(b[off]), off + 1, nil
	}
	return readUvarintLong(b, off)
}

func readUvarintLong(b []byte, off int) (uint64, int, error) {
	var x uint64
	var s uint
	for i := 0; i < 10; i++ {
		if off+i >= len(b) {
			return 0, off, corruptf(off, "truncated varint")
		}
		c := b[off+i]
		if c < 0x80 {
			if i == 9 && c > 1 {
				return 0, off, corruptf(off, "varint overflows 64 bits")
			}
			if c == 0 && i > 0 {
				return 0, off, corruptf(off, "non-minimal varint")
			}
			return x | uint64(c)<<s, off + i + 1, nil
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, off, corruptf(off, "varint longer than 10 bytes")
}

// skipUvarint validates the canonical varint at b[off:] as readUvarint
// does and returns the offset after it, without computing its value.
func skipUvarint(b []byte, off int) (int, error) {
	for i := 0; i < 10; i++ {
		if off+i >= len(b) {
			return off, corruptf(off, "truncated varint")
		}
		if c := b[off+i]; c < 0x80 {
			if (i == 9 && c > 1) || (c == 0 && i > 0) {
				_, _, err := readUvarintLong(b, off)
				return off, err
			}
			return off + i + 1, nil
		}
	}
	return off, corruptf(off, "varint longer than 10 bytes")
}

// readLen reads a uvarint length or count and checks that at least
// len*minSize bytes remain after it, so a hostile prefix can never make the
// decoder allocate or loop beyond the input it was given.
func readLen(b []byte, off int, minSize int) (int, int, error) {
	if off < len(b) && b[off] < 0x80 && int(b[off])*minSize < len(b)-off {
		// A one-byte length that fits: the common case, without a call.
		return int(b[off]), off + 1, nil
	}
	u, next, err := readUvarint(b, off)
	if err != nil {
		return 0, off, err
	}
	if rem := uint64(len(b) - next); u > rem || u*uint64(minSize) > rem {
		return 0, off, lenErr(off, u, rem)
	}
	return int(u), next, nil
}

func lenErr(off int, u, rem uint64) error {
	return corruptf(off, "length %d exceeds the %d bytes that remain", u, rem)
}

func corruptf(off int, format string, args ...any) error {
	return fmt.Errorf("tuple: at byte %d: %s: %w", off, fmt.Sprintf(format, args...), ErrCorrupt)
}
