// Package kind runs the shared end-to-end scenarios (e2e/scenarios) on kind
// clusters, for machines with a container engine: four clusters (hub,
// infra-1, infra-2, hosting), the images `make images` built loaded into
// them, OCM's real images pulled from quay.io, Hostfleet installed from
// deploy/. Its tests build only with the e2ekind tag: `make e2e-kind`. See
// docs/e2e-kind.md.
package kind
