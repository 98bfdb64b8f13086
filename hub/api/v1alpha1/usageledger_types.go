package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// UsageLedgerSpec names the cluster whose host use a UsageLedger counts.
type UsageLedgerSpec struct {
	// ClusterName is the managed cluster; it equals the ledger's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	ClusterName string `json:"clusterName"`
}

// Span is a stretch of time, [Start, End).
type Span struct {
	Start metav1.Time `json:"start"`
	End   metav1.Time `json:"end"`
}

// LedgerClaim is what the hub remembers of one claim placed on the
// cluster: where it was placed from and when, and the time already counted
// for it, so that no interval is counted twice or outside its placement.
type LedgerClaim struct {
	// UID of the hub claim.
	UID types.UID `json:"uid"`
	// Namespace of the claim on the hub: its time counts for this
	// namespace's tenant, whatever a report says.
	Namespace string `json:"namespace"`
	// From is when the hub placed the claim on the cluster; To when the
	// claim was gone from it (unset while it is placed there).
	From metav1.Time `json:"from"`
	// +optional
	To *metav1.Time `json:"to,omitempty"`
	// Counted are the stretches of time already counted for the claim,
	// disjoint and sorted.
	// +optional
	// +listType=atomic
	Counted []Span `json:"counted,omitempty"`
}

// UsageLedgerStatus is the ledger: only ever added to.
type UsageLedgerStatus struct {
	// Counted are the seconds counted, per period (UTC days for the last
	// 31 days, months before), claim namespace and host labels. A total
	// here never goes down.
	// +optional
	// +listType=atomic
	Counted []UsageEntry `json:"counted,omitempty"`
	// Open are the hosts bound now to claims placed on the cluster, as the
	// hub accepted them from the cluster's report: counted up to now.
	// +optional
	// +listType=atomic
	Open []OpenUsage `json:"open,omitempty"`
	// Claims are the claims placed on the cluster whose time has been
	// counted, or that are gone: kept for the hub's usage memory after
	// they are gone (--usage-memory), so that an interval sent again is
	// counted once.
	// +optional
	// +listType=atomic
	Claims []LedgerClaim `json:"claims,omitempty"`
	// Refused is how many intervals and open hosts of the cluster's reports
	// the hub has refused, ever.
	// +optional
	Refused int64 `json:"refused,omitempty"`
	// LastUpdated is when the hub last wrote the ledger.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
}

// UsageLedger is the hub's count of one infrastructure cluster's host use,
// in the cluster's namespace, named after the cluster. Only the hub writes
// it: from the cluster's HostUsage report, it takes the intervals of claims
// it placed on that cluster, within the time they were placed there, each
// once. Nothing a cluster reports makes a total here go down; a host
// deleted from its cluster, or a cluster restored from an older snapshot,
// takes nothing from it. kubectl hostfleet usage and the hub's usage
// metric read it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=hostfleet,shortName=uledger
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Refused",type=integer,JSONPath=`.status.refused`
// +kubebuilder:printcolumn:name="Updated",type=date,JSONPath=`.status.lastUpdated`
type UsageLedger struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UsageLedgerSpec   `json:"spec"`
	Status UsageLedgerStatus `json:"status,omitempty"`
}

// UsageLedgerList is a list of UsageLedgers.
//
// +kubebuilder:object:root=true
type UsageLedgerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UsageLedger `json:"items"`
}

func init() {
	objects = append(objects, &UsageLedger{}, &UsageLedgerList{})
}
