package names

import (
	"errors"
	"fmt"
	"strconv"
)

// MaxLength bounds every name, so that names fit in file names, state-manager
// paths and resource-manager identifiers together with a prefix.
const MaxLength = 63

// maxContainerDigits bounds a container index (it must fit in an int32).
const maxContainerDigits = 9

// ErrInvalid is matched (errors.Is) by every error of Check and
// ParseContainer.
var ErrInvalid = errors.New("invalid name")

// Kind says what a name names; it selects the rule Check applies.
type Kind int

// The kinds of names.
const (
	Topology Kind = iota
	Component
	Stream
	Cluster
	Role
	Environ
	// Container is a container index (see ParseContainer).
	Container
)

// String is the kind as an error message names it.
func (k Kind) String() string {
	switch k {
	case Topology:
		return "topology name"
	case Component:
		return "component name"
	case Stream:
		return "stream name"
	case Cluster:
		return "cluster name"
	case Role:
		return "role"
	case Environ:
		return "environment"
	case Container:
		return "container"
	}
	return "name"
}

// Rule describes, in one phrase, the form a name of kind k must have.
func (k Kind) Rule() string {
	if k == Container {
		return fmt.Sprintf("must be a number 0, 1, 2, ... (decimal digits only, at most %d)", maxContainerDigits)
	}
	if k.dotted() {
		return fmt.Sprintf("must start with a letter or digit and contain only letters, digits, '.', '-' and '_' (ASCII, at most %d characters)", MaxLength)
	}
	return fmt.Sprintf("must start with a letter and contain only letters, digits, '-' and '_' (ASCII, at most %d characters)", MaxLength)
}

// dotted reports whether names of kind k may hold dots and start with a
// digit.
func (k Kind) dotted() bool { return k == Cluster || k == Role || k == Environ }

// Error is an invalid name: what it names, the value and the rule it breaks.
type Error struct {
	Kind  Kind
	Value string
}

func (e *Error) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("the %s is empty: a %s %s", e.Kind, e.Kind, e.Kind.Rule())
	}
	return fmt.Sprintf("%s %s is invalid: a %s %s", e.Kind, Quote(e.Value), e.Kind, e.Kind.Rule())
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Check returns nil when s is a valid name of kind k, else an *Error that
// says which rule s breaks.
func Check(k Kind, s string) error {
	max := MaxLength
	if k == Container {
		max = maxContainerDigits
	}
	if s == "" || len(s) > max {
		return &Error{Kind: k, Value: s}
	}
	for i := 0; i < len(s); i++ {
		if !k.allows(i, s[i]) {
			return &Error{Kind: k, Value: s}
		}
	}
	return nil
}

// allows reports whether byte c may stand at position i of a name of kind
// k.
func (k Kind) allows(i int, c byte) bool {
	switch {
	case k == Container:
		return isDigit(c)
	case isLetter(c):
		return true
	case i == 0:
		return isDigit(c) && k.dotted()
	}
	return isDigit(c) || c == '-' || c == '_' || c == '.' && k.dotted()
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// ParseContainer parses a container index with the Container rule, so
// "+1", "-1", " 1" and "0x1" are refused.
func ParseContainer(s string) (int, error) {
	if err := Check(Container, s); err != nil {
		return 0, err
	}
	return strconv.Atoi(s) // at most 9 digits: cannot fail
}

// quoteMax is the longest part of a value Quote shows.
const quoteMax = 64

// Quote quotes a name for an error message on one line: control
// characters and non-ASCII bytes escaped, and a very long value cut short
// with its length, so that an error stays one readable line.
func Quote(s string) string {
	if len(s) <= quoteMax {
		return strconv.QuoteToASCII(s)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.QuoteToASCII(s[:quoteMax]), len(s))
}
