package heal

import (
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Node is how a bound host is once its claim's Node counts (the tenant's
// nodeNotReady), from v, Judge's verdict: a host not failed already has
// failed when the claim's NodeReady condition (the workload cluster's
// agent's) says not Ready since boundAt or later. A Node not Ready since
// before the host was bound is the Node of a host the claim had before (a
// claim's Node may be found by its own name or UID): never evidence against
// this one. A host without a bound-at (zero) is never judged by a Node.
func Node(v Verdict, h *metal3api.BareMetalHost, node *metav1.Condition, boundAt time.Time) Verdict {
	if v.State == Failed || node == nil || node.Status == metav1.ConditionTrue || boundAt.IsZero() || node.LastTransitionTime.Time.Before(boundAt) {
		return v
	}
	return Verdict{State: Failed, Evidence: hostfleetv1alpha1.ReasonNodeNotReady, Message: fmt.Sprintf(
		"host %s/%s reports %s; the claim's Node on its workload cluster is not Ready since %s",
		h.Namespace, h.Name, hostfleetv1alpha1.ReasonNodeNotReady, node.LastTransitionTime.UTC().Format(time.RFC3339))}
}
