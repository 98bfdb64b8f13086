package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	. "github.com/onsi/gomega"
)

// TestDockerfilesAgree: each Dockerfile, for people with a container
// engine, builds what `make images` builds: the same package to the same
// path, the version stamped, the same user and entrypoint.
func TestDockerfilesAgree(t *testing.T) {
	for _, img := range Images {
		t.Run(img.Name, func(t *testing.T) {
			g := NewWithT(t)
			data, err := os.ReadFile(filepath.Join("..", "..", img.Dockerfile))
			g.Expect(err).NotTo(HaveOccurred())
			df := string(data)
			g.Expect(df).To(MatchRegexp(`(?m)^ENTRYPOINT \["/%s"\]$`, regexp.QuoteMeta(img.Name)))
			g.Expect(df).To(MatchRegexp(`(?m)^USER %s$`, regexp.QuoteMeta(User)))
			g.Expect(df).To(MatchRegexp(`(?m)^COPY --from=build /out/%s /%s$`, regexp.QuoteMeta(img.Name), regexp.QuoteMeta(img.Name)))
			g.Expect(df).To(MatchRegexp(`(?m)^RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X [^"]*=\$\{VERSION\}" -o /out/%s %s$`,
				regexp.QuoteMeta(img.Name), regexp.QuoteMeta(img.Package)))
			g.Expect(df).To(ContainSubstring("FROM gcr.io/distroless/static:nonroot"), "no shell, CA certificates, user 65532")
		})
	}
}

// TestImage builds one image for this machine's architecture and reads it
// back: its config, its only layer's files (no shell), the docker tarball,
// and the version the binary says.
func TestImage(t *testing.T) {
	g := NewWithT(t)
	out := t.TempDir()
	b := Build{Root: "../..", Version: "v0.0.0-test", Revision: "0123abcd", Arches: []string{runtime.GOARCH}, Out: out,
		CACerts: "/etc/ssl/certs/ca-certificates.crt"}
	img := Images[2] // the operator: the smallest build
	results, err := b.Run([]Image{img})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(results).To(HaveLen(1))

	p, err := layout.FromPath(filepath.Join(out, img.Name))
	g.Expect(err).NotTo(HaveOccurred())
	top, err := p.ImageIndex()
	g.Expect(err).NotTo(HaveOccurred())
	im, err := top.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(im.Manifests).To(HaveLen(1))
	g.Expect(im.Manifests[0].Annotations).To(HaveKeyWithValue("org.opencontainers.image.ref.name", "ghcr.io/hostfleet/hostfleet-operator:v0.0.0-test"))
	idx, err := top.ImageIndex(im.Manifests[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())
	manifest, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest.Manifests).To(HaveLen(1))
	g.Expect(manifest.Manifests[0].Platform.Architecture).To(Equal(runtime.GOARCH))
	g.Expect(manifest.Manifests[0].Digest).To(Equal(results[0].Arches[runtime.GOARCH]))
	image, err := idx.Image(manifest.Manifests[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())

	cfg, err := image.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.OS).To(Equal("linux"))
	g.Expect(cfg.Config.User).To(Equal("65532:65532"))
	g.Expect(cfg.Config.Entrypoint).To(Equal([]string{"/hostfleet-operator"}))
	g.Expect(cfg.Config.Env).To(ContainElement("SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"))
	g.Expect(cfg.Config.Labels).To(And(HaveKeyWithValue("org.opencontainers.image.version", "v0.0.0-test"),
		HaveKeyWithValue("org.opencontainers.image.revision", "0123abcd"),
		HaveKeyWithValue("org.opencontainers.image.source", "https://github.com/hostfleet/hostfleet")))

	layers, err := image.Layers()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(layers).To(HaveLen(1))
	rc, err := layers[0].Uncompressed()
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = rc.Close() }()
	files := map[string]int64{}
	binary := filepath.Join(t.TempDir(), "hostfleet-operator")
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		files[h.Name] = h.Mode
		if h.Name == "hostfleet-operator" {
			f, err := os.OpenFile(binary, os.O_CREATE|os.O_WRONLY, 0o755)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = io.Copy(f, tr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(f.Close()).To(Succeed())
		}
	}
	g.Expect(files).To(Equal(map[string]int64{"etc/": 0o755, "etc/ssl/": 0o755, "etc/ssl/certs/": 0o755,
		"etc/passwd": 0o644, "etc/group": 0o644, "etc/ssl/certs/ca-certificates.crt": 0o644, "hostfleet-operator": 0o755}),
		"the binary, CA certificates and user 65532: no shell, nothing else")

	t.Log("the binary in the image says its version")
	version, err := exec.Command(binary, "--version").Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(string(version))).To(Equal("v0.0.0-test"))

	t.Log("the docker tarball holds the same image: the same config and layer contents (docker's manifest media types)")
	fromTar, err := tarball.ImageFromPath(filepath.Join(out, "hostfleet-operator-"+runtime.GOARCH+".tar"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	want, err := image.ConfigName()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fromTar.ConfigName()).To(Equal(want))
}
