// Package binder decides which BareMetalHost a hub HostClaim binds to. It is
// plain functions over typed inputs (the claim, its hub namespace's labels,
// the cluster's HostDeployPolicies and BareMetalHosts) with no API calls, so
// that every rule is tested without a server. The claim controller fetches
// the inputs, calls Decide, and writes what it says.
//
// The rules follow the upstream metal3 HostClaim controller: a HostDeployPolicy
// in a host's namespace must admit the claim's namespace (names, nameMatches,
// hasLabels; evaluated against the claim's namespace on the hub), the host
// must match hostSelector, be available or ready, have no consumer, and be
// neither paused, in error nor being deleted; hosts in the claim's
// failureDomain are preferred. Unlike upstream, the choice among equal hosts
// is deterministic per claim (a hash of its UID), which spreads concurrent
// claims over hosts and keeps tests repeatable.
package binder
