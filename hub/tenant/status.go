package tenant

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Registration is what the tenant controller found for one Tenant.
type Registration struct {
	// ClusterSet is the Tenant's spec.clusterSet; SetFound whether that
	// ManagedClusterSet exists, and Clusters the clusters in it.
	ClusterSet string
	SetFound   bool
	Clusters   []string
	// Namespaces are the tenant's namespaces that exist and are its own.
	Namespaces []string
	// Conflicts are the requested namespaces that belong to someone else,
	// with who.
	Conflicts map[string]string
	// MissingRoles are the ClusterRoles the tenant's bindings name that do
	// not exist.
	MissingRoles []string
	// InvalidClass says why a host class's selector does not compile.
	InvalidClass error
}

// ReadyCondition is a registered Tenant's Ready condition: False with what
// to fix while a requested namespace is someone else's or the cluster set is
// missing (a conflict is reported first: it needs a change to the Tenant
// itself), True otherwise.
func ReadyCondition(reg Registration) metav1.Condition {
	cond := metav1.Condition{Type: hostfleetv1alpha1.ConditionReady}
	switch {
	case len(reg.Conflicts) > 0:
		parts := make([]string, 0, len(reg.Conflicts))
		for ns, who := range reg.Conflicts {
			parts = append(parts, fmt.Sprintf("namespace %s %s", ns, who))
		}
		sort.Strings(parts)
		cond.Status, cond.Reason = metav1.ConditionFalse, hostfleetv1alpha1.ReasonNamespaceConflict
		cond.Message = strings.Join(parts, "; ") + "; choose other names in spec.namespaces"
	case len(reg.MissingRoles) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, hostfleetv1alpha1.ReasonGrantRolesMissing
		cond.Message = fmt.Sprintf("ClusterRoles %s do not exist, so the tenant's admins and agents hold no rights: "+
			"the operator installs them with the hub; install the hub through a HostfleetHub", strings.Join(reg.MissingRoles, ", "))
	case reg.InvalidClass != nil:
		cond.Status, cond.Reason = metav1.ConditionFalse, hostfleetv1alpha1.ReasonInvalidHostClass
		cond.Message = fmt.Sprintf("%v: fix spec.quotas; no claim of the tenant is placed meanwhile", reg.InvalidClass)
	case !reg.SetFound:
		cond.Status, cond.Reason = metav1.ConditionFalse, hostfleetv1alpha1.ReasonClusterSetMissing
		cond.Message = fmt.Sprintf("ManagedClusterSet %s does not exist: create it or fix spec.clusterSet; no agent can serve the tenant's claims meanwhile", reg.ClusterSet)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, hostfleetv1alpha1.ReasonRegistered
		cond.Message = fmt.Sprintf("namespaces %s serve the %d clusters of set %s", strings.Join(reg.Namespaces, ","), len(reg.Clusters), reg.ClusterSet)
	}
	return cond
}

// WorkloadCondition is a Tenant's WorkloadClusters condition, from its
// accepted workload clusters and the labelled clusters it ignores because
// the hub has not accepted them. Several workload clusters are reported
// first: they silently stop label sync for every claim that names none.
func WorkloadCondition(accepted, ignored []string) metav1.Condition {
	cond := metav1.Condition{Type: hostfleetv1alpha1.ConditionWorkloadClusters, Status: metav1.ConditionFalse}
	notAccepted := ""
	if len(ignored) > 0 {
		notAccepted = fmt.Sprintf("; %s labelled %s but not accepted by the hub (hubAcceptsClient false, or not joined): ignored until accepted",
			strings.Join(ignored, ", "), hostfleetv1alpha1.LabelTenant)
	}
	switch {
	case len(accepted) > 1:
		cond.Reason = hostfleetv1alpha1.ReasonSeveralWorkloadClusters
		cond.Message = fmt.Sprintf("%s are all workload clusters of the tenant: a claim without the %s annotation has its labels synced to no Node; "+
			"annotate each claim with the cluster its Node runs in, or remove %s from all clusters but one%s",
			strings.Join(accepted, ", "), hostfleetv1alpha1.AnnotationWorkloadCluster, hostfleetv1alpha1.LabelTenant, notAccepted)
	case len(ignored) > 0:
		cond.Reason = hostfleetv1alpha1.ReasonWorkloadClusterNotAccepted
		cond.Message = fmt.Sprintf("%d accepted workload clusters%s; accept the cluster (clusteradm accept) or remove the label", len(accepted), notAccepted)
	case len(accepted) == 1:
		cond.Status, cond.Reason = metav1.ConditionTrue, hostfleetv1alpha1.ReasonOneWorkloadCluster
		cond.Message = fmt.Sprintf("claims' labels are synced to the Nodes of workload cluster %s (a claim may name another with %s)",
			accepted[0], hostfleetv1alpha1.AnnotationWorkloadCluster)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, hostfleetv1alpha1.ReasonNoWorkloadCluster
		cond.Message = fmt.Sprintf("no accepted ManagedCluster is labelled %s=<tenant>: no Node labels are synced", hostfleetv1alpha1.LabelTenant)
	}
	return cond
}
