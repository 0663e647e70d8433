package statebackend

// Incremental is the capability of a backend whose state is a set of
// immutable files (an LSM tree's tables): a checkpoint is a directory of
// such files, most of them the same as at the previous checkpoint, so only
// the new ones are uploaded (daemons/ckptio).
//
// Contract:
//   - Checkpoint forks a consistent view of the backend into files, in a
//     time independent of the state's size (hard links; a flush of the
//     memory table at most). Later changes never show in them.
//   - A file whose Stable flag is set keeps its name and bytes for the
//     backend's life (Incarnation): a later checkpoint listing the same
//     name lists the same bytes, so an uploader may reuse what it uploaded
//     before. Other files (the table list, options) are uploaded every time.
//   - RestoreCheckpoints replaces the backend's state with the entries of
//     the task's key groups held by the checkpoint directories given
//     (several when key groups moved between tasks); a damaged directory is
//     an error. It starts a new incarnation, and returns the stable files
//     of dirs[0] that the new incarnation keeps as its own, under the same
//     names and with the same bytes: its next checkpoint may list them, and
//     an uploader reuses what it downloaded rather than uploading them again.
type Incremental interface {
	Checkpoint() (FileCheckpoint, error)
	RestoreCheckpoints(dirs []string) (kept []string, err error)
	// Incarnation names the backend's current life: it changes when the
	// backend is opened, cleared or restored.
	Incarnation() string
}

// FileCheckpoint is a checkpoint forked into a local directory.
type FileCheckpoint interface {
	Dir() string
	Files() []CheckpointFile
	// Release removes the directory.
	Release()
}

// CheckpointFile is one file of a FileCheckpoint.
type CheckpointFile struct {
	// Name is the file's name in the directory.
	Name   string
	Size   int64
	Stable bool
}
