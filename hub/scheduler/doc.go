// Package scheduler places hub claims on clusters. A claim without
// hostfleet.io/cluster is placed on a cluster of its tenant's cluster set
// (intersected with the decisions of the Placement named by
// hostfleet.io/placement, when present) whose HostInventory has a pool that
// matches the claim's hostSelector and failureDomain and admits the claim's
// namespace, with free hosts after counting the claims already placed there
// and not yet bound. Ties are spread deterministically. A placed claim that is
// not Associated within a deadline is placed again elsewhere; a claim the
// tenant pinned is never moved. Place is a plain function; the Reconciler
// fetches (through indexes, never listing all claims per claim) and writes.
// A decision visits clusters by their available hosts, most first, and
// stops at the first that cannot be beaten (order.walk).
package scheduler
