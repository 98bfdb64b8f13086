package tenant_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

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
		{"granted ClusterRoles missing", tenant.Registration{ClusterSet: "lab", SetFound: true, MissingRoles: []string{"hostfleet:tenant-admin"}},
			metav1.ConditionFalse, hostfleetv1alpha1.ReasonGrantRolesMissing, "ClusterRoles hostfleet:tenant-admin do not exist, so the tenant's admins and agents hold no rights"},
		{"a host class that does not compile", tenant.Registration{ClusterSet: "lab", SetFound: true,
			InvalidClass: errors.New(`class gpu of tenant a: values[0][example.com/gpu]: Invalid value: "not a value!"`)},
			metav1.ConditionFalse, hostfleetv1alpha1.ReasonInvalidHostClass, `class gpu of tenant a: values[0][example.com/gpu]: Invalid value: "not a value!": fix spec.quotas; no claim of the tenant is placed meanwhile`},
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

func TestWorkloadCondition(t *testing.T) {
	for _, tc := range []struct {
		name              string
		accepted, ignored []string
		status            metav1.ConditionStatus
		reason, message   string
	}{
		{"none", nil, nil, metav1.ConditionTrue, hostfleetv1alpha1.ReasonNoWorkloadCluster, "no Node labels are synced"},
		{"one", []string{"wl"}, nil, metav1.ConditionTrue, hostfleetv1alpha1.ReasonOneWorkloadCluster, "synced to the Nodes of workload cluster wl"},
		{"several", []string{"wl", "wl2"}, nil, metav1.ConditionFalse, hostfleetv1alpha1.ReasonSeveralWorkloadClusters,
			"wl, wl2 are all workload clusters of the tenant: a claim without the hostfleet.io/workload-cluster annotation has its labels synced to no Node"},
		{"one and one not accepted", []string{"wl"}, []string{"rogue"}, metav1.ConditionFalse, hostfleetv1alpha1.ReasonWorkloadClusterNotAccepted,
			"1 accepted workload clusters; rogue labelled hostfleet.io/tenant but not accepted by the hub"},
		{"several are reported before the ignored ones", []string{"a", "b"}, []string{"rogue"}, metav1.ConditionFalse,
			hostfleetv1alpha1.ReasonSeveralWorkloadClusters, "remove hostfleet.io/tenant from all clusters but one; rogue labelled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := tenant.WorkloadCondition(tc.accepted, tc.ignored)
			g.Expect(c.Type).To(Equal(hostfleetv1alpha1.ConditionWorkloadClusters))
			g.Expect(c.Status).To(Equal(tc.status))
			g.Expect(c.Reason).To(Equal(tc.reason))
			g.Expect(c.Message).To(ContainSubstring(tc.message))
		})
	}
}

func TestAccepted(t *testing.T) {
	joined := []metav1.Condition{{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionTrue}}
	for _, tc := range []struct {
		name string
		mc   clusterv1.ManagedCluster
		want bool
	}{
		{"accepted and joined", clusterv1.ManagedCluster{Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}, Status: clusterv1.ManagedClusterStatus{Conditions: joined}}, true},
		{"not accepted", clusterv1.ManagedCluster{Status: clusterv1.ManagedClusterStatus{Conditions: joined}}, false},
		{"accepted, never joined", clusterv1.ManagedCluster{Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}, false},
		{"accepted, joined False", clusterv1.ManagedCluster{Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}, Status: clusterv1.ManagedClusterStatus{
			Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionJoined, Status: metav1.ConditionFalse}}}}, false},
	} {
		NewWithT(t).Expect(tenant.Accepted(&tc.mc)).To(Equal(tc.want), tc.name)
	}
}
