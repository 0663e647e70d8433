// Package slurm is Egret's scheduler for Slurm, registered as "slurm" and
// also served as the plugin binary egret-scheduler-slurm.
//
// It works in library mode, the way Heron's Slurm scheduler does: each
// topology is one batch job, submitted with sbatch, whose one job step
// (srun) has a task per container. Task k (SLURM_PROCID) runs the executor
// of container k: 0 is the topology manager, 1..N the packing plan's
// containers. Every task gets the size of the plan's largest container
// (--cpus-per-task, --mem-per-cpu): Slurm gives the tasks of a step one
// size. The daemons listen on ports the kernel picks and publish them
// through the state manager, as on every other scheduler.
//
// It drives Slurm with its commands (sbatch, squeue, scancel, scontrol,
// srun; the paths are configurable) rather than slurmrestd, which many
// sites do not deploy, while every site that runs batch jobs lets its
// users run these.
//
// Slurm restarts no task that dies. Each task therefore runs a small
// shell loop that starts the executor again when it exits (kill -9
// included), with the executor's own backoff settings
// (egret.executor.restart.backoff.*), and the batch script starts the job
// step again should every task end.
//
// The job is named egret-<topology>; its comment, "egret topology <T> id
// <ID> ...", marks it as egret's. Every call finds the job again with
// squeue (--me), so the scheduler keeps no state.
//
// Operations: Schedule checks the partition and the task size against the
// nodes (scontrol show partition/nodes) before sbatch, then waits until
// the job step runs (egret.slurm.launch.timeout); a job that does not
// start is cancelled. Kill is scancel, waiting until Slurm has finished
// the job. Restart runs a job step inside the job's allocation (srun
// --jobid --overlap) that sends the task loop of the container (or of
// every container) SIGUSR1, which restarts its executor at once; when a
// loop is gone, restart of every container requeues the job (scontrol
// requeue). Update submits a job
// with the new plan that depends on the old one (afterany), then cancels
// the old one: a running Slurm job cannot grow or shrink, so every
// container restarts. JobLinks gives the job id. Diagnose reads the task
// loops' last lines from the batch script's log (a job step again).
package slurm
