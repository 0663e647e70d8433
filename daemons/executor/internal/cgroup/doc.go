// Package cgroup puts the executor's children into child control groups
// with the cpu and memory limits of the packing plan, and reads back what
// the kernel did about them (OOM kills, CPU throttling).
//
// Two hierarchies are supported:
//
//   - cgroup v2 (unified): the executor's own cgroup C must offer the cpu
//     and memory controllers (C/cgroup.controllers) and be writable. The
//     "no internal processes" rule forbids enabling controllers for C's
//     children while C holds processes, so when the executor is alone in C
//     it first moves itself into the leaf C/<name>-executor; when other
//     processes share C, cgroups are not used. The container's groups are
//     C/<name>/<process>, with cpu.max, memory.max and memory.high.
//   - cgroup v1 (legacy or hybrid): the cpu and memory hierarchies, each
//     at the executor's own place in it, must be writable. Groups are
//     <hierarchy>/<executor's cgroup>/<name>/<process> with
//     cpu.cfs_quota_us/cpu.cfs_period_us, memory.limit_in_bytes and
//     memory.soft_limit_in_bytes.
//
// v2 is preferred when it offers both controllers. Setup reports why
// neither can be used; the executor then falls back to Go's own limits.
// Close removes every group and moves the executor back where it was.
//
// No state is global: a Manager holds its paths, and every path is
// derived from the /proc/self files it is given (tests pass fakes).
package cgroup
