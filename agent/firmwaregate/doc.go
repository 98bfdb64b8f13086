// Package firmwaregate is the release gate for the hosts
// baremetal-operator serves: a released host the claim controller marked
// (hostfleet.io/restore, phase judge) is judged, once available again,
// against the FirmwareBaselines that select it from its
// HostFirmwareComponents and HostFirmwareSettings status; what differs is
// written to their spec (baremetal-operator applies it, preparing the
// host), then judged again. It is free only once it matches, and held
// with the reason otherwise. The BMC driver gates the hosts it drives.
package firmwaregate
