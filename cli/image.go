package cli

import (
	"fmt"
	"os"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/internal/ociimage"
)

// DefaultImageRef is the reference `egret image` names the image by; it
// is the Kubernetes scheduler's default egret.kubernetes.image.
const DefaultImageRef = "egret/egret:latest"

// imageFlags are the inputs of the image, shared by build and push.
type imageFlags struct {
	binary, caCerts string
}

func (f *imageFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.binary, "binary", "", "the static linux egret binary to put in the image (default: this egret, when statically linked)")
	fl.StringVar(&f.caCerts, "ca-certs", ociimage.DefaultCACerts, "the PEM bundle of CA certificates to put in the image")
}

// build builds the image; SOURCE_DATE_EPOCH (seconds) sets its creation
// time, the Unix epoch otherwise.
func (f *imageFlags) build() (*ociimage.Spec, error) {
	spec := &ociimage.Spec{Binary: f.binary, CACerts: f.caCerts}
	if spec.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, usagef("no --binary given and this egret's path is unknown: %v", err)
		}
		spec.Binary = exe
	}
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil || sec < 0 {
			return nil, usagef("SOURCE_DATE_EPOCH=%q is not a number of seconds since 1970", v)
		}
		spec.Created = time.Unix(sec, 0)
	}
	for _, p := range []struct{ flag, path string }{{"--binary", spec.Binary}, {"--ca-certs", spec.CACerts}} {
		if _, err := os.Stat(p.path); err != nil {
			return nil, usagef("%s: %v", p.flag, err)
		}
	}
	return spec, nil
}

func imageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build egret's container image (without Docker) and push it to a registry",
		Long: `The image holds the static egret binary (/usr/local/bin/egret), CA certificates
and the non-root user egret (uid 65532), nothing else. It is reproducible: the
same binary and certificates give the same digest (file times are the Unix
epoch, or SOURCE_DATE_EPOCH). Build the binary with CGO_ENABLED=0 (make image).`,
	}
	cmd.AddCommand(imageBuildCmd(), imagePushCmd())
	return cmd
}

func imageBuildCmd() *cobra.Command {
	var (
		f              imageFlags
		out, layoutDir string
		tag            string
	)
	cmd := &cobra.Command{
		Use:   "build -o FILE [--tag REF] [--binary PATH] [--ca-certs PATH] [--oci-layout DIR]",
		Short: "Write the image as an OCI archive (for ctr images import or crane push) and print its digest",
		Args:  exactArgs(0, "egret image build -o egret-image.tar --binary bin/egret-linux-amd64"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" && layoutDir == "" {
				return usagef("say where to write the image: -o FILE (an OCI archive) or --oci-layout DIR")
			}
			ref, err := ociimage.ParseRef(tag)
			if err != nil {
				return usageError{err}
			}
			spec, err := f.build()
			if err != nil {
				return err
			}
			img, err := ociimage.Build(*spec)
			if err != nil {
				return usageError{err}
			}
			if out != "" {
				if err := ociimage.WriteArchive(img, ref, out); err != nil {
					return err
				}
			}
			if layoutDir != "" {
				if err := ociimage.WriteLayout(img, ref, layoutDir); err != nil {
					return err
				}
			}
			d, err := img.Digest()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", ref.Name(), d)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "the OCI archive (a tar file) to write")
	cmd.Flags().StringVar(&layoutDir, "oci-layout", "", "also (or instead) add the image to this OCI image layout directory")
	cmd.Flags().StringVar(&tag, "tag", DefaultImageRef, "the name the archive gives the image (ctr images import uses it)")
	return cmd
}

func imagePushCmd() *cobra.Command {
	var (
		f    imageFlags
		from string
	)
	cmd := &cobra.Command{
		Use:   "push REF [--from FILE | --binary PATH --ca-certs PATH]",
		Short: "Push the image to a registry (credentials as docker and crane find them) and print its digest",
		Args:  exactArgs(1, "egret image push registry.example.com/team/egret:1.0 --from egret-image.tar"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := ociimage.ParseRef(args[0])
			if err != nil {
				return usageError{err}
			}
			var spec *ociimage.Spec
			if from == "" {
				if spec, err = f.build(); err != nil {
					return err
				}
			} else if cmd.Flags().Changed("binary") || cmd.Flags().Changed("ca-certs") {
				return usagef("--from pushes a built image: it takes no --binary or --ca-certs")
			}
			img, err := loadOrBuild(from, spec)
			if err != nil {
				return usageError{err}
			}
			if err := ociimage.Push(cmd.Context(), img, ref); err != nil {
				return err
			}
			d, err := img.Digest()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", ref.Context().Name(), d)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&from, "from", "", "push the image of this OCI archive (egret image build -o) instead of building one")
	return cmd
}

func loadOrBuild(archive string, spec *ociimage.Spec) (v1.Image, error) {
	if archive != "" {
		return ociimage.ReadArchive(archive)
	}
	return ociimage.Build(*spec)
}
