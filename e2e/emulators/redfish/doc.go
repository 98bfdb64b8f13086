// Package redfish is a Redfish BMC emulator for tests and the demo: one
// ComputerSystem per BMC, served on 127.0.0.1 over HTTP or HTTPS, with the
// resources and actions a BMC driver uses (sessions, power, boot override,
// virtual media that really fetches the image, inventory), named as the DMTF
// Redfish schemas name them so that real clients (gofish, bmclib) work against
// it. State is in memory. Faults can be injected: wrong credentials, 500s,
// delays, a BMC that stops answering.
//
// It is test infrastructure: nothing in the shipped binaries imports it.
package redfish
