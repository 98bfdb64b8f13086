package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HostUsageSpec names the cluster whose host use a HostUsage records.
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
// (2026-11-27), or a month (2026-10) for periods the agent has compacted.
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

// OpenUsage is a host bound now: its interval is still open.
type OpenUsage struct {
	// Host is the BareMetalHost, namespace/name.
	Host string `json:"host"`
	// Namespace is the hub namespace of the claim that holds it.
	Namespace string `json:"namespace"`
	// Labels are the host's labels under the served tenants' prefixes.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Since is when the agent bound it.
	Since metav1.Time `json:"since"`
}

// HostUsageStatus is the record, as the cluster's hosts keep it.
type HostUsageStatus struct {
	// Closed are the intervals that ended, summed per period, namespace
	// and labels.
	// +optional
	// +listType=atomic
	Closed []UsageEntry `json:"closed,omitempty"`
	// Open are the hosts bound now.
	// +optional
	// +listType=atomic
	Open []OpenUsage `json:"open,omitempty"`
}

// HostUsage is one infrastructure cluster's record of host use: how long
// its hosts were bound to the hub's claims. The cluster's agent writes it in
// the cluster's namespace on the hub from its hosts' own records
// (hostfleet.io/usage and hostfleet.io/bound-at), and writes it again
// whenever the hub's copy differs: a hub restored from an older etcd
// snapshot gets it back whole, with no interval counted twice.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=hostfleet,shortName=husage
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
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
	SchemeBuilder.Register(&HostUsage{}, &HostUsageList{})
}
