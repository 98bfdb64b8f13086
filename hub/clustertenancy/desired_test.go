package clustertenancy

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func tenant(name string, clusters, workload []string) *hostfleetv1alpha1.Tenant {
	return &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:   hostfleetv1alpha1.TenantSpec{LabelSyncPrefixes: []string{"example.com"}},
		Status: hostfleetv1alpha1.TenantStatus{Namespaces: []string{"tenant-" + name}, Clusters: clusters, WorkloadClusters: workload}}
}

func TestDesiredSortsAndCopies(t *testing.T) {
	g := NewWithT(t)
	ts := []hostfleetv1alpha1.Tenant{*tenant("b", []string{"c1"}, nil), *tenant("a", []string{"c1", "c2"}, []string{"c1", "c3"})}
	labels := map[string]map[string]string{"tenant-a": {"hostfleet.io/tenant": "a", "rack": "r1"}}
	spec := Desired("c1", ts, labels, nil)
	g.Expect(spec.ClusterName).To(Equal("c1"))
	g.Expect(spec.Tenants).To(HaveLen(2))
	g.Expect(spec.Tenants[0].Name).To(Equal("a"), "in name order")
	g.Expect(spec.WorkloadTenants).To(Equal([]hostfleetv1alpha1.ServedTenant{{Name: "a", Namespaces: []string{"tenant-a"},
		NamespaceLabels:   []hostfleetv1alpha1.NamespaceLabels{{Name: "tenant-a", Labels: map[string]string{"hostfleet.io/tenant": "a", "rack": "r1"}}},
		LabelSyncPrefixes: []string{"example.com"}, OnlyWorkloadCluster: false}}), "c3 is a's other workload cluster")
	g.Expect(spec.Tenants[1].NamespaceLabels).To(Equal([]hostfleetv1alpha1.NamespaceLabels{{Name: "tenant-b"}}),
		"a namespace the hub has not seen yet has no labels")
	spec.Tenants[0].Namespaces[0] = "changed"
	spec.Tenants[0].NamespaceLabels[0].Labels["rack"] = "changed"
	g.Expect(ts[1].Status.Namespaces[0]).To(Equal("tenant-a"), "no slice shared with the Tenants")
	g.Expect(labels["tenant-a"]["rack"]).To(Equal("r1"), "no map shared with the labels")
	g.Expect(Desired("c9", ts, labels, nil)).To(Equal(hostfleetv1alpha1.ClusterTenancySpec{ClusterName: "c9"}))
}

func TestAffected(t *testing.T) {
	g := NewWithT(t)
	old := tenant("a", []string{"c1", "c2", "c3"}, []string{"w1"})
	g.Expect(affected(nil, old)).To(Equal([]string{"c1", "c2", "c3", "w1"}), "created: all its clusters")
	g.Expect(affected(old, nil)).To(Equal([]string{"c1", "c2", "c3", "w1"}), "deleted: all its clusters")

	counted := old.DeepCopy()
	counted.Status.Claims, counted.Status.ReadyClaims = 7, 3
	counted.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
	g.Expect(affected(old, counted)).To(BeEmpty(), "claim counts and conditions touch no cluster")

	moved := old.DeepCopy()
	moved.Status.Clusters = []string{"c1", "c3", "c4"}
	g.Expect(affected(old, moved)).To(Equal([]string{"c2", "c4"}), "only the clusters that came or went")

	work := old.DeepCopy()
	work.Status.WorkloadClusters = []string{"w1", "w2"}
	g.Expect(affected(old, work)).To(Equal([]string{"w1", "w2"}), "w1 is no longer the only one")

	prefixes := old.DeepCopy()
	prefixes.Spec.LabelSyncPrefixes = nil
	g.Expect(affected(old, prefixes)).To(Equal([]string{"c1", "c2", "c3", "w1"}))
	healing := old.DeepCopy()
	healing.Spec.Healing = &hostfleetv1alpha1.Healing{Action: hostfleetv1alpha1.HealingReplace}
	g.Expect(affected(old, healing)).To(Equal([]string{"c1", "c2", "c3", "w1"}), "its agents heal its claims by its policy")
	namespaces := moved.DeepCopy()
	namespaces.Status.Namespaces = []string{"tenant-a", "more"}
	g.Expect(affected(old, namespaces)).To(Equal([]string{"c1", "c2", "c3", "c4", "w1"}), "before and after")
}
