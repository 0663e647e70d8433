package launcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
)

// PackageEgret names the egret binary in a topology package built with
// egret.package.core.bundle: the containers run it as their executor.
const PackageEgret = "egret"

// bundleEgret adds the egret binary to the files of a topology package when
// the cluster wants it there (egret.package.core.bundle, with no
// egret.package.core.uri): for resource managers whose containers have no
// egret of their own, such as Nomad's raw_exec and exec drivers. It is the
// launcher's egret (l.Egret, else this executable), which must be built
// for the cluster's egret.package.goos/goarch; anything else is refused
// before a package is built.
func (l *Launcher) bundleEgret(cfg spi.Config, files map[string]string) error {
	bundle, err := cfg.Bool("egret.package.core.bundle", false)
	if err != nil {
		return badInput(err)
	}
	if !bundle || cfg.String("egret.package.core.uri", "") != "" {
		return nil
	}
	goos, goarch := cfg.String("egret.package.goos", runtime.GOOS), cfg.String("egret.package.goarch", runtime.GOARCH)
	if goos != runtime.GOOS || goarch != runtime.GOARCH {
		return badInput(fmt.Errorf("egret.package.core.bundle: this egret is built for %s/%s, the cluster's containers run %s/%s (egret.package.goos/goarch); "+
			"build egret for them (GOOS=%s GOARCH=%s go build ./cmd/egret), put it where the containers can download it and set egret.package.core.uri to its URL",
			runtime.GOOS, runtime.GOARCH, goos, goarch, goos, goarch))
	}
	self := l.Egret
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return fmt.Errorf("egret.package.core.bundle: find this egret binary: %w", err)
		}
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return fmt.Errorf("egret.package.core.bundle: %w", err)
	}
	files[PackageEgret] = self
	return nil
}

// explainWait completes the error of a submission whose topology did not
// come up within --wait: the scheduler's diagnosis (spi.Diagnoser), and
// that the topology stays submitted.
func (l *Launcher) explainWait(ctx context.Context, cfg spi.Config, cluster, topology string, err error) error {
	hint := fmt.Sprintf("the topology stays submitted (egret kill %s %s removes it)", cluster, topology)
	sched, serr := l.Backends.Scheduler(ctx, cfg)
	if serr != nil {
		return fmt.Errorf("%w; %s", err, hint)
	}
	defer sched.Close()
	d, ok := sched.(spi.Diagnoser)
	if !ok {
		return fmt.Errorf("%w; %s", err, hint)
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	why, derr := d.Diagnose(dctx, topology)
	switch {
	case derr != nil:
		l.Log.Warn("the scheduler could not say why the containers do not run", zap.Error(derr))
	case why != "":
		return fmt.Errorf("%w; %s; %s", err, why, hint)
	}
	return fmt.Errorf("%w; %s", err, hint)
}
