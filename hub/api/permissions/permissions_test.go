package permissions_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/hub/api/permissions"
)

func TestSecretsAreNeverListed(t *testing.T) {
	for _, f := range []permissions.Features{{}, {LocalClaims: true}, {BMCDriver: true}} {
		g := NewWithT(t)
		verbs := map[string]bool{}
		for _, r := range permissions.AgentManagedCluster(f) {
			for _, res := range r.Resources {
				if res == "secrets" {
					for _, v := range r.Verbs {
						verbs[v] = true
					}
				}
			}
		}
		g.Expect(verbs).NotTo(HaveKey("list"), "%+v", f)
		g.Expect(verbs).NotTo(HaveKey("watch"), "%+v", f)
		g.Expect(verbs["get"]).To(Equal(f.LocalClaims), "secrets are read cluster-wide only to serve local claims; BMC credentials per namespace")
		g.Expect(verbs).To(HaveKey("create"))
		g.Expect(verbs).To(HaveKey("delete"))
	}
}

func TestBMCCredentialsPerNamespace(t *testing.T) {
	g := NewWithT(t)
	g.Expect(permissions.AgentBMCNamespace()).To(ConsistOf(HaveField("Verbs", []string{"get"})), "get only: never list or watch")
	g.Expect(permissions.AgentBMCNamespace()[0].Resources).To(Equal([]string{"secrets"}))
}
