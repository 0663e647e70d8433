package executorcmd

import (
	"strconv"

	"github.com/egret-stream/egret/core/spi"
)

// WorkDirFlag is the executor's flag naming its container's working
// directory; a scheduler finds an executor it lost track of by it.
const WorkDirFlag = "--work-dir"

// Args returns the arguments (after the egret binary) of the executor of
// container in job: it works in workDir and reads the cluster config from
// configFile. Every scheduler starts executors with it, and the flags are
// those of the `egret executor` command.
func Args(job spi.Job, container int, workDir, configFile string) []string {
	return []string{
		"executor",
		"--topology", job.Topology,
		"--topology-id", job.TopologyID,
		"--container", strconv.Itoa(container),
		WorkDirFlag, workDir,
		"--package-uri", job.PackageURI,
		"--package-sha256", job.PackageSHA256,
		"--config-file", configFile,
	}
}

// WithoutEmpty drops the flags of args whose value is empty ("--flag", "")
// so that the executor sees them unset; "executor" and other lone words
// stay.
func WithoutEmpty(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) > 2 && a[:2] == "--" && i+1 < len(args) && args[i+1] == "" {
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}
