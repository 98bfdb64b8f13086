// Package lease ends claims' leases on the hub. A claim's lease end is its
// hostfleet.io/lease-until (or hostfleet.io/lease-for, counted from the
// claim's creation; or, under a Tenant's maxLeaseDuration, the cap). Before
// the end, within the Tenant's leaseWarning, the claim says LeaseExpiring
// (a condition and an Event); at the end the controller records why on the
// claim (hostfleet.io/released-by) and deletes it, so that its host is
// released exactly as for any deletion. Only the hub's clock counts: the
// agents never read a lease.
//
// Decide is the decision, a pure function; the Reconciler applies it.
package lease
