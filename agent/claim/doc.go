// Package claim is the agent's controller for hub HostClaims placed on its
// cluster. It watches, on the hub, only the claims labelled
// hostfleet.io/cluster=<cluster> (a server-side label filter), and on the
// infrastructure cluster the BareMetalHosts and HostDeployPolicies. For each
// claim it asks the binder what to do, writes the host's consumerRef with
// optimistic concurrency (so that a host is never bound twice, whatever the
// concurrency or restarts), and reports the binding in the claim's status.
// Deleting a claim releases its host before the agent's finalizer goes.
package claim
