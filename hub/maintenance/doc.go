// Package maintenance is the hub's side of HostMaintenance: for each claim
// whose host a maintenance lists as Waiting (the cluster's agent writes
// that list), it says so on the claim (MaintenanceRequested, with an Event)
// and releases the claim as the policy says: when its tenant approves
// (hostfleet.io/maintenance-approved), or, for Enforced, at the deadline.
// A release is a deletion marked hostfleet.io/released-by:
// maintenance/<cluster>/<name>, as a lease's end.
package maintenance
