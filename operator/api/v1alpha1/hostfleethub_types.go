package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeployMode says where the hub's controllers run.
// +kubebuilder:validation:Enum=Default;Hosted
type DeployMode string

const (
	// ModeDefault runs the hub's controllers on the hub cluster, in the
	// hostfleet-system namespace.
	ModeDefault DeployMode = "Default"
	// ModeHosted runs them on the cluster the HostfleetHub is made on (the
	// hosting cluster), in the namespace named after the HostfleetHub,
	// reaching the hub through the external-hub-kubeconfig Secret there.
	ModeHosted DeployMode = "Hosted"
)

// DeployOption says how the hub is deployed.
type DeployOption struct {
	// Mode is Default or Hosted. It cannot change: delete the HostfleetHub
	// and make a new one.
	// +kubebuilder:default=Default
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="deployOption.mode cannot change: delete the HostfleetHub (after its claims) and create a new one in the other mode"
	Mode DeployMode `json:"mode,omitempty"`
}

// AgentDefaults are what the hub gives every agent it deploys; an
// AddOnDeploymentConfig changes them per cluster.
type AgentDefaults struct {
	// Image of the agents. Empty: the agent image of the operator's release.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// BMCNamespaces are the namespaces, on every managed cluster, whose hosts
	// the agents drive through their BMCs. Empty: the BMC driver is off.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	BMCNamespaces []string `json:"bmcNamespaces,omitempty"`
}

// HostfleetHubSpec is the hub an administrator wants.
type HostfleetHubSpec struct {
	// DeployOption says where the hub's controllers run.
	// +kubebuilder:default={mode: Default}
	DeployOption DeployOption `json:"deployOption"`
	// Image of the hub's controllers. Empty: the hub image of the operator's
	// release.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// Replicas of the hub's controllers; one is active, the others wait on
	// its Lease.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	Replicas *int32 `json:"replicas,omitempty"`
	// BindDeadline: a claim the hub placed that is not bound within it is
	// placed on another cluster.
	// +optional
	BindDeadline *metav1.Duration `json:"bindDeadline,omitempty"`
	// Agent are the defaults of every agent.
	// +optional
	Agent AgentDefaults `json:"agent,omitempty"`
	// Resources of the hub's controllers: each request and limit named
	// replaces the default's (requests 50m CPU and 128Mi, limits 2 CPUs and
	// 1Gi), the others stay.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// AddonManager runs the hostfleet-agent OCM add-on manager (default on).
	// Off: the agents are deployed by other means.
	// +optional
	// +kubebuilder:default=true
	AddonManager *bool `json:"addonManager,omitempty"`
}

// HostfleetHubStatus is what the operator did and sees.
type HostfleetHubStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Applied, Available, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Version of the operator that last applied the hub.
	// +optional
	Version string `json:"version,omitempty"`
	// Images running: the hub's and the agents'.
	// +optional
	HubImage string `json:"hubImage,omitempty"`
	// +optional
	AgentImage string `json:"agentImage,omitempty"`
	// Namespace the hub's controllers run in (on the hub cluster in Default
	// mode, on the hosting cluster in Hosted mode).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Leader is the hub replica (its pod) that holds the leader Lease and
	// so places claims; empty while none does, and the Available
	// condition says why.
	// +optional
	Leader string `json:"leader,omitempty"`
}

// HostfleetHub installs one Hostfleet hub. There is one per hub cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=hostfleet
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.deployOption.mode`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Leader",type=string,JSONPath=`.status.leader`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HostfleetHub struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HostfleetHubSpec   `json:"spec,omitempty"`
	Status HostfleetHubStatus `json:"status,omitempty"`
}

// HostfleetHubList is a list of HostfleetHubs.
//
// +kubebuilder:object:root=true
type HostfleetHubList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostfleetHub `json:"items"`
}

func init() {
	objects = append(objects, &HostfleetHub{}, &HostfleetHubList{})
}

// Condition types and reasons of a HostfleetHub.
const (
	// ConditionApplied: everything the hub needs is applied.
	ConditionApplied = "Applied"
	// ConditionAvailable: the hub's controllers run and are ready.
	ConditionAvailable = "Available"
	// ConditionDegraded: something needs an administrator; the message says what.
	ConditionDegraded = "Degraded"

	ReasonApplied             = "Applied"
	ReasonApplyFailed         = "ApplyFailed"
	ReasonDeploymentAvailable = "DeploymentAvailable"
	ReasonDeploymentNotReady  = "DeploymentNotReady"
	ReasonAsExpected          = "AsExpected"
	ReasonExternalKubeconfig  = "ExternalHubKubeconfigInvalid"
	ReasonClaimsExist         = "ClaimsExist"
	ReasonUninstalling        = "Uninstalling"
	ReasonSecondHub           = "SecondHub"

	// Finalizer holds a HostfleetHub until what it installed is removed.
	Finalizer = "operator.hostfleet.io/cleanup"
	// ExternalHubKubeconfig is the Secret, in the HostfleetHub's namespace
	// on the hosting cluster, whose "kubeconfig" key reaches the hub as an
	// administrator (Hosted mode). Only the operator reads it.
	ExternalHubKubeconfig = "external-hub-kubeconfig"
	// LabelHub marks every object the operator made for a HostfleetHub.
	LabelHub = "operator.hostfleet.io/hub"
	// FieldManager is the operator's server-side apply field manager.
	FieldManager = "hostfleet-operator"
)
