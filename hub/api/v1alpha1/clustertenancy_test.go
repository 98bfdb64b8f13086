package v1alpha1_test

import (
	"testing"

	. "github.com/onsi/gomega"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

type (
	tenancy = hostfleetv1alpha1.ClusterTenancy
	served  = hostfleetv1alpha1.ServedTenant
)

const (
	infrastructure = hostfleetv1alpha1.RoleInfrastructure
	workload       = hostfleetv1alpha1.RoleWorkload
)

func TestClusterTenancyServed(t *testing.T) {
	g := NewWithT(t)
	var none *tenancy
	g.Expect(none.Served(infrastructure)).To(BeNil(), "not written yet: serves nothing")
	g.Expect(none.Tenant(workload, "a")).To(BeNil())

	ct := &tenancy{Spec: hostfleetv1alpha1.ClusterTenancySpec{
		Tenants:         []served{{Name: "a"}, {Name: "b", LabelSyncPrefixes: []string{"example.com"}}},
		WorkloadTenants: []served{{Name: "c", OnlyWorkloadCluster: true}},
	}}
	g.Expect(ct.Served(infrastructure)).To(HaveLen(2))
	g.Expect(ct.Served(workload)).To(Equal([]served{{Name: "c", OnlyWorkloadCluster: true}}))
	g.Expect(ct.Tenant(infrastructure, "b")).To(Equal(&served{Name: "b", LabelSyncPrefixes: []string{"example.com"}}))
	g.Expect(ct.Tenant(infrastructure, "c")).To(BeNil(), "c is served in the workload role only")
	g.Expect(ct.Tenant(workload, "c")).NotTo(BeNil())
}
