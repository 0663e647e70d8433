package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/treehash"
	"github.com/egret-stream/egret/schedulers/local"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

// TestHostileNamesTouchNothing: a working directory built (as the config
// template ${EGRET_HOME}/topologies/${CLUSTER}/${ROLE}/${TOPOLOGY} does)
// from a hostile topology name is refused by every operation, and no file
// changes: kill of "../.." once removed the whole tree above.
func TestHostileNamesTouchNothing(t *testing.T) {
	base := newEnv(t).root // reaps any process a broken check would let start
	parent := filepath.Join(base, "topologies", "local", "role")
	for _, p := range []string{filepath.Join(parent, "victim", "container-1", "executor.log"), filepath.Join(base, "precious")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before, err := treehash.Of(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"..", "../..", "../../..", "../victim", "a/b", "/abs", "%2e%2e", "a\x00b", "\uff0e\uff0e", "a\uff0fb", "", " ", strings.Repeat("x", 300)} {
		// The path as the template would have produced it, unchecked.
		cfg := spi.Config{
			"egret.scheduler.local.working.directory": parent + "/" + name,
			"egret.scheduler.local.egret.binary":      fakeEgret,
		}
		s, err := local.New(cfg, zaptest.NewLogger(t))
		if err != nil {
			continue // refused at once: fine
		}
		ctx := context.Background()
		ops := map[string]error{
			"kill":    s.Kill(ctx, name),
			"launch":  s.(spi.Launcher).Launch(ctx, schedulertest.NewJob(name, 1)),
			"restart": s.Restart(ctx, name, spi.AllContainers),
			"update":  s.Update(ctx, schedulertest.NewJob(name, 1)),
		}
		_, linkErr := s.JobLinks(ctx, name)
		ops["joblinks"] = linkErr
		for op, err := range ops {
			if err == nil {
				t.Errorf("%s of %q succeeded", op, name)
			} else if !errors.Is(err, names.ErrInvalid) {
				t.Errorf("%s of %q = %v, want an invalid-name error", op, name, err)
			}
		}
	}
	after, err := treehash.Of(base)
	if err != nil {
		t.Fatal(err)
	}
	if d := before.Diff(after); d != nil {
		t.Errorf("hostile names changed files: %q", d)
	}
}

// TestWorkDirMustBeTheTopologys: a working directory that does not name the
// topology (a template without ${TOPOLOGY}, or a valid name that is not
// this scheduler's) is refused, so kill cannot remove another topology's
// files; one with a ".." element is refused by New.
func TestWorkDirMustBeTheTopologys(t *testing.T) {
	base := t.TempDir()
	shared := filepath.Join(base, "topologies")
	if err := os.MkdirAll(filepath.Join(shared, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := local.New(spi.Config{"egret.scheduler.local.working.directory": shared, "egret.scheduler.local.egret.binary": fakeEgret}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Kill(context.Background(), "wordcount")
	if err == nil || !strings.Contains(err.Error(), "${TOPOLOGY}") {
		t.Errorf("Kill with a working directory shared by every topology = %v, want a refusal naming ${TOPOLOGY}", err)
	}
	if _, err := os.Stat(filepath.Join(shared, "other")); err != nil {
		t.Errorf("another topology's directory is gone: %v", err)
	}

	_, err = local.New(spi.Config{"egret.scheduler.local.working.directory": base + "/x/../wordcount"}, zaptest.NewLogger(t))
	if err == nil || !strings.Contains(err.Error(), `".."`) {
		t.Errorf("New with a \"..\" element = %v, want a refusal", err)
	}
}
