package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HostInventorySpec names the cluster an inventory describes.
type HostInventorySpec struct {
	// ClusterName is the managed cluster whose hosts this inventory counts.
	// It equals the namespace of the inventory on the hub and never changes.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	ClusterName string `json:"clusterName"`
}

// HostPool is a group of hosts that look the same to the scheduler: the same
// syncable labels, the same failure domain, admitted for the same tenant
// namespaces.
type HostPool struct {
	// Labels are the hosts' labels under the sync prefixes of the tenants the
	// cluster serves.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// FailureDomain is the hosts' infrastructure.cluster.x-k8s.io/failure-domain
	// label, if any.
	// +optional
	FailureDomain string `json:"failureDomain,omitempty"`

	// Namespaces are the hub tenant namespaces whose claims the cluster's
	// HostDeployPolicies admit on these hosts.
	// +optional
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`

	// Taints are the hosts' hostfleet.io/taints, sorted: only claims whose
	// hostfleet.io/tolerations name all of them are placed on the pool.
	// +optional
	// +listType=set
	Taints []string `json:"taints,omitempty"`

	// Profile names the hosts' hardware (one of the inventory's profiles);
	// empty while they are not inspected, when they meet no hardware
	// requirement.
	// +optional
	Profile string `json:"profile,omitempty"`

	// Total is the number of hosts in the pool.
	Total int32 `json:"total"`

	// Available is the number of hosts in the pool that a claim could bind
	// now: available or ready, no consumer, not paused, not in error.
	Available int32 `json:"available"`

	// Held is the number of hosts in the pool the release gate holds out
	// of it: released, they could not be restored to, or verified
	// against, their FirmwareBaselines.
	// +optional
	Held int32 `json:"held,omitempty"`

	// Firmware counts the pool's hosts that FirmwareBaselines select by how
	// they stand against them, as their BMCs last read them (at inspection
	// or release; nothing is read for it). Held hosts are counted in held
	// only. Absent when no baseline selects a host of the pool.
	// +optional
	Firmware *FirmwareStanding `json:"firmware,omitempty"`
}

// FirmwareStanding counts hosts by how they stand against their
// FirmwareBaselines.
type FirmwareStanding struct {
	// Current hosts hold what their baselines want.
	// +optional
	Current int32 `json:"current,omitempty"`
	// Behind hosts hold older firmware or other settings than their
	// baselines want; a free one is restored at its next release.
	// +optional
	Behind int32 `json:"behind,omitempty"`
	// Drifted hosts were changed while a claim held them, and are being
	// restored.
	// +optional
	Drifted int32 `json:"drifted,omitempty"`
	// Unknown hosts were never read for what their baselines check, or
	// their BMC cannot read it.
	// +optional
	Unknown int32 `json:"unknown,omitempty"`
}

// HostInventoryStatus) is the agent's summary of its cluster's hosts.
type HostInventoryStatus struct {
	// Pools group the cluster's hosts for scheduling.
	// +optional
	// +listType=atomic
	Pools []HostPool `json:"pools,omitempty"`

	// Profiles are the hardware of the pools' hosts, each once: a fleet
	// of many hosts of a few makes has a few profiles.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	Profiles []HardwareProfile `json:"profiles,omitempty"`

	// Total is the number of BareMetalHosts on the cluster.
	// Always written, so that kubectl prints 0.
	// +optional
	Total int32 `json:"total"`

	// Available is the number of hosts a claim could bind now.
	// Always written, so that kubectl prints 0.
	// +optional
	Available int32 `json:"available"`

	// Held is the number of hosts the release gate holds out of the pool.
	// +optional
	Held int32 `json:"held,omitempty"`

	// LastUpdated is when the agent last wrote this inventory. The agent
	// writes at a bounded rate, never once per host event.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
}

// HostInventory is an infrastructure cluster's offer, written on the hub by the
// cluster's agent into the cluster's namespace and read by the hub scheduler.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=hostfleet,shortName=hinv
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.total`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.available`
// +kubebuilder:printcolumn:name="Updated",type=date,JSONPath=`.status.lastUpdated`
type HostInventory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HostInventorySpec   `json:"spec"`
	Status HostInventoryStatus `json:"status,omitempty"`
}

// HostInventoryList is a list of HostInventories.
//
// +kubebuilder:object:root=true
type HostInventoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostInventory `json:"items"`
}

func init() {
	objects = append(objects, &HostInventory{}, &HostInventoryList{})
}
