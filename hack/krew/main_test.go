package main

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// The manifest krew reads: one platform per archive, each with its
// checksum and the plugin's binary.
func TestRender(t *testing.T) {
	g := NewWithT(t)
	platforms := append([]Platform(nil), Platforms...)
	for i := range platforms {
		platforms[i].Archive = "kubectl-hostfleet_" + platforms[i].OS + "_" + platforms[i].Arch + ".tar.gz"
		platforms[i].SHA256 = strings.Repeat("ab", 32)
	}
	out, err := Render("v0.1.0", platforms)
	g.Expect(err).NotTo(HaveOccurred())
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			Version          string
			Homepage         string
			ShortDescription string `json:"shortDescription"`
			Description      string
			Platforms        []struct {
				Selector struct{ MatchLabels map[string]string }
				URI      string `json:"uri"`
				SHA256   string `json:"sha256"`
				Bin      string
			}
		}
	}
	g.Expect(yaml.UnmarshalStrict(out, &m)).To(Succeed(), string(out))
	g.Expect(m.APIVersion).To(Equal("krew.googlecontainertools.github.com/v1alpha2"))
	g.Expect(m.Kind).To(Equal("Plugin"))
	g.Expect(m.Metadata.Name).To(Equal("hostfleet"))
	g.Expect(m.Spec.Version).To(Equal("v0.1.0"))
	g.Expect(m.Spec.ShortDescription).NotTo(BeEmpty())
	g.Expect(m.Spec.Platforms).To(HaveLen(4))
	for i, p := range m.Spec.Platforms {
		g.Expect(p.Selector.MatchLabels).To(Equal(map[string]string{"os": platforms[i].OS, "arch": platforms[i].Arch}))
		g.Expect(p.URI).To(HaveSuffix("/v0.1.0/" + platforms[i].Archive))
		g.Expect(p.SHA256).To(HaveLen(64))
		g.Expect(p.Bin).To(Equal("kubectl-hostfleet"))
	}
}

func TestArchiveIsReproducible(t *testing.T) {
	g := NewWithT(t)
	files := map[string][]byte{"kubectl-hostfleet": []byte("bin"), "LICENSE": []byte("text")}
	a, err := tarGz(files)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := tarGz(files)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).To(Equal(b))
}
