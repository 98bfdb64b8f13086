// Package ledger keeps each infrastructure cluster's UsageLedger on the
// hub: it counts the intervals the cluster's agent reports (HostUsage) for
// the claims the hub placed there, within the time they were placed, each
// once (hub/usage.Ingest), tells the agent what it settled, and says what
// it refused in a condition, Events and a metric. It holds each claim it
// counts for with a finalizer (hostfleet.io/usage) until the claim's host
// is released and its placement is in the ledger, so that an interval the
// cluster reports after the claim is gone is still counted.
package ledger
