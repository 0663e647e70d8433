package local

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/procinfo"
	"github.com/egret-stream/egret/internal/safepath"
)

// Files of the working directory.
const (
	jobFile      = "job.json"
	endpointFile = "scheduler.json"
	logFile      = "scheduler.log"
	// executorFile, in each container's directory, records its executor.
	executorFile = "executor.json"
)

// endpoint is what the service publishes in scheduler.json.
type endpoint struct {
	URL   string `json:"url"`
	PID   int    `json:"pid"`
	Start string `json:"start,omitempty"` // process start time: tells a reused pid apart
}

// alive reports whether the service that published ep still runs.
func (ep endpoint) alive() bool { return procinfo.Alive(ep.PID, ep.Start) }

// executorRecord identifies the executor a service started for a
// container, so that the next service adopts it and kill finds it.
type executorRecord struct {
	PID   int    `json:"pid"`
	Start string `json:"start,omitempty"`
}

// keyWorkDir names the working directory of a topology.
const keyWorkDir = "egret.scheduler.local.working.directory"

// WorkDir returns the working directory of a topology from the cluster
// config, which must have been resolved for that topology, made absolute.
// A directory with a ".." element is refused: kill removes the working
// directory, so it must never be able to point above where it was meant
// to be (a topology or role named ".." substituted into the template).
func WorkDir(cfg spi.Config) (string, error) {
	dir := cfg.String(keyWorkDir, "")
	if dir == "" {
		return "", fmt.Errorf("local scheduler: %s is not set", keyWorkDir)
	}
	if slices.Contains(strings.Split(filepath.ToSlash(dir), "/"), "..") {
		return "", fmt.Errorf("local scheduler: %s %q has a \"..\" element; use a path without it", keyWorkDir, dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("local scheduler: %s: %w", keyWorkDir, err)
	}
	return abs, nil
}

// topologyDir checks that dir, a clean absolute working directory, is the
// one of topology: topology is a valid name and one of dir's elements (the
// last one of that name), so removing dir removes only what belongs to
// topology. It returns dir rebuilt through safepath.
func topologyDir(dir, topology string) (string, error) {
	if err := names.Check(names.Topology, topology); err != nil {
		return "", fmt.Errorf("local scheduler: %w", err)
	}
	elems := strings.Split(filepath.ToSlash(dir), "/")
	at := -1
	for i, e := range elems {
		if e == topology {
			at = i
		}
	}
	if at < 1 {
		return "", fmt.Errorf("local scheduler: %s %s does not name topology %q: include ${TOPOLOGY} so that every topology has its own directory (kill removes it)", keyWorkDir, dir, topology)
	}
	root := filepath.FromSlash(strings.Join(elems[:at], "/"))
	if root == "" {
		root = string(filepath.Separator)
	}
	return safepath.Join(root, elems[at:]...)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

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
