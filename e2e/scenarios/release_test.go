package scenarios

import (
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The last release docs/CHANGELOG.md names is a commit of this repository
// whose bundles name its images: the upgrade scenarios start from it.
func TestLastRelease(t *testing.T) {
	g := NewWithT(t)
	version, commit, err := LastRelease()
	g.Expect(err).NotTo(HaveOccurred())
	for path, want := range map[string]string{
		"deploy/operator/kustomization.yaml":         "newTag: " + version,
		"deploy/helm/hostfleet-operator/values.yaml": "tag: " + version,
		"deploy/helm/hostfleet-operator/Chart.yaml":  "appVersion: " + version,
	} {
		out, err := exec.Command("git", append(gitArgs(), "show", commit+":"+path)...).CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "commit %s of %s is in the repository: %s", commit, version, out)
		g.Expect(strings.Split(string(out), "\n")).To(ContainElement(HaveSuffix(want)), "%s at %s", path, version)
	}
}
