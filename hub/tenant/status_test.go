package tenant_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/tenant"
)

func TestReadyCondition(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reg     tenant.Registration
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"registered", tenant.Registration{ClusterSet: "lab", SetFound: true, Clusters: []string{"a", "b"}, Namespaces: []string{"tenant-x"}},
			metav1.ConditionTrue, hostfleetv1alpha1.ReasonRegistered, "namespaces tenant-x serve the 2 clusters of set lab"},
		{"registered on an empty set", tenant.Registration{ClusterSet: "lab", SetFound: true, Namespaces: []string{"a", "b"}},
			metav1.ConditionTrue, hostfleetv1alpha1.ReasonRegistered, "namespaces a,b serve the 0 clusters of set lab"},
		{"cluster set missing", tenant.Registration{ClusterSet: "nope", Namespaces: []string{"tenant-x"}},
			metav1.ConditionFalse, hostfleetv1alpha1.ReasonClusterSetMissing, "ManagedClusterSet nope does not exist: create it or fix spec.clusterSet"},
		{"a namespace of another tenant", tenant.Registration{ClusterSet: "lab", SetFound: true,
			Conflicts: map[string]string{"shared": "belongs to tenant y"}},
			metav1.ConditionFalse, hostfleetv1alpha1.ReasonNamespaceConflict, "namespace shared belongs to tenant y; choose other names in spec.namespaces"},
		{"conflicts sorted, and reported before a missing set", tenant.Registration{ClusterSet: "nope",
			Conflicts: map[string]string{"b": "exists and is not a tenant namespace", "a": "belongs to tenant y"}},
			metav1.ConditionFalse, hostfleetv1alpha1.ReasonNamespaceConflict,
			"namespace a belongs to tenant y; namespace b exists and is not a tenant namespace; choose other names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := tenant.ReadyCondition(tc.reg)
			g.Expect(c.Type).To(Equal(hostfleetv1alpha1.ConditionReady))
			g.Expect(c.Status).To(Equal(tc.status))
			g.Expect(c.Reason).To(Equal(tc.reason))
			g.Expect(c.Message).To(ContainSubstring(tc.message))
		})
	}
}
