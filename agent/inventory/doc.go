// Package inventory summarises an infrastructure cluster's hosts for the hub
// scheduler: pools of hosts that look alike (the same labels under the
// tenants' sync prefixes, the same failure domain, admitted by the
// HostDeployPolicies for the same tenant namespaces), with total and
// available counts. Build is a plain function; Writer publishes the result
// as the cluster's HostInventory on the hub at a bounded rate, never once per
// host event.
package inventory
