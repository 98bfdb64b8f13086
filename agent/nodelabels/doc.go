// Package nodelabels is the agent's workload role: on a tenant's workload
// cluster (a ManagedCluster labelled hostfleet.io/tenant), it finds the Node
// that runs on each of the tenant's bound claims' hosts — the claim's
// hostfleet.io/node annotation, else a Node whose providerID names the
// claim, else a Node with an address or the hostname of the claim's
// HardwareData copy; never a guess — and applies the claim's labels under
// the tenant's prefixes to it, server-side, as field manager
// hostfleet-labelsync. It reports NodeLabelsSynced on each claim. Events
// (claim labels, Nodes appearing or changing) trigger a pass at once; a
// full pass every interval restores labels edited or deleted on a Node.
package nodelabels
