package mesos

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/egret-stream/egret/internal/procinfo"
)

// Files of the topology's working directory.
const (
	jobFile       = "job.json"       // the job (written by Launch and /update)
	configFile    = "cluster.json"   // the resolved cluster config
	frameworkFile = "framework.json" // the framework id, once subscribed
	tasksFile     = "tasks.json"     // the container → task map
	endpointFile  = "scheduler.json" // the control endpoint of the running framework
	errorFile     = "framework.error"
	logFile       = "framework.log"
)

// frameworkState is framework.json.
type frameworkState struct {
	FrameworkID string `json:"framework_id"`
	Master      string `json:"master"`
}

// taskState is one container's current task in tasks.json.
type taskState struct {
	Task  string `json:"task"`
	Agent string `json:"agent"`
}

// tasksState is tasks.json: written before a task is launched, so that a
// restarted framework reconciles every task it may have launched.
type tasksState struct {
	Attempt int                `json:"attempt"`
	Tasks   map[int]*taskState `json:"tasks"`
}

// endpoint is scheduler.json.
type endpoint struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
	// Start is the process's start time (procinfo.Start), so that a
	// reused pid is not taken for the framework.
	Start string `json:"start,omitempty"`
}

// alive reports whether the framework process that published ep runs.
func (ep endpoint) alive() bool { return procinfo.Alive(ep.PID, ep.Start) }

func writeJSON(path string, v any, perm fs.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readJSON reads path into v; a missing file gives an error wrapping
// fs.ErrNotExist.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s is corrupt: %w", filepath.Base(path), err)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
