package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

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
