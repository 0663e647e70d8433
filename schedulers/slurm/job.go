package slurm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/internal/executorcmd"
)

// JobPrefix starts the Slurm job name of every topology: egret-<topology>.
const JobPrefix = "egret-"

// JobName returns the Slurm job name of a topology. Topology names are
// letters, digits, '-' and '_' (core/names), so they need no mapping.
func JobName(topology string) string { return JobPrefix + topology }

// commentPrefix starts the job comment: "egret topology <T> id <ID> ...".
// A job of the right name whose comment does not start so is not egret's.
func commentPrefix(topology string) string { return "egret topology " + topology + " " }

// taskSize is the size of every task (container) of the job: Slurm gives
// all tasks of a job step the same cpus and memory.
type taskSize struct {
	cpus     int
	memoryMB int64
}

func (t taskSize) String() string { return fmt.Sprintf("%d cpus and %d MiB", t.cpus, t.memoryMB) }

// sizeOf returns the size of the job's tasks: the plan's largest container
// in each dimension, cpus rounded up to whole cpus, memory to MiB.
// Container 0 (the topology manager) gets the same size.
func sizeOf(p *plan.PackingPlan) taskSize {
	t := taskSize{cpus: 1, memoryMB: 1}
	for _, c := range p.Containers {
		r := c.Required
		if r == (plan.Resources{}) {
			for _, in := range c.Instances {
				r = r.Add(in.Resources)
			}
		}
		t.cpus = max(t.cpus, int(math.Ceil(r.CPU-1e-9)))
		t.memoryMB = max(t.memoryMB, mebibytes(r.RAM))
	}
	return t
}

// memPerCPU is --mem-per-cpu for a task of size t (MiB, rounded up).
func (t taskSize) memPerCPU() int64 { return (t.memoryMB + int64(t.cpus) - 1) / int64(t.cpus) }

// checkJob rejects a job the Slurm scheduler cannot run, naming every
// problem, before anything is run.
func checkJob(job spi.Job) error {
	var errs []error
	if err := names.Check(names.Topology, job.Topology); err != nil {
		errs = append(errs, err)
	}
	for _, v := range []struct{ what, v string }{
		{"topology id", job.TopologyID}, {"package URI", job.PackageURI}, {"package sha256", job.PackageSHA256},
		{"cluster", job.Cluster}, {"role", job.Role}, {"environ", job.Environ},
	} {
		if strings.ContainsAny(v.v, "\n\r\x00") {
			errs = append(errs, fmt.Errorf("the job's %s %q holds a line break or NUL", v.what, v.v))
		}
	}
	if job.PackageURI == "" {
		errs = append(errs, errors.New("the job has no package URI: the executors fetch the topology package from the uploader's URI (a file:// URI on a shared file system, or http)"))
	}
	if err := checkPlan(job.Plan); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("slurm scheduler: %w", joined(errs))
	}
	return nil
}

// checkPlan checks that the plan's containers are 1..N: task k of the job
// step (SLURM_PROCID) runs container k.
func checkPlan(p *plan.PackingPlan) error {
	if p == nil || len(p.Containers) == 0 {
		return errors.New("the job has no packing plan containers")
	}
	ids := make([]int, 0, len(p.Containers))
	for _, c := range p.Containers {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != i+1 {
			return fmt.Errorf("packing plan containers %v: the slurm scheduler runs containers 1..N without gaps (task k of the job step, SLURM_PROCID, runs container k)", ids)
		}
	}
	return nil
}

// batch is what Schedule hands to sbatch: the command line options and the
// batch script (on sbatch's standard input).
type batch struct {
	args   []string
	script string
	tasks  int
	size   taskSize
}

// buildBatch builds the batch job of a topology.
func (s *settings) buildBatch(job spi.Job) (*batch, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	egret, err := s.egretBinary()
	if err != nil {
		return nil, err
	}
	initial, maxMS, err := backoff(job.Config)
	if err != nil {
		return nil, err
	}
	b := &batch{tasks: len(job.Plan.Containers) + 1, size: sizeOf(job.Plan)}
	b.args = []string{
		"--parsable",
		"--job-name=" + JobName(job.Topology),
		"--comment=" + comment(job),
		"--ntasks=" + strconv.Itoa(b.tasks),
		"--cpus-per-task=" + strconv.Itoa(b.size.cpus),
		"--mem-per-cpu=" + strconv.FormatInt(b.size.memPerCPU(), 10) + "M",
		// Restart(AllContainers) requeues the job.
		"--requeue",
		// The script sends its output to the job's directory.
		"--output=/dev/null",
		"--chdir=/",
	}
	if s.tasksPerNode > 0 {
		per := min(s.tasksPerNode, b.tasks)
		nodes := (b.tasks + per - 1) / per
		b.args = append(b.args, "--ntasks-per-node="+strconv.Itoa(per), "--nodes="+strconv.Itoa(nodes))
	}
	for _, o := range []struct{ flag, v string }{
		{"--partition=", s.partition}, {"--account=", s.account}, {"--qos=", s.qos}, {"--time=", s.timeLimit},
	} {
		if o.v != "" {
			b.args = append(b.args, o.flag+o.v)
		}
	}
	b.script = batchScript(s, job, egret, b.size, initial, maxMS)
	return b, nil
}

// comment is the job's comment: it names the topology for squeue and for
// later commands, which check it.
func comment(job spi.Job) string {
	c := commentPrefix(job.Topology) + "id " + job.TopologyID
	for _, kv := range []struct{ k, v string }{{"cluster", job.Cluster}, {"role", job.Role}, {"environ", job.Environ}} {
		if kv.v != "" {
			c += " " + kv.k + " " + kv.v
		}
	}
	return c
}

// quote quotes s for the POSIX shell.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// executorLine is the task script's command that runs the executor of
// container "$c" in "$dir".
func executorLine(egret string, job spi.Job) string {
	args := executorcmd.WithoutEmpty(executorcmd.Args(job, 0, "DIR", ""))
	var b strings.Builder
	b.WriteString(quote(egret))
	for i := 0; i < len(args); i++ {
		b.WriteByte(' ')
		switch {
		case i > 0 && args[i-1] == "--container":
			b.WriteString(`"$c"`)
		case i > 0 && args[i-1] == "--work-dir":
			b.WriteString(`"$dir"`)
		default:
			b.WriteString(quote(args[i]))
		}
	}
	return b.String()
}

// baseDir is the scripts' lines that set root, the job's directory on
// this node. The working directory is shared by every user's jobs: when a
// job creates it, it makes it world-writable and sticky, like /tmp, so
// that the next user's jobs can create their own directories in it.
func baseDir(s *settings) string {
	return `base=` + quote(s.workDir) + `
[ -d "$base" ] || { mkdir -p "$base" && chmod 1777 "$base"; } 2>/dev/null
root="$base/$SLURM_JOB_ID"`
}

// The delimiter of the task script's here-document in the batch script.
const taskEOF = "EGRET_SLURM_TASK"

// batchScript is the job's batch script. It runs on the job's first node:
// it starts one job step of N+1 tasks (srun), each task runs taskScript,
// and starts the step again (with backoff) should every task end. On
// SIGTERM (scancel, requeue) it stops the step and removes the job's
// directory.
func batchScript(s *settings, job spi.Job, egret string, size taskSize, initialMS, maxMS int64) string {
	task := taskScript(s, job, egret, initialMS, maxMS)
	return `#!/bin/bash
# Egret topology ` + job.Topology + ` (id ` + job.TopologyID + `), written by egret's slurm scheduler.
# Task k of the job step (SLURM_PROCID) runs the executor of container k:
# 0 is the topology manager, 1..N the packing plan's containers.
` + baseDir(s) + `
rm -rf "$root" && mkdir -p "$root" || { echo "egret-slurm: cannot create $root on $(hostname)" >&2; exit 1; }
exec >>"$root/job.log" 2>&1
task=$(cat <<'` + taskEOF + `'
` + task + taskEOF + `
)
stop=0 pid=
trap 'stop=1; [ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null' TERM INT HUP
delay=` + strconv.FormatInt(initialMS, 10) + `
while [ "$stop" = 0 ]; do
  ` + quote(s.srun) + ` --kill-on-bad-exit=0 --ntasks="$SLURM_NTASKS" --cpus-per-task=` + strconv.Itoa(size.cpus) +
		` --mem-per-cpu=` + strconv.FormatInt(size.memPerCPU(), 10) + `M /bin/sh -c "$task" egret-slurm-task &
  pid=$!
  wait "$pid"; rc=$?
  while kill -0 "$pid" 2>/dev/null; do wait "$pid"; rc=$?; done
  pid=
  [ "$stop" = 0 ] || break
  echo "egret-slurm: the job step ended (srun status $rc); starting it again in ${delay}ms"
  sleep "$((delay / 1000)).$(printf %03d $((delay % 1000)))" & pid=$!
  wait "$pid"; pid=
  delay=$((delay * 2)); [ "$delay" -le ` + strconv.FormatInt(maxMS, 10) + ` ] || delay=` + strconv.FormatInt(maxMS, 10) + `
done
rm -rf "$root"
`
}

// taskScript is the script of each task (/bin/sh): it runs the executor
// of container SLURM_PROCID and runs it again when it exits (kill -9
// included; Slurm restarts no task), after a delay that doubles from
// egret.executor.restart.backoff.initial up to ...max, reset after a
// minute of running. SIGUSR1 (Restart of one container) stops the executor
// and starts it again at once; SIGTERM stops it for good and removes the
// container's directory. It records "<node> <pid>" (the Slurm node name) in task.pid for
// Restart.
func taskScript(s *settings, job spi.Job, egret string, initialMS, maxMS int64) string {
	init, mx := strconv.FormatInt(initialMS, 10), strconv.FormatInt(maxMS, 10)
	return `c=${SLURM_PROCID:?not started by srun}
` + baseDir(s) + `
dir="$root/container-$c"
mkdir -p "$dir" || exit 1
echo "${SLURMD_NODENAME:-$(hostname)} $$" >"$dir/task.pid"
stop=0 again=0 pid=
trap 'stop=1; [ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null' TERM INT HUP
trap 'again=1; [ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null' USR1
delay=` + init + `
while [ "$stop" = 0 ]; do
  again=0
  start=$(date +%s)
  ` + executorLine(egret, job) + ` &
  pid=$!
  echo "egret-slurm: container $c: executor $pid started on ${SLURMD_NODENAME:-this node}"
  wait "$pid"; rc=$?
  while kill -0 "$pid" 2>/dev/null; do wait "$pid"; rc=$?; done
  pid=
  [ "$stop" = 0 ] || break
  if [ "$again" = 1 ]; then
    echo "egret-slurm: container $c: restarted on request"
    delay=` + init + `
    continue
  fi
  [ $(($(date +%s) - start)) -lt 60 ] || delay=` + init + `
  echo "egret-slurm: container $c: executor exited with status $rc; starting it again in ${delay}ms"
  sleep "$((delay / 1000)).$(printf %03d $((delay % 1000)))" & pid=$!
  wait "$pid"; pid=
  delay=$((delay * 2)); [ "$delay" -le ` + mx + ` ] || delay=` + mx + `
done
rm -rf "$dir"
rmdir "$root" 2>/dev/null
exit 0
`
}

// restartScript is run by `srun --jobid=J --overlap` on every node of the
// job: it signals the task loop of container c (every container on the
// node with spi.AllContainers) to restart its executor, and prints
// "restarted <c>" for each one it signalled.
func restartScript(s *settings, container int) string {
	which := "container-" + strconv.Itoa(container)
	if container == spi.AllContainers {
		which = "container-*"
	}
	return `for f in ` + quote(s.workDir) + `/"$SLURM_JOB_ID"/` + which + `/task.pid; do
  if [ -r "$f" ] && read -r host pid <"$f" && [ "$host" = "${SLURMD_NODENAME:-$(hostname)}" ] && kill -USR1 "$pid" 2>/dev/null; then
    d=${f%/task.pid}
    echo "restarted ${d##*/container-}"
  fi
done
exit 0
`
}

// diagnoseScript prints the task loops' last lines from the batch script's
// log, on the node that has it.
func diagnoseScript(s *settings) string {
	return `f=` + quote(s.workDir) + `/"$SLURM_JOB_ID"/job.log
[ -r "$f" ] && tail -n 500 "$f" | grep '^egret-slurm: container '
exit 0
`
}
