package keygroup

import (
	"fmt"
	"math/bits"
)

const (
	// DefaultMaxParallelism is the number of key groups of a component
	// that does not set topology.max.parallelism.
	DefaultMaxParallelism = 128
	// Limit is the largest max parallelism (key groups are numbered in
	// 16 bits in stored state).
	Limit = 1 << 15
)

// Of returns the key group, in [0, maxParallelism), of the key whose
// fields-grouping hash is hash. maxParallelism must be in [1, Limit].
func Of(hash uint64, maxParallelism int) int {
	hi, _ := bits.Mul64(hash, uint64(maxParallelism))
	return int(hi)
}

// Owner returns the index, in [0, parallelism), of the task that owns key
// group group, for 1 ≤ parallelism ≤ maxParallelism.
func Owner(group, maxParallelism, parallelism int) int {
	return group * parallelism / maxParallelism
}

// TaskIndex returns the index of the task owning the key whose hash is
// hash: Owner(Of(hash, maxParallelism), maxParallelism, parallelism). It
// is the fields grouping's choice among a component's tasks sorted by
// ascending task id.
func TaskIndex(hash uint64, parallelism, maxParallelism int) int {
	return Owner(Of(hash, maxParallelism), maxParallelism, parallelism)
}

// Range is the half-open interval [Start, End) of key groups one task owns.
type Range struct {
	Start, End int
}

// Contains reports whether group is in r.
func (r Range) Contains(group int) bool { return group >= r.Start && group < r.End }

// Len returns the number of key groups in r.
func (r Range) Len() int { return r.End - r.Start }

func (r Range) String() string { return fmt.Sprintf("[%d,%d)", r.Start, r.End) }

// RangeOf returns the key groups owned by the task of index index among
// parallelism tasks, for 1 ≤ parallelism ≤ maxParallelism.
func RangeOf(index, parallelism, maxParallelism int) Range {
	return Range{
		Start: (index*maxParallelism + parallelism - 1) / parallelism,
		End:   ((index+1)*maxParallelism + parallelism - 1) / parallelism,
	}
}

// Check reports whether a component of parallelism tasks may have
// maxParallelism key groups, with an error that says how to fix it.
func Check(parallelism, maxParallelism int) error {
	switch {
	case maxParallelism < 1 || maxParallelism > Limit:
		return fmt.Errorf("max parallelism %d is outside [1, %d]", maxParallelism, Limit)
	case parallelism > maxParallelism:
		return fmt.Errorf("parallelism %d exceeds the max parallelism %d (the number of key groups of its state; raise topology.max.parallelism, fixed for the topology's life, or lower the parallelism)", parallelism, maxParallelism)
	}
	return nil
}
