// Package v1alpha1 is the operator.hostfleet.io API: HostfleetHub, which
// installs a Hostfleet hub in Default mode (on the hub cluster) or Hosted
// mode (on a hosting cluster, reaching the hub through a kubeconfig).
//
// +kubebuilder:object:generate=true
// +groupName=operator.hostfleet.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "operator.hostfleet.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// objects are the types of this package: each type's file adds its own.
var objects []runtime.Object

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, objects...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
