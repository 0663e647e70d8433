package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and the user inside the image.
const (
	BinaryPath  = "/usr/local/bin/egret"
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	UID         = 65532
	UserName    = "egret"
	HomeDir     = "/home/egret"
	// DefaultCACerts is the host's bundle (Debian's ca-certificates).
	DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"
)

// Spec is what goes into the image.
type Spec struct {
	Binary  string    // the static egret binary (linux)
	CACerts string    // a PEM bundle of CA certificates
	Arch    string    // GOARCH of the binary; "" : runtime.GOARCH
	Created time.Time // config "created" and file times; zero: the Unix epoch
}

// Build returns the image of spec. It fails when the binary is not a
// statically linked Linux executable of spec.Arch (the image has no C
// library) or the certificates are not PEM.
func Build(spec Spec) (v1.Image, error) {
	arch := spec.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	if err := CheckStatic(spec.Binary, arch); err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(spec.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: read the egret binary: %w", err)
	}
	certs, err := os.ReadFile(spec.CACerts)
	if err != nil {
		return nil, fmt.Errorf("image: read the CA certificates: %w", err)
	}
	if !bytes.Contains(certs, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("image: %s holds no PEM certificate (give a CA bundle such as %s)", spec.CACerts, DefaultCACerts)
	}
	cfg := v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, UID),
		Entrypoint: []string{BinaryPath},
		Env: []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"SSL_CERT_FILE=" + CACertsPath,
			"HOME=" + HomeDir,
		},
		WorkingDir: HomeDir,
		Labels: map[string]string{
			"org.opencontainers.image.title":       "egret",
			"org.opencontainers.image.description": "Egret stream processing: the static egret binary, CA certificates and the non-root user egret",
		},
	}
	return BuildEntries(egretEntries(bin, certs), cfg, arch, spec.Created)
}

// BuildEntries returns the image of one layer holding entries, with the
// config cfg, for linux/arch, created at created (zero: the Unix epoch).
func BuildEntries(entries []Entry, cfg v1.Config, arch string, created time.Time) (v1.Image, error) {
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC()
	layerTar, err := layerTar(entries, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: "egret image build"},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: created}
	cf.Config = cfg
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return img, nil
}

// Entry is one file, directory or symbolic link of a layer.
type Entry struct {
	Path string // without the leading /; directories end in /
	Mode int64  // permission bits
	UID  int    // owner and group
	Data []byte // a file's contents
	Link string // a symbolic link's target
}

// layerTar returns the tar of entries, in their order, every entry with
// the time created and no owner names.
func layerTar(entries []Entry, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e.Path, Mode: e.Mode, Uid: e.UID, Gid: e.UID, Size: int64(len(e.Data)), ModTime: created, Format: tar.FormatUSTAR}
		switch {
		case e.Link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.Link, 0
		case strings.HasSuffix(e.Path, "/"):
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image: write the layer: %w", err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, fmt.Errorf("image: write the layer: %w", err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: write the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// egretEntries are the files of egret's image: directories, /etc/passwd,
// /etc/group, the certificates and the binary.
func egretEntries(bin, certs []byte) []Entry {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", UserName, UID, UID, UserName, HomeDir)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", UserName, UID)
	return []Entry{
		{Path: "etc/", Mode: 0o755},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: "etc/ssl/", Mode: 0o755},
		{Path: "etc/ssl/certs/", Mode: 0o755},
		{Path: CACertsPath[1:], Mode: 0o644, Data: certs},
		{Path: "home/", Mode: 0o755},
		{Path: HomeDir[1:] + "/", Mode: 0o755, UID: UID},
		{Path: "tmp/", Mode: 0o1777},
		{Path: "usr/", Mode: 0o755},
		{Path: "usr/local/", Mode: 0o755},
		{Path: "usr/local/bin/", Mode: 0o755},
		{Path: BinaryPath[1:], Mode: 0o755, Data: bin},
	}
}

// CheckStatic requires a Linux ELF executable of arch with no program
// interpreter and no shared libraries.
func CheckStatic(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("image: %s is not an ELF executable (give the linux egret binary, built with CGO_ENABLED=0): %w", path, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV}
	if m, ok := want[arch]; !ok {
		return fmt.Errorf("image: architecture %q is not supported (one of amd64, arm64, 386, arm, ppc64le, s390x, riscv64)", arch)
	} else if f.Machine != m {
		return fmt.Errorf("image: %s is a %s binary, not %s (build it with GOARCH=%s)", path, f.Machine, arch, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("image: %s is dynamically linked; the image has no C library: build egret with CGO_ENABLED=0", path)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Errorf("image: %s needs shared libraries %v; build egret with CGO_ENABLED=0", path, libs)
	}
	return nil
}

// ParseRef parses an image reference (registry/repository:tag or @digest).
func ParseRef(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref, name.StrictValidation)
	if err != nil {
		// StrictValidation also rejects a reference without a tag; accept it as :latest.
		if r2, err2 := name.ParseReference(ref); err2 == nil {
			return r2, nil
		}
		return nil, fmt.Errorf("image reference %q: %w (write registry/repository:tag)", ref, err)
	}
	return r, nil
}

// WriteArchive writes img as an OCI image layout in one tar file (the
// format `ctr images import` and `crane push` read), named ref by the
// annotations org.opencontainers.image.ref.name (ref's tag) and
// io.containerd.image.name (ref in full), atomically. The archive is
// reproducible too: its bytes depend on the image and ref only.
func WriteArchive(img v1.Image, ref name.Reference, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".egret-image-*")
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := writeArchive(tmp, img, ref); err != nil {
		tmp.Close()
		return fmt.Errorf("image: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("image: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	return nil
}

func writeArchive(w io.Writer, img v1.Image, ref name.Reference) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	desc, err := partial.Descriptor(img)
	if err != nil {
		return err
	}
	refName := ref.Identifier()
	if t, ok := ref.(name.Tag); ok {
		refName = t.TagStr()
	}
	// containerd (and so the kubelet) names Docker Hub images
	// docker.io/..., not go-containerregistry's index.docker.io/...: a
	// pod's "busybox:1.36" must find the imported image.
	full := ref.Name()
	if rest, ok := strings.CutPrefix(full, name.DefaultRegistry+"/"); ok {
		full = "docker.io/" + rest
	}
	desc.Annotations = map[string]string{
		"org.opencontainers.image.ref.name": refName,
		"io.containerd.image.name":          full,
	}
	index, err := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{*desc}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	put := func(p string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := put("index.json", index); err != nil {
		return err
	}
	if err := put(blob(desc.Digest), manifest); err != nil {
		return err
	}
	cd, err := img.ConfigName()
	if err != nil {
		return err
	}
	if err := put(blob(cd), config); err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if err := put(blob(d), data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// ReadArchive reads the image of an archive WriteArchive wrote (or any
// OCI layout tar holding one image).
func ReadArchive(path string) (v1.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("image: %s is not a tar archive: %w", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > 1<<30 {
			return nil, fmt.Errorf("image: %s: entry %s is larger than 1 GiB", path, h.Name)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("image: read %s: %w", path, err)
		}
		files[strings.TrimPrefix(h.Name, "./")] = b
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(files["index.json"], &idx); err != nil || len(idx.Manifests) != 1 {
		return nil, fmt.Errorf("image: %s is not an OCI image archive with one image (index.json: %d manifests, %v)", path, len(idx.Manifests), err)
	}
	img, err := archiveImage(files, idx.Manifests[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("image: %s: %w", path, err)
	}
	return img, nil
}

// WriteLayout writes img into the OCI image layout dir (created when
// missing), annotated with ref's name.
func WriteLayout(img v1.Image, ref name.Reference, dir string) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("image: OCI layout %s: %w", dir, err)
		}
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.Name()})); err != nil {
		return fmt.Errorf("image: OCI layout %s: %w", dir, err)
	}
	return nil
}

// Push uploads img to ref's registry with the credentials docker and
// crane use (~/.docker/config.json, credential helpers).
func Push(ctx context.Context, img v1.Image, ref name.Reference, opts ...remote.Option) error {
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.Write(ref, img, opts...); err != nil {
		return fmt.Errorf("image: push %s: %w", ref, err)
	}
	return nil
}
