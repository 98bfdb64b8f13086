// Package placedclaim keeps, in each cluster's namespace on the hub, a
// PlacedClaim for every claim placed on the cluster (pull path): a copy of
// the claim, written each time it changes, deleted when the claim is gone
// or placed elsewhere. An agent reading its claims from these copies
// watches one namespace; the API server's watch cache sends it the events
// of that namespace only, where a label-selected watch of the claims
// receives, and filters, every claim event of the fleet.
package placedclaim
