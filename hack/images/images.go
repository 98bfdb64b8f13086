// Command images builds the hub, agent and operator container images as OCI
// image layouts (one index for linux/amd64 and linux/arm64) and `docker
// load`-able tarballs, with no container engine: static binaries, the
// version stamped, user 65532, CA certificates, OCI labels, nothing else.
//
//	go run ./hack/images -out bin/images            # make images
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/hostfleet/hostfleet/hack/imagebuild"
)

// Image is one of the project's images.
type Image struct {
	// Name is the image's name and its binary's: /<Name> in the image.
	Name string
	// Package is the Go main package built into it.
	Package string
	// Dockerfile builds the same image with a container engine.
	Dockerfile string
}

// Images are the project's images.
var Images = []Image{
	{Name: "hostfleet-hub", Package: "./hub/cmd/hostfleet-hub", Dockerfile: "Dockerfile.hub"},
	{Name: "hostfleet-agent", Package: "./agent/cmd/hostfleet-agent", Dockerfile: "Dockerfile.agent"},
	{Name: "hostfleet-operator", Package: "./operator/cmd/hostfleet-operator", Dockerfile: "operator/Dockerfile"},
}

const (
	// User is the images' user and group (distroless's nonroot).
	User = "65532:65532"
	// CABundle is where the images carry the CA certificates.
	CABundle = "/etc/ssl/certs/ca-certificates.crt"
	// Registry is where the images are published.
	Registry = "ghcr.io/hostfleet"
	// Source is the images' source repository label.
	Source = "https://github.com/hostfleet/hostfleet"
)

// Build is what one run builds.
type Build struct {
	// Root is the repository root.
	Root string
	// Version and Revision are stamped into binaries and labels.
	Version, Revision string
	// Arches are the linux architectures of each index.
	Arches []string
	// Out receives <name>/ (an OCI layout) and <name>-<arch>.tar.
	Out string
	// CACerts is the CA bundle the images carry.
	CACerts string
	// Log receives progress.
	Log io.Writer
}

// Result is one built image.
type Result struct {
	Image  Image
	Index  v1.Hash
	Arches map[string]v1.Hash
	// Size is the compressed size of each arch's layers.
	Size map[string]int64
}

// Run builds every image.
func (b Build) Run(images []Image) ([]Result, error) {
	ca, err := os.ReadFile(b.CACerts)
	if err != nil {
		return nil, fmt.Errorf("the images carry CA certificates from %s (install Debian's ca-certificates): %w", b.CACerts, err)
	}
	// The images are built side by side: each is a few links and a
	// compressed layer per arch, one core's work.
	out := make([]Result, len(images))
	errs := make([]error, len(images))
	var wg sync.WaitGroup
	for i, img := range images {
		wg.Go(func() {
			if out[i], errs[i] = b.image(img, ca); errs[i] != nil {
				errs[i] = fmt.Errorf("image %s: %w", img.Name, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func (b Build) image(img Image, ca []byte) (Result, error) {
	res := Result{Image: img, Arches: map[string]v1.Hash{}, Size: map[string]int64{}}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	ref, err := name.ParseReference(Registry + "/" + img.Name + ":" + b.Version)
	if err != nil {
		return res, err
	}
	for _, arch := range b.Arches {
		bin := filepath.Join(b.Out, "build", arch, img.Name)
		if err := b.compile(img, arch, bin); err != nil {
			return res, err
		}
		i, err := b.assemble(img, arch, bin, ca)
		if err != nil {
			return res, err
		}
		digest, err := i.Digest()
		if err != nil {
			return res, err
		}
		layers, err := i.Layers()
		if err != nil {
			return res, err
		}
		for _, l := range layers {
			size, err := l.Size()
			if err != nil {
				return res, err
			}
			res.Size[arch] += size
		}
		res.Arches[arch] = digest
		if err := tarball.WriteToFile(filepath.Join(b.Out, img.Name+"-"+arch+".tar"), ref, i); err != nil {
			return res, fmt.Errorf("docker tarball: %w", err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: i,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	dir := filepath.Join(b.Out, img.Name)
	if err := os.RemoveAll(dir); err != nil {
		return res, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return res, err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.String()})); err != nil {
		return res, err
	}
	res.Index, err = idx.Digest()
	return res, err
}

// compile builds a static binary with the version stamped.
func (b Build) compile(img Image, arch, out string) error {
	ldflags := fmt.Sprintf("-s -w -X github.com/hostfleet/hostfleet/internal/command.Version=%s", b.Version)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, img.Package)
	cmd.Dir = b.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s for %s: %w\n%s", img.Package, arch, err, o)
	}
	if b.Log != nil {
		_, _ = fmt.Fprintf(b.Log, "built %s for linux/%s\n", img.Name, arch)
	}
	return nil
}

// assemble is one arch's image: one layer with the binary, the CA bundle
// and the passwd and group files that name user 65532; no shell.
func (b Build) assemble(img Image, arch, bin string, ca []byte) (v1.Image, error) {
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	return imagebuild.Assemble(imagebuild.Config{
		Arch:       arch,
		Files:      append(imagebuild.NonRoot(CABundle, ca), imagebuild.File{Path: img.Name, Mode: 0o755, Data: binary}),
		Entrypoint: []string{"/" + img.Name},
		User:       User,
		WorkingDir: "/",
		Env:        []string{"PATH=/", "SSL_CERT_FILE=" + CABundle},
		Labels: map[string]string{
			"org.opencontainers.image.title":    img.Name,
			"org.opencontainers.image.source":   Source,
			"org.opencontainers.image.revision": b.Revision,
			"org.opencontainers.image.version":  b.Version,
			"org.opencontainers.image.licenses": "Apache-2.0",
		},
	})
}
