// Package bmcdriver drives BareMetalHosts that no baremetal-operator
// manages, through their BMCs with the bmc package: registering,
// inspecting (HardwareData), available, provisioning (live-ISO images by
// virtual media), provisioned, deprovisioning, and power from spec.online
// and the reboot annotations. It writes the host's status as
// baremetal-operator does, so every consumer sees the usual states.
//
// Power follows the BMC's reports, never the commands (Decide): one
// command per change, remembered on the host before it is sent, sent
// again only after a timeout; a soft power-off first, forced after its
// bound; the PowerChanging condition says what is under way.
package bmcdriver
