package nodepath

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every path validation error.
var ErrInvalid = errors.New("invalid state node path")

// Root is the path of the root node.
const Root = "/"

// Check returns an error saying what is wrong with p, or nil when p is a valid
// absolute node path.
func Check(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty path (use an absolute path such as /topologies/wordcount)", ErrInvalid)
	case p == Root:
		return nil
	case p[0] != '/':
		return fmt.Errorf("%w %q: the path must be absolute (start with /)", ErrInvalid, p)
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%w %q: the path must not end with /", ErrInvalid, p)
	}
	for _, name := range strings.Split(p[1:], "/") {
		if err := CheckName(name); err != nil {
			return fmt.Errorf("%w %q: %s", ErrInvalid, p, err.Error())
		}
	}
	return nil
}

// nameError is a problem with one name of a path.
type nameError string

func (e nameError) Error() string { return string(e) }

// CheckName validates one name (a path element).
func CheckName(name string) error {
	switch name {
	case "":
		return nameError("empty name (two slashes in a row)")
	case ".", "..":
		return nameError(fmt.Sprintf("name %q is not allowed", name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return nameError(fmt.Sprintf("name %q contains %q; names may only contain A-Z a-z 0-9 . _ -", name, rune(c)))
		}
	}
	return nil
}

// Names returns the names of a valid path, top down; nil for the root.
func Names(p string) []string {
	if p == Root {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// Parent returns the parent of a valid path; "" for the root.
func Parent(p string) string {
	if p == Root {
		return ""
	}
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return Root
	}
	return p[:i]
}

// Base returns the last name of a valid path; "" for the root.
func Base(p string) string {
	if p == Root {
		return ""
	}
	return p[strings.LastIndexByte(p, '/')+1:]
}

// Join returns the path of child name of parent.
func Join(parent, name string) string {
	if parent == Root {
		return Root + name
	}
	return parent + "/" + name
}

// Ancestors returns the proper ancestors of a valid path except the root,
// top down: "/a", "/a/b" for "/a/b/c".
func Ancestors(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// Within reports whether p is prefix or lies below it.
func Within(p, prefix string) bool {
	if prefix == Root || p == prefix {
		return true
	}
	return strings.HasPrefix(p, prefix) && len(p) > len(prefix) && p[len(prefix)] == '/'
}
