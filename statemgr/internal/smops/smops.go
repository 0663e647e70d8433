package smops

import (
	"fmt"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/statemgr/internal/nodepath"
)

// KindName is the lower-case name of an op kind.
func KindName(k spi.OpKind) string {
	switch k {
	case spi.OpCreate:
		return "create"
	case spi.OpSet:
		return "set"
	case spi.OpDelete:
		return "delete"
	case spi.OpCheck:
		return "check"
	}
	return fmt.Sprintf("op-kind-%d", int(k))
}

// Label names op number i (counted from 0) of a Multi for error messages,
// for example `multi op 2 (set /topologies/wc)`.
func Label(i int, op spi.Op) string {
	return fmt.Sprintf("multi op %d (%s %s)", i, KindName(op.Kind), op.Path)
}

// Validate checks the kinds, paths and versions of ops before anything is
// applied.
func Validate(ops []spi.Op) error {
	for i, op := range ops {
		if err := ValidateOne(op); err != nil {
			return fmt.Errorf("%s: %w", Label(i, op), err)
		}
	}
	return nil
}

// ValidateOne checks one op.
func ValidateOne(op spi.Op) error {
	switch op.Kind {
	case spi.OpCreate, spi.OpSet, spi.OpDelete, spi.OpCheck:
	default:
		return fmt.Errorf("unknown op kind %d (use spi.OpCreate, OpSet, OpDelete or OpCheck)", int(op.Kind))
	}
	if err := nodepath.Check(op.Path); err != nil {
		return err
	}
	if err := CheckVersion(op.Version); err != nil {
		return err
	}
	if op.Kind == spi.OpDelete && op.Path == nodepath.Root {
		return ErrDeleteRoot
	}
	return nil
}

// CheckVersion rejects negative versions other than spi.AnyVersion.
func CheckVersion(v int64) error {
	if v < spi.AnyVersion {
		return fmt.Errorf("version %d is invalid (use a node's version or spi.AnyVersion)", v)
	}
	return nil
}

// ErrDeleteRoot is returned for a delete of "/".
var ErrDeleteRoot = fmt.Errorf("%w: the root node / cannot be deleted (delete its children instead)", nodepath.ErrInvalid)

// ErrEphemeralParent is wrapped when a node would be created below an
// ephemeral node.
var ErrEphemeralParent = fmt.Errorf("ephemeral nodes cannot have children")
