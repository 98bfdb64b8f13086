package registry_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/e2e/harness/registry"
)

func TestMirror(t *testing.T) {
	g := NewWithT(t)
	for ref, want := range map[string]string{
		"ghcr.io/hostfleet/hostfleet-agent:v1":                "127.0.0.1:5000/ghcr.io/hostfleet/hostfleet-agent:v1",
		"quay.io/open-cluster-management/registration:v1.2.0": "127.0.0.1:5000/quay.io/open-cluster-management/registration:v1.2.0",
		"busybox": "127.0.0.1:5000/index.docker.io/library/busybox:latest",
		"example.com/a/b@sha256:" + strings.Repeat("0", 64): "127.0.0.1:5000/example.com/a/b@sha256:" + strings.Repeat("0", 64),
	} {
		m, err := registry.Mirror("127.0.0.1:5000", ref)
		g.Expect(err).NotTo(HaveOccurred(), ref)
		g.Expect(m.String()).To(Equal(want), ref)
	}
	_, err := registry.Mirror("127.0.0.1:5000", "Not A Reference")
	g.Expect(err).To(MatchError(ContainSubstring(`image reference "Not A Reference"`)))
}

// TestPushAndPull: an image pushed at a reference is pulled back from its
// mirrored place, with its config.
func TestPushAndPull(t *testing.T) {
	g := NewWithT(t)
	r := registry.Start()
	defer r.Close()
	bin := filepath.Join(t.TempDir(), "prog")
	g.Expect(os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755)).To(Succeed())
	img, err := registry.Binary(bin, "/usr/bin/prog", "10001", "/usr/bin/prog")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Push("quay.io/example/prog:v1", img)).To(Succeed())

	m, err := registry.Mirror(r.Host, "quay.io/example/prog:v1")
	g.Expect(err).NotTo(HaveOccurred())
	got, err := remote.Image(m)
	g.Expect(err).NotTo(HaveOccurred())
	want, err := img.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Digest()).To(Equal(want))
	cfg, err := got.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Config.User).To(Equal("10001"))
	g.Expect(cfg.Config.Entrypoint).To(Equal([]string{"/usr/bin/prog"}))

	t.Log("an OCI layout, as make images writes it, is served at the reference it names")
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	g.Expect(err).NotTo(HaveOccurred())
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img})
	g.Expect(p.AppendIndex(idx, layout.WithAnnotations(map[string]string{registry.RefName: "ghcr.io/example/prog:v2"}))).To(Succeed())
	named, err := r.PushLayout(dir, "ghcr.io/example/prog:latest")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(named).To(Equal("ghcr.io/example/prog:v2"))
	for _, ref := range []string{"ghcr.io/example/prog:v2", "ghcr.io/example/prog:latest"} {
		m, err := registry.Mirror(r.Host, ref)
		g.Expect(err).NotTo(HaveOccurred())
		got, err := remote.Image(m)
		g.Expect(err).NotTo(HaveOccurred(), ref)
		g.Expect(got.Digest()).To(Equal(want), ref)
	}

	_, err = r.PushLayout(t.TempDir())
	g.Expect(err).To(MatchError(ContainSubstring("run make images")))
}
