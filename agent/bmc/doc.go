// Package bmc is the agent's BMC driver: one small interface (power,
// reboot, one-time boot device, virtual media, inventory) and its
// implementations, with baremetal-operator's address schemes
// (ipmi://, redfish://, redfish-virtualmedia://, redfish+http://, ...):
// Redfish through the package's own client; IPMI 2.0 (lanplus, cipher suite
// 3) through a native Go client (go-ipmi), so the agent's image needs no
// ipmitool. With Options.IpmitoolPath set, IPMI goes through bmclib's
// ipmitool provider instead.
//
// The Redfish client reads the system resource and what it links
// (Processors, Memory, Storage or SimpleStorage, EthernetInterfaces, the
// virtual CD of the system or its manager) and posts one action per call,
// with basic authentication on one connection kept per BMC: no Redfish
// session, no TLS handshake but the first (bmclib's gofish provider asks
// the BMC to close the connection after each request). Power is one read
// (PowerState, with PoweringOn and PoweringOff) and one Reset with the
// ResetType asked for (Send, named as Redfish's ResetType). Every call is
// logged at V(1) by the context's logger.
//
// ipmitool's answers are normalised here ("Chassis Power is on" is On).
// bmclib's ipmitool provider is dropped unless its binary exists when the
// client is created (Open says so).
package bmc
