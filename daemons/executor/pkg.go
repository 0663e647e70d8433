package executor

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/fetch"
)

// preparePackage makes sure paths.PackageDir holds the extracted package of
// uri. A marker file W/package.sha256 records the digest of the extracted
// tarball, so a restarted executor with the same digest reuses the
// directory without fetching again. Extraction goes to a fresh directory
// that replaces the old one only once complete.
func preparePackage(ctx context.Context, paths Paths, uri, sha string, opts fetch.Options, log *zap.Logger) error {
	want := strings.ToLower(strings.TrimSpace(sha))
	if want != "" {
		if b, err := hex.DecodeString(want); err != nil || len(b) != 32 {
			return fmt.Errorf("package sha256 %q is not 64 hex digits (give the digest the uploader printed)", sha)
		}
	}
	marker := paths.PackageDir + ".sha256"
	if uri == "" {
		if !isDir(paths.PackageDir) {
			return fmt.Errorf("no package URI given and %s does not exist: pass --package-uri", paths.PackageDir)
		}
		log.Info("using the package already in the working directory", zap.String("dir", paths.PackageDir))
		return nil
	}
	have := readMarker(marker)
	if want != "" && have == want && isDir(paths.PackageDir) {
		log.Info("package already extracted, reusing it", zap.String("dir", paths.PackageDir), zap.String("sha256", want))
		return nil
	}
	tarball := paths.PackageDir + ".tar.gz"
	opts.Log = log
	if err := fetch.FetchWith(ctx, uri, tarball, want, opts); err != nil {
		if errors.Is(err, fetch.ErrChecksumMismatch) {
			return fmt.Errorf("package %s does not have sha256 %s (was it replaced after submission? resubmit the topology): %w", uri, want, err)
		}
		return fmt.Errorf("fetch package: %w", err)
	}
	defer os.Remove(tarball)
	got := want
	if got == "" {
		var err error
		if got, err = fetch.SHA256File(ctx, tarball); err != nil {
			return fmt.Errorf("hash package %s: %w", tarball, err)
		}
		if got == have && isDir(paths.PackageDir) {
			log.Info("package unchanged, reusing the extracted copy", zap.String("sha256", got))
			return nil
		}
	}
	if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove package marker: %w", err)
	}
	tmp := paths.PackageDir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("clear %s: %w", tmp, err)
	}
	if err := fetch.Extract(ctx, tarball, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("extract package: %w", err)
	}
	if err := os.RemoveAll(paths.PackageDir); err != nil {
		return fmt.Errorf("remove the old package directory: %w", err)
	}
	if err := os.Rename(tmp, paths.PackageDir); err != nil {
		return fmt.Errorf("install package directory: %w", err)
	}
	if err := writeFileAtomic(marker, []byte(got+"\n"), 0o644); err != nil {
		return fmt.Errorf("write package marker: %w", err)
	}
	log.Info("package extracted", zap.String("dir", paths.PackageDir), zap.String("sha256", got))
	return nil
}

func readMarker(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// readClusterConfig reads the resolved cluster config: a JSON object of
// string values.
func readClusterConfig(path string) (spi.Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cluster config %s does not exist: the package must contain cluster.json (or pass the config file's path)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("read cluster config: %w", err)
	}
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("cluster config %s is not a JSON object: %w", path, err)
	}
	cfg := spi.Config{}
	for k, v := range raw {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("cluster config %s: key %q has a %T value; every value must be a string", path, k, v)
		}
		cfg[k] = s
	}
	return cfg, nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory and a rename.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
