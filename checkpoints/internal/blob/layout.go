package blob

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
)

// The layout every storage uses below its root:
// <topology>/<checkpoint id>/<task>.state, ids in decimal.

// StateSuffix ends the file name of a task's state.
const StateSuffix = ".state"

// TempPrefix starts the names of files and directories that are being
// written or deleted; List and Load never see them.
const TempPrefix = ".tmp-"

// CheckTopology checks that topology is a valid topology name: nothing else
// may become a path element.
func CheckTopology(topology string) error {
	if err := names.Check(names.Topology, topology); err != nil {
		return fmt.Errorf("checkpoint storage: %w", err)
	}
	return nil
}

// CheckCheckpoint checks a checkpoint id: ids are not negative.
func CheckCheckpoint(id int64) error {
	if id < 0 {
		return fmt.Errorf("checkpoint storage: checkpoint id %d is negative", id)
	}
	return nil
}

// CheckKey checks every part of key.
func CheckKey(key spi.CheckpointKey) error {
	if err := CheckTopology(key.Topology); err != nil {
		return err
	}
	if err := CheckCheckpoint(key.Checkpoint); err != nil {
		return err
	}
	if key.Task < 0 {
		return fmt.Errorf("checkpoint storage: task id %d is negative", key.Task)
	}
	return nil
}

// CheckpointDir is the directory name of checkpoint id.
func CheckpointDir(id int64) string { return strconv.FormatInt(id, 10) }

// ParseCheckpointDir returns the checkpoint id a directory name holds, or
// false for any other name (temp files, names not in canonical form).
func ParseCheckpointDir(name string) (int64, bool) {
	id, err := strconv.ParseInt(name, 10, 64)
	if err != nil || id < 0 || CheckpointDir(id) != name {
		return 0, false
	}
	return id, true
}

// TaskFile is the file name of a task's state.
func TaskFile(task int32) string { return strconv.FormatInt(int64(task), 10) + StateSuffix }

// IsTaskFile reports whether name is the state file of some task.
func IsTaskFile(name string) bool {
	n, ok := strings.CutSuffix(name, StateSuffix)
	if !ok {
		return false
	}
	id, err := strconv.ParseInt(n, 10, 32)
	return err == nil && id >= 0 && strconv.FormatInt(id, 10) == n
}

// FilesDir is the directory, next to a topology's checkpoint directories,
// that holds its checkpoint files (spi.CheckpointFiles):
// <topology>/files/<name>.
const FilesDir = "files"

// CheckFile checks a topology and a checkpoint file's name.
func CheckFile(topology, name string) error {
	if err := CheckTopology(topology); err != nil {
		return err
	}
	if err := spi.CheckFileName(name); err != nil {
		return fmt.Errorf("checkpoint storage: %w", err)
	}
	return nil
}

// IsTemp reports whether a name in a files directory is a file being
// written (or left by a writer that crashed).
func IsTemp(name string) bool { return strings.HasPrefix(name, TempPrefix) }
