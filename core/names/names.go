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
	}
	return "name"
}

// Rule describes, in one phrase, the form a name of kind k must have.
func (k Kind) Rule() string {
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
	if s == "" || len(s) > MaxLength {
		return &Error{Kind: k, Value: s}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := isLetter(c) || isDigit(c) && (i > 0 || k.dotted()) ||
			i > 0 && (c == '-' || c == '_' || c == '.' && k.dotted())
		if !ok {
			return &Error{Kind: k, Value: s}
		}
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// ParseContainer parses a container index: decimal digits only, so "+1",
// "-1", " 1" and "0x1" are refused.
func ParseContainer(s string) (int, error) {
	bad := s == "" || len(s) > maxContainerDigits
	for i := 0; i < len(s) && !bad; i++ {
		bad = !isDigit(s[i])
	}
	if bad {
		return 0, fmt.Errorf("container %s is invalid: a container is a number 0, 1, 2, ... (decimal digits only, at most %d): %w", Quote(s), maxContainerDigits, ErrInvalid)
	}
	n, err := strconv.Atoi(s)
	if err != nil { // unreachable with at most 9 digits; kept for safety
		return 0, fmt.Errorf("container %s is invalid: %w", Quote(s), ErrInvalid)
	}
	return n, nil
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
