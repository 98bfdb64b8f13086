// Package forwarding holds the forwarding suite: remote claims on a hub
// plane go through the hub's forwarder and OCM's real work agent to a target
// plane, where the Hostfleet agent in --local-claims mode binds them to hosts
// its BMC driver drives through emulated Redfish BMCs (or, in the other
// test, where only upstream baremetal-operator serves them). It measures
// claim-created → Ready on the hub. It starts control-plane processes and the
// work agent; no root needed.
package forwarding
