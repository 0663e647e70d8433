package safepath

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// MaxElem is the longest element accepted, in bytes (NAME_MAX on Linux and
// the BSDs).
const MaxElem = 255

// ErrUnsafe is matched (errors.Is) by every error of this package.
var ErrUnsafe = errors.New("unsafe path")

// Elem returns nil when s can be used as one element of a path: not empty,
// not "." or "..", without a path separator ('/' or '\'), without a NUL
// byte, and at most MaxElem bytes long.
func Elem(s string) error {
	var why string
	switch {
	case s == "":
		why = "it is empty"
	case s == "." || s == "..":
		why = "it names a directory relative to another"
	case len(s) > MaxElem:
		why = "it is longer than " + strconv.Itoa(MaxElem) + " bytes"
	case strings.ContainsAny(s, "/\\\x00"):
		why = "it holds a path separator or a NUL byte"
	default:
		return nil
	}
	return fmt.Errorf("%w: path element %s is not a single file name (%s)", ErrUnsafe, quote(s), why)
}

// Join returns root joined with elems, each of which must pass Elem. The
// result is cleaned and lies strictly below root (it is root itself only
// when no elems are given). root must not be empty or hold a NUL byte; it
// is otherwise trusted (it comes from the operator's config or the program).
func Join(root string, elems ...string) (string, error) {
	if root == "" || strings.Contains(root, "\x00") {
		return "", fmt.Errorf("%w: root directory %s is empty or holds a NUL byte", ErrUnsafe, quote(root))
	}
	for _, e := range elems {
		if err := Elem(e); err != nil {
			return "", err
		}
	}
	root = filepath.Clean(root)
	p := filepath.Join(append([]string{root}, elems...)...)
	if len(elems) > 0 && !below(root, p) {
		// Unreachable with elements that pass Elem; checked all the same.
		return "", fmt.Errorf("%w: %s is not below %s", ErrUnsafe, quote(p), root)
	}
	return p, nil
}

// JoinRel is Join with the elements of rel, a relative path whose elements
// are separated by '/' (or the OS separator); every element must pass
// Elem, so rel cannot be absolute or hold ".", ".." or an empty element.
func JoinRel(root, rel string) (string, error) {
	return Join(root, strings.Split(filepath.ToSlash(rel), "/")...)
}

// below reports whether the clean path p lies strictly below the clean
// directory root.
func below(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != "." && filepath.IsLocal(rel)
}

// quote quotes s on one line, cut short when very long.
func quote(s string) string {
	const max = 80
	if len(s) <= max {
		return strconv.QuoteToASCII(s)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.QuoteToASCII(s[:max]), len(s))
}
