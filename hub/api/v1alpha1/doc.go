// Package v1alpha1 is the hostfleet.io/v1alpha1 API: Tenant (who may claim
// hosts, from which clusters) and HostInventory (what each infrastructure
// cluster can offer), plus the well-known label, annotation, finalizer and
// condition names that the hub and the agents share.
//
// Tenants claim hosts with the upstream metal3.io/v1alpha1 HostClaim; Hostfleet
// adds no claim type of its own, only the metadata keys declared here.
//
// +kubebuilder:object:generate=true
// +groupName=hostfleet.io
package v1alpha1
