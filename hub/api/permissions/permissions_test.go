package hosted_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/agent/hosted"
)

func TestSecretsAreNeverListed(t *testing.T) {
	for _, tc := range []struct{ local, bmc bool }{{false, false}, {true, false}, {false, true}} {
		local := tc.local
		g := NewWithT(t)
		verbs := map[string]bool{}
		for _, r := range hosted.ClusterRules(tc.local, tc.bmc) {
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
		g.Expect(verbs["get"]).To(Equal(local || tc.bmc), "secrets are read only to serve local claims or reach BMCs")
		g.Expect(verbs).To(HaveKey("create"))
		g.Expect(verbs).To(HaveKey("delete"))
	}
}
