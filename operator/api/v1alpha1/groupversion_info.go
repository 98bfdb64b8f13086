// Package v1alpha1 is the operator.hostfleet.io API: HostfleetHub, which
// installs a Hostfleet hub in Default mode (on the hub cluster) or Hosted
// mode (on a hosting cluster, reaching the hub through a kubeconfig).
//
// +kubebuilder:object:generate=true
// +groupName=operator.hostfleet.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "operator.hostfleet.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
