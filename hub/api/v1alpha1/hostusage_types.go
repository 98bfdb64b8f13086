package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// HostUsageSpec names the cluster whose host use a HostUsage reports.
type HostUsageSpec struct {
	// ClusterName is the managed cluster whose hosts this record counts.
	// It equals the namespace of the record on the hub and never changes.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	ClusterName string `json:"clusterName"`
}

// UsageEntry is the seconds a cluster's hosts with the same labels were
// bound to claims of one hub namespace during one period: a UTC day
// (2026-11-27), or a month (2026-10) for periods summed up.
type UsageEntry struct {
	// Period is a UTC day (YYYY-MM-DD) or month (YYYY-MM).
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}(-[0-9]{2})?$`
	Period string `json:"period"`
	// Namespace is the hub namespace of the claims.
	Namespace string `json:"namespace"`
	// Labels are the hosts' labels under the label sync prefixes of the
	// tenants the cluster serves, when their claims were released.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Seconds the hosts were bound.
	// +kubebuilder:validation:Minimum=0
	Seconds int64 `json:"seconds"`
}

// UsageInterval is one closed interval during which a host was bound to
// one claim: what a host records at its release (hostfleet.io/usage) and
// its cluster reports. Claim, Host and Start identify it.
type UsageInterval struct {
	// Claim is the UID of the hub claim the host was bound to (for a claim
	// forwarded from the hub, its source's).
	Claim types.UID `json:"claim"`
	// Namespace is the claim's hub namespace, as the cluster knows it; the
	// hub counts the interval for the namespace it placed the claim from.
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// Host is the BareMetalHost, namespace/name.
	// +kubebuilder:validation:MaxLength=317
	Host string `json:"host"`
	// Start is when the host was bound, End when it was released, both by
	// the agent's clock, to the second.
	Start metav1.Time `json:"start"`
	End   metav1.Time `json:"end"`
	// Labels are the host's labels under the served tenants' label sync
	// prefixes when it was released.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// UsageRefusal is an interval or open host of a report the hub did not
// count.
type UsageRefusal struct {
	// Key is the interval's (claim/host/start), or open/<host>.
	Key string `json:"key"`
	// Reason is UnknownClaim, OutsidePlacement, WrongNamespace or
	// InvalidInterval.
	Reason string `json:"reason"`
	// Message says why.
	Message string `json:"message"`
}

// OpenUsage is a host bound now: its interval is still open.
type OpenUsage struct {
	// Host is the BareMetalHost, namespace/name.
	Host string `json:"host"`
	// Claim is the UID of the hub claim that holds it (empty from agents
	// older than the usage ledger, whose open intervals the hub refuses).
	// +optional
	Claim types.UID `json:"claim,omitempty"`
	// Namespace is the hub namespace of the claim that holds it.
	Namespace string `json:"namespace"`
	// Labels are the host's labels under the served tenants' prefixes.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Since is when the agent bound it.
	Since metav1.Time `json:"since"`
}

// HostUsageStatus is the cluster's report, written by its agent from its
// hosts' records, and what the hub made of it.
type HostUsageStatus struct {
	// Intervals are the closed intervals the cluster's hosts record and
	// the hub has not settled yet. Written by the agent.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10000
	Intervals []UsageInterval `json:"intervals,omitempty"`
	// Open are the hosts bound now. Written by the agent.
	// +optional
	// +listType=atomic
	Open []OpenUsage `json:"open,omitempty"`
	// Settled are the keys (claim/host/start) of the intervals of this
	// report the hub has counted into its ledger or refused: the agent
	// drops them from its hosts' records, and then from the report.
	// Written by the hub.
	// +optional
	// +listType=atomic
	Settled []string `json:"settled,omitempty"`
	// Refused are the intervals and open hosts of this report the hub did
	// not count, and why. Written by the hub.
	// +optional
	// +listType=atomic
	Refused []UsageRefusal `json:"refused,omitempty"`
	// Conditions: Accepted says whether the hub took every interval and
	// open host of the report, and names those it refused. Written by the
	// hub.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// HostUsage is one infrastructure cluster's report of host use, in the
// cluster's namespace on the hub, named after the cluster: the intervals
// its hosts were bound to the hub's claims, written by the cluster's agent
// from its hosts' own records (hostfleet.io/usage, hostfleet.io/bound-at).
// The hub counts what it accepts into the cluster's UsageLedger, which
// only the hub writes, and says which it refused.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=hostfleet,shortName=husage
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].reason`
type HostUsage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HostUsageSpec   `json:"spec"`
	Status HostUsageStatus `json:"status,omitempty"`
}

// HostUsageList is a list of HostUsages.
//
// +kubebuilder:object:root=true
type HostUsageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostUsage `json:"items"`
}

func init() {
	objects = append(objects, &HostUsage{}, &HostUsageList{})
}
