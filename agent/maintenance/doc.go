// Package maintenance is the agent's side of HostMaintenance: it marks the
// hosts an active maintenance selects (hostfleet.io/maintenance), which the
// binder then never binds and the inventory never offers, and lists each
// selected host in the maintenance's status with where it is: held by a
// claim (Waiting), released and being deprovisioned, free and out of the
// pool, or back once the maintenance is complete. The hub asks and releases
// the claims (hub/maintenance).
package maintenance
