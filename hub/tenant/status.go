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
	case !reg.SetFound:
		cond.Status, cond.Reason = metav1.ConditionFalse, hostfleetv1alpha1.ReasonClusterSetMissing
		cond.Message = fmt.Sprintf("ManagedClusterSet %s does not exist: create it or fix spec.clusterSet; no agent can serve the tenant's claims meanwhile", reg.ClusterSet)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, hostfleetv1alpha1.ReasonRegistered
		cond.Message = fmt.Sprintf("namespaces %s serve the %d clusters of set %s", strings.Join(reg.Namespaces, ","), len(reg.Clusters), reg.ClusterSet)
	}
	return cond
}
