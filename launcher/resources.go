package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/egret-stream/egret/core/topobin"
)

// PackageResources is the directory of a topology package holding the
// files of egret submit --resources: shell components run there.
const PackageResources = topobin.ResourcesDirName

// resourceFiles returns the package entries of a --resources directory:
// every regular file below dir as resources/<path relative to dir>.
// Symbolic links to regular files are followed; any other entry that is
// not a directory (a link to a directory, a device, a socket) is refused,
// as is a directory with no file.
func resourceFiles(dir string) (map[string]string, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, badInput(fmt.Errorf("--resources: %w", err))
	}
	if !fi.IsDir() {
		return nil, badInput(fmt.Errorf("--resources %s is not a directory", dir))
	}
	files := map[string]string{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := path.Join(PackageResources, filepath.ToSlash(rel))
		st, err := os.Stat(p) // follows a link
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file (%s): ship the files themselves", p, st.Mode().Type())
		}
		files[name] = p
		return nil
	})
	if err != nil {
		return nil, badInput(fmt.Errorf("--resources %s: %w", dir, err))
	}
	if len(files) == 0 {
		return nil, badInput(errors.New("--resources " + dir + " holds no file"))
	}
	return files, nil
}
