// Package hoststatus turns the state of a bound BareMetalHost into the status
// of its hub claim: the conditions Synchronized, Provisioned,
// AvailableForProvisioning and the summary Ready, and poweredOn. Host errors
// are described by their type with advice a tenant can act on; the host's
// errorMessage, which may name BMC addresses, never reaches the hub. Plain
// functions, no API calls.
package hoststatus
