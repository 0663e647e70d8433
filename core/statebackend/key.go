package statebackend

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/egret-stream/egret/core/keygroup"
)

// AppendKey appends the stored form of k to dst after checking it against
// the task's groups: group (2 bytes, big endian), state name, 0x00, key.
func AppendKey(dst []byte, k Key, groups keygroup.Range) ([]byte, error) {
	if err := CheckState(k.State); err != nil {
		return dst, err
	}
	if err := CheckGroup(k.Group, groups); err != nil {
		return dst, err
	}
	dst = AppendStatePrefix(dst, k.Group, k.State)
	return append(dst, k.Key...), nil
}

// AppendStatePrefix appends the stored prefix of every key of state in
// group.
func AppendStatePrefix(dst []byte, group int, state string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(group))
	dst = append(dst, state...)
	return append(dst, 0)
}

// AppendGroupPrefix appends the stored prefix of every key of group.
func AppendGroupPrefix(dst []byte, group int) []byte {
	return binary.BigEndian.AppendUint16(dst, uint16(group))
}

// StatePrefix checks a scan of state in group and returns the stored
// prefix of its keys that start with prefix, and the length of the part
// before the user key.
func StatePrefix(group int, state string, prefix []byte, groups keygroup.Range) (lo []byte, skip int, err error) {
	if err := CheckState(state); err != nil {
		return nil, 0, err
	}
	if err := CheckGroup(group, groups); err != nil {
		return nil, 0, err
	}
	lo = AppendStatePrefix(nil, group, state)
	return append(lo, prefix...), len(lo), nil
}

// CheckGroup refuses a group the task does not own.
func CheckGroup(group int, groups keygroup.Range) error {
	if !groups.Contains(group) {
		return fmt.Errorf("%w: key group %d is not one of this task's %v", ErrBadKey, group, groups)
	}
	return nil
}

// CheckState refuses a state name that is empty or holds a NUL byte.
func CheckState(name string) error {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("%w: state name %q is empty or contains a NUL byte", ErrBadKey, name)
	}
	return nil
}

// SplitKey splits a stored key into its group, state name and user key;
// ok is false for bytes that are not a stored key.
func SplitKey(stored []byte) (group int, state, key []byte, ok bool) {
	if len(stored) < 3 {
		return 0, nil, nil, false
	}
	group = int(binary.BigEndian.Uint16(stored))
	rest := stored[2:]
	i := 0
	for i < len(rest) && rest[i] != 0 {
		i++
	}
	if i == 0 || i == len(rest) {
		return 0, nil, nil, false
	}
	return group, rest[:i], rest[i+1:], true
}

// PrefixEnd returns the smallest key greater than every key starting with
// prefix (nil when there is none: prefix is all 0xff).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// AppendValue appends the stored form of a value: its expiry (8 bytes, big
// endian; 0 is never) then its bytes.
func AppendValue(dst []byte, val []byte, expires int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(expires))
	return append(dst, val...)
}

// SplitValue splits a stored value into its expiry and bytes; ok is false
// for fewer than 8 bytes.
func SplitValue(stored []byte) (expires int64, val []byte, ok bool) {
	if len(stored) < 8 {
		return 0, nil, false
	}
	return int64(binary.BigEndian.Uint64(stored)), stored[8:], true
}

// Live reports whether an entry with this expiry is alive at now (unix
// nanoseconds).
func Live(expires, now int64) bool { return expires == 0 || expires > now }
