// Package hostspec computes what the agent writes on the infrastructure
// cluster for a bound claim: the copies of the claim's userData, networkData
// and metaData secrets in the host's namespace, and the host spec fields the
// agent owns (image, customDeploy, online, the secret references), as a
// server-side apply object for the field manager "hostfleet-agent". Fields
// that baremetal-operator or people own are never in it, so they are left
// alone. Plain functions, no API calls.
package hostspec
