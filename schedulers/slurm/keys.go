package slurm

import "github.com/egret-stream/egret/core/spi"

// configKeys are the config keys the slurm scheduler reads, registered with
// its factory: conf derives the schema, the defaults, the validation and
// conf/REFERENCE.md from them.
var configKeys = []spi.Key{
	{Name: KeyPartition, Type: spi.KeyString, Default: "",
		Doc: "Slurm partition of the topology's batch job (sbatch --partition; checked before submitting); empty: the cluster's default partition."},
	{Name: KeyAccount, Type: spi.KeyString, Default: "",
		Doc: "Slurm account the job is charged to (sbatch --account); empty: the user's default account."},
	{Name: KeyQOS, Type: spi.KeyString, Default: "",
		Doc: "Slurm quality of service of the job (sbatch --qos); empty: the default."},
	{Name: KeyTimeLimit, Type: spi.KeyString, Default: "",
		Doc: "Time limit of the job in Slurm's format (sbatch --time: minutes, [days-]hours:minutes:seconds, UNLIMITED); empty: the partition's default. Slurm ends the topology at the limit."},
	{Name: KeyTasksPerNode, Type: spi.KeyInt, Default: "0", Check: spi.CheckNonNegative,
		Doc: "Containers (tasks) per node (sbatch --ntasks-per-node, with the node count it implies); 0: Slurm places the containers on as few nodes as fit."},
	{Name: KeyEgretBinary, Type: spi.KeyString, Default: "",
		Doc: "Absolute path of the egret binary on the compute nodes (installed, or on a shared file system); empty: the egret running the command (the external plugin egret-scheduler-slurm needs it set)."},
	{Name: KeyWorkingDir, Type: spi.KeyString, Default: "/tmp/egret-slurm",
		Doc: "Directory on each compute node under which a job keeps its containers' working directories (<dir>/<job id>/container-<i>); the job removes its directory when it ends; a job that creates the directory makes it mode 1777, like /tmp."},
	{Name: KeySbatch, Type: spi.KeyString, Default: "sbatch",
		Doc: "The sbatch command (a name on PATH or an absolute path)."},
	{Name: KeySqueue, Type: spi.KeyString, Default: "squeue",
		Doc: "The squeue command (a name on PATH or an absolute path)."},
	{Name: KeyScancel, Type: spi.KeyString, Default: "scancel",
		Doc: "The scancel command (a name on PATH or an absolute path)."},
	{Name: KeyScontrol, Type: spi.KeyString, Default: "scontrol",
		Doc: "The scontrol command (a name on PATH or an absolute path)."},
	{Name: KeySrun, Type: spi.KeyString, Default: "srun",
		Doc: "The srun command, run by the batch script on the compute nodes and by restart of one container (a name on PATH or an absolute path)."},
	{Name: KeyLaunchTimeout, Type: spi.KeyDuration, Default: "2m", Check: spi.CheckPositive,
		Doc: "How long submit and update wait for the job's containers to start, and kill for Slurm to end the job; a job not started by then is cancelled."},
	{Name: KeyCommandTimeout, Type: spi.KeyDuration, Default: "30s", Check: spi.CheckPositive,
		Doc: "Timeout of one Slurm command (a command against an unreachable slurmctld retries for long)."},
}
