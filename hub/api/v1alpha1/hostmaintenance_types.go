package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaintenancePolicy says how hosts bound to claims are taken back.
// +kubebuilder:validation:Enum=OwnerApproval;Enforced
type MaintenancePolicy string

const (
	// MaintenanceOwnerApproval waits for each claim's tenant: the claim is
	// released when the tenant approves (AnnotationMaintenanceApproved) or
	// deletes it, never by the hub.
	MaintenanceOwnerApproval MaintenancePolicy = "OwnerApproval"
	// MaintenanceEnforced releases the claims still holding hosts at the
	// deadline (a tenant may approve sooner).
	MaintenanceEnforced MaintenancePolicy = "Enforced"
)

// HostMaintenanceSpec takes hosts of one cluster out of service.
type HostMaintenanceSpec struct {
	// HostSelector selects the cluster's BareMetalHosts by their labels on
	// the infrastructure cluster (all of them, not only the synced ones).
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="hostSelector names no host: give matchLabels or matchExpressions (for a whole cluster, a label all its hosts carry)"
	HostSelector metav1.LabelSelector `json:"hostSelector"`

	// Policy is how hosts bound to claims are taken back: OwnerApproval
	// waits for each claim's tenant; Enforced releases the claims at the
	// deadline.
	Policy MaintenancePolicy `json:"policy"`

	// Deadline is when an Enforced maintenance releases the claims still
	// holding hosts; for OwnerApproval, the time tenants are asked to
	// approve by. It must be in the future when the maintenance is created.
	Deadline metav1.Time `json:"deadline"`

	// Reason is shown to the tenants whose claims hold the hosts.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Reason string `json:"reason"`

	// Complete ends the maintenance: its hosts return to the pool and are
	// listed Done. Deleting the maintenance returns them too.
	// +optional
	Complete bool `json:"complete,omitempty"`
}

// MaintenanceHostState is where a host is in a maintenance.
// +kubebuilder:validation:Enum=Waiting;Released;InMaintenance;Done
type MaintenanceHostState string

const (
	// MaintenanceWaiting: a claim still holds the host.
	MaintenanceWaiting MaintenanceHostState = "Waiting"
	// MaintenanceReleased: its claim let it go; the host is being
	// deprovisioned (and erased).
	MaintenanceReleased MaintenanceHostState = "Released"
	// MaintenanceInMaintenance: free and out of the pool; the
	// administrator may work on it.
	MaintenanceInMaintenance MaintenanceHostState = "InMaintenance"
	// MaintenanceDone: the maintenance is complete; the host is back in
	// the pool.
	MaintenanceDone MaintenanceHostState = "Done"
)

// MaintainedHost is one host of a maintenance.
type MaintainedHost struct {
	// Host is the BareMetalHost, namespace/name on the cluster.
	Host string `json:"host"`
	// State is where the host is.
	State MaintenanceHostState `json:"state"`
	// Claim is the hub claim (namespace/name) holding the host, while one
	// does.
	// +optional
	Claim string `json:"claim,omitempty"`
	// Consumer names what holds the host when it is not a hub claim
	// (another HostClaim controller's claim, a Metal3Machine): its owner
	// releases it on the cluster.
	// +optional
	Consumer string `json:"consumer,omitempty"`
}

// HostMaintenanceStatus is written by the cluster's agent.
type HostMaintenanceStatus struct {
	// Hosts are the selected hosts, sorted.
	// +optional
	// +listType=atomic
	Hosts []MaintainedHost `json:"hosts,omitempty"`
	// Waiting is the number of hosts still held by claims; InMaintenance
	// the number free and out of the pool.
	// +optional
	Waiting int32 `json:"waiting"`
	// +optional
	InMaintenance int32 `json:"inMaintenance"`
	// ObservedGeneration is the generation the agent last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// HostMaintenance takes hosts of one infrastructure cluster out of service:
// created by a hub administrator in the cluster's namespace, acted on by
// the cluster's agent (which keeps the selected hosts out of the pool and
// lists them in the status) and by the hub (which asks the claims holding
// them, and releases them as the policy says).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=hostfleet,shortName=hmaint
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.policy`
// +kubebuilder:printcolumn:name="Deadline",type=date,JSONPath=`.spec.deadline`
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.waiting`
// +kubebuilder:printcolumn:name="InMaintenance",type=integer,JSONPath=`.status.inMaintenance`
// +kubebuilder:printcolumn:name="Complete",type=boolean,JSONPath=`.spec.complete`
type HostMaintenance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HostMaintenanceSpec   `json:"spec"`
	Status HostMaintenanceStatus `json:"status,omitempty"`
}

// HostMaintenanceList is a list of HostMaintenances.
//
// +kubebuilder:object:root=true
type HostMaintenanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostMaintenance `json:"items"`
}

func init() {
	objects = append(objects, &HostMaintenance{}, &HostMaintenanceList{})
}
