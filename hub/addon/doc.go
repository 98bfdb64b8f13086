// Package addon is the hub side of the hostfleet-agent OCM add-on: the
// addon-framework agent (templates from manifests/addon rendered per
// ManagedClusterAddOn, in Default or Hosted mode), its registration (CSR or
// token driver, CSRs approved when they carry the add-on's identity), the hub
// RBAC of each registered agent identity, and the ClusterManagementAddOn.
package addon
