package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Annotations on a PlacedClaim: the claim it copies ("namespace/name"), and
// the claim's resourceVersion in the copy.
const (
	AnnotationPlacedClaim                = "hostfleet.io/claim"
	AnnotationPlacedClaimResourceVersion = "hostfleet.io/claim-resource-version"
)

// EnvClaimWatch is the agent's environment variable for --claim-watch's
// default. The add-on sets it rather than the flag: an agent that predates
// the flag, held back while its hub is upgraded, ignores the variable where
// it would refuse the flag.
const EnvClaimWatch = "HOSTFLEET_CLAIM_WATCH"

// PlacedClaim is a hub claim placed on a cluster, as the hub last read it,
// in the cluster's namespace, named after the claim's UID and labelled
// with its namespace (LabelClaimNamespace). The hub writes it each time
// the claim changes and deletes it when the claim is gone or placed on
// another cluster. An agent started with --claim-watch=placed reads its
// claims from these copies: its watch covers one namespace, which the API
// server's watch cache filters, so a claim event wakes one agent instead
// of every agent of the fleet. The agent still writes to the claim itself.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=hostfleet
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.metadata.annotations.hostfleet\.io/claim`
// +kubebuilder:printcolumn:name="Claim version",type=string,JSONPath=`.metadata.annotations.hostfleet\.io/claim-resource-version`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PlacedClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Claim is the metal3 HostClaim, without its managed fields.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Claim runtime.RawExtension `json:"claim"`
}

// PlacedClaimList is a list of PlacedClaims.
//
// +kubebuilder:object:root=true
type PlacedClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PlacedClaim `json:"items"`
}

func init() {
	objects = append(objects, &PlacedClaim{}, &PlacedClaimList{})
}
