// Package redfish is a Redfish BMC emulator for tests and the demo: one
// ComputerSystem per BMC, served on 127.0.0.1 over HTTP or HTTPS, with the
// resources and actions a BMC driver uses (sessions, power, boot override,
// virtual media that really fetches the image, inventory, the firmware
// inventory and SimpleUpdate with a task that takes time and can fail,
// BIOS attributes with pending settings applied at the next boot, and
// AccountService), named as the DMTF
// Redfish schemas name them so that real clients (gofish, bmclib) work against
// it. State is in memory. Faults can be injected: wrong credentials, 500s,
// delays, a BMC that stops answering; and what a tenant with root does from
// the host's operating system: flash firmware, change a BIOS setting, add
// a BMC account (FlashInBand, SetBIOSInBand, AddAccountInBand).
//
// It is test infrastructure: nothing in the shipped binaries imports it.
package redfish
