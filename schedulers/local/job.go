package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/egret-stream/egret/core/spi"
)

// Files of the working directory.
const (
	jobFile      = "job.json"
	endpointFile = "scheduler.json"
	logFile      = "scheduler.log"
)

// endpoint is what the service publishes in scheduler.json.
type endpoint struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

// WorkDir returns the working directory of a topology from the cluster
// config, which must have been resolved for that topology.
func WorkDir(cfg spi.Config) (string, error) {
	dir := cfg.String("egret.scheduler.local.working.directory", "")
	if dir == "" {
		return "", errors.New("local scheduler: egret.scheduler.local.working.directory is not set")
	}
	return dir, nil
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
