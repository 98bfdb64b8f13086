package hosted_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/agent/hosted"
)

func TestSecretsAreNeverListed(t *testing.T) {
	for _, local := range []bool{false, true} {
		g := NewWithT(t)
		verbs := map[string]bool{}
		for _, r := range hosted.ClusterRules(local) {
			for _, res := range r.Resources {
				if res == "secrets" {
					for _, v := range r.Verbs {
						verbs[v] = true
					}
				}
			}
		}
		g.Expect(verbs).NotTo(HaveKey("list"), "local=%v", local)
		g.Expect(verbs).NotTo(HaveKey("watch"), "local=%v", local)
		g.Expect(verbs["get"]).To(Equal(local), "secrets are read only to serve local claims")
		g.Expect(verbs).To(HaveKey("create"))
		g.Expect(verbs).To(HaveKey("delete"))
	}
}
