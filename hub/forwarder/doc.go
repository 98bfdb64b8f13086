// Package forwarder serves remote claims (hostfleet.io/kind=remote): for a
// claim placed on a cluster it keeps one ManifestWork in that cluster's
// namespace holding a plain metal3 HostClaim (the target) and copies of the
// secrets it references, in a namespace of the target cluster derived from
// the claim's hub namespace. The cluster's OCM work agent applies it with
// server-side apply and reports the target's status back through scalar
// JSONPath feedback rules, which the forwarder copies into the claim's status
// with a Forwarded condition. Deleting the claim deletes the work, and so the
// target claim; the claim's finalizer goes only once the work is gone.
package forwarder
