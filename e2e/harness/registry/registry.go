// Package registry is an in-process OCI registry for the end-to-end tests
// (go-containerregistry's registry on 127.0.0.1, blobs in memory). It serves
// images at the references manifests name, laid out as a pull-through mirror
// does: ghcr.io/hostfleet/hostfleet-agent:v1 is served as
// <host>/ghcr.io/hostfleet/hostfleet-agent:v1, so a node's containerd configured
// with the registry's host pulls every image from it.
package registry

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/hostfleet/hostfleet/hack/imagebuild"
)

// RefName is the OCI layout annotation naming an index's reference.
const RefName = "org.opencontainers.image.ref.name"

// Registry is one running registry.
type Registry struct {
	// Host is its address, 127.0.0.1:<port>.
	Host string
	srv  *httptest.Server
}

// Start starts a registry on 127.0.0.1; Close stops it.
func Start() *Registry {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(discard{}, "", 0))))
	return &Registry{Host: srv.Listener.Addr().String(), srv: srv}
}

// StartOn starts a registry on a free port of host (an address of this
// machine's, such as the one nodes reach).
func StartOn(host string) (*Registry, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("registry on %s: %w", host, err)
	}
	srv := httptest.NewUnstartedServer(ggcrregistry.New(ggcrregistry.Logger(log.New(discard{}, "", 0))))
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return &Registry{Host: l.Addr().String(), srv: srv}, nil
}

// Upstreams are the registries whose images r serves (the first element of
// each repository, as Mirror lays them out), sorted.
func (r *Registry) Upstreams() ([]string, error) {
	reg, err := name.NewRegistry(r.Host, name.Insecure)
	if err != nil {
		return nil, err
	}
	repos, err := remote.Catalog(context.Background(), reg)
	if err != nil {
		return nil, fmt.Errorf("catalog of %s: %w", r.Host, err)
	}
	seen := map[string]bool{}
	var out []string
	for _, repo := range repos {
		host, _, _ := strings.Cut(repo, "/")
		if !seen[host] {
			seen[host] = true
			out = append(out, host)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Close stops the registry.
func (r *Registry) Close() { r.srv.Close() }

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Mirror is where host serves ref: the original registry's host becomes
// the first element of the repository.
func Mirror(host, ref string) (name.Reference, error) {
	orig, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
	repo := host + "/" + orig.Context().RegistryStr() + "/" + orig.Context().RepositoryStr()
	switch o := orig.(type) {
	case name.Digest:
		return name.NewDigest(repo+"@"+o.DigestStr(), name.Insecure)
	case name.Tag:
		return name.NewTag(repo+":"+o.TagStr(), name.Insecure)
	}
	return nil, fmt.Errorf("image reference %q: neither a tag nor a digest", ref)
}

// Push serves img at ref.
func (r *Registry) Push(ref string, img v1.Image) error {
	m, err := Mirror(r.Host, ref)
	if err != nil {
		return err
	}
	if err := remote.Write(m, img); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}

// Layout is the image index an OCI layout of `make images` holds, and the
// reference it names (org.opencontainers.image.ref.name).
func Layout(dir string) (v1.ImageIndex, string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("OCI layout %s (run make images): %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, "", err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations[RefName] == "" {
		return nil, "", fmt.Errorf("OCI layout %s: want one index named by %s", dir, RefName)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return nil, "", err
	}
	return idx, m.Manifests[0].Annotations[RefName], nil
}

// PushLayout serves the image index of an OCI layout (what `make images`
// writes) at the reference it names, and at each of refs; it returns the
// named reference.
func (r *Registry) PushLayout(dir string, refs ...string) (string, error) {
	idx, named, err := Layout(dir)
	if err != nil {
		return "", err
	}
	for _, ref := range append([]string{named}, refs...) {
		to, err := Mirror(r.Host, ref)
		if err != nil {
			return "", err
		}
		if err := remote.WriteIndex(to, idx); err != nil {
			return "", fmt.Errorf("push %s: %w", ref, err)
		}
	}
	return named, nil
}

// Binary is an image of one static binary for this machine's architecture:
// the binary at path (mode 0755), run as user, with entrypoint (none, as
// OCM's images have, when empty).
func Binary(binary, path, user string, entrypoint ...string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	return imagebuild.Assemble(imagebuild.Config{
		Arch:       runtime.GOARCH,
		Files:      []imagebuild.File{{Path: filepath.Clean(path)[1:], Mode: 0o755, Data: data}},
		Entrypoint: entrypoint,
		User:       user,
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		// Served on this machine: a plain tar, nothing to compress or
		// decompress.
		Uncompressed: true,
	})
}
