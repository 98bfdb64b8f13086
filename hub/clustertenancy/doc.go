// Package clustertenancy writes, in each managed cluster's hub namespace, the
// cluster's ClusterTenancy: the tenants it serves and whose workload
// cluster it is, with their namespaces and label sync prefixes. It is all
// a cluster's agent reads of the tenants. A Tenant lists every cluster of
// its set and counts its claims; the ClusterTenancy does neither, so its
// size does not grow with the fleet and it is written only when what the
// agent needs changes. Desired is a plain function; the Reconciler fetches
// and writes.
package clustertenancy
