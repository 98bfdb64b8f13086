package permissions_test

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/hostfleet/hostfleet/internal/permissions"
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
		g.Expect(verbs).NotTo(HaveKey("get"), "secrets are read per namespace only: BMC credentials, local claims' data (AgentNamespaceGrants, ForwardedClaimSecrets)")
		g.Expect(verbs).To(HaveKey("create"))
		g.Expect(verbs).To(HaveKey("delete"))
	}
}

func TestBMCCredentialsPerNamespace(t *testing.T) {
	g := NewWithT(t)
	g.Expect(permissions.AgentBMCNamespace()).To(ConsistOf(HaveField("Verbs", []string{"get"})), "get only: never list or watch")
	g.Expect(permissions.AgentBMCNamespace()[0].Resources).To(Equal([]string{"secrets"}))
}

func TestWorkloadAgentReadsNoSecretAndNoHost(t *testing.T) {
	g := NewWithT(t)
	for _, rules := range [][]rbacv1.PolicyRule{
		permissions.AgentManagedCluster(permissions.Features{Workload: true, LocalClaims: true, BMCDriver: true}),
		permissions.AgentWorkloadTenantNamespace(),
	} {
		for _, r := range rules {
			g.Expect(r.Resources).NotTo(ContainElements("secrets", "baremetalhosts"), "%+v", r)
			if slices.Contains(r.Resources, "hostclaims") || slices.Contains(r.Resources, "nodes") {
				g.Expect(r.Verbs).NotTo(ContainElements("create", "update", "delete"), "claims are read, Nodes only patched: %+v", r)
			}
		}
	}
	g.Expect(permissions.AgentWorkloadTenantNamespace()).To(ContainElement(And(
		HaveField("Resources", []string{"hostclaims/status"}), HaveField("Verbs", []string{"patch"}))),
		"status is patched (admission keeps it to NodeLabelsSynced)")
}

func TestNamespaceGrants(t *testing.T) {
	g := NewWithT(t)
	grants := permissions.AgentNamespaceGrants([]string{"hosts"}, []string{"hosts", "claims"})
	g.Expect(grants).To(HaveLen(3))
	g.Expect(grants).To(ContainElements(
		HaveField("Namespace", "hosts"), HaveField("Namespace", "claims")))
	for _, gr := range grants {
		g.Expect(gr.Rules).To(Equal(permissions.AgentBMCNamespace()), "get Secrets by name, in that namespace only")
	}
	g.Expect(permissions.ForwardedClaimSecrets([]string{"a"})).To(ConsistOf(And(HaveField("ResourceNames", []string{"a"}), HaveField("Verbs", []string{"get"}))))
}
