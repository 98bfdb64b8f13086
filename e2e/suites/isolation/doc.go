// Package isolation holds the isolation suite: on a real hub (API server,
// the hub's admission policies, tenant controller and the add-on's
// permission callback), every identity of the threat model in
// docs/security.md — tenant admins, a tenant's workload, clusters' add-on
// agents, a cluster's registration agent, look-alike and unbound users — makes
// the requests it must not be able to make, each refused by the API server
// with the expected reason, beside positive controls that prove the
// legitimate path works. It starts control-plane processes; no root needed.
package isolation
