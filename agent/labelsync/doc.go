// Package labelsync computes the labels the agent mirrors from a bound
// BareMetalHost onto its hub claim: host labels under the tenant's sync
// prefixes are added and changed, claim labels under those prefixes that the
// host no longer has are removed, and labels outside the prefixes are never
// touched. Kubernetes' own prefixes are refused even if configured. The
// informational hostfleet.io/bound-host label is set from the host's
// consumerRef, the truth: a forged or stale value is overwritten or erased.
package labelsync
