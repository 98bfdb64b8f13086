// Package bmc is the agent's BMC driver: one small interface (power,
// reboot, one-time boot device, virtual media, inventory) and its two
// implementations, with baremetal-operator's address schemes
// (ipmi://, redfish://, redfish-virtualmedia://, redfish+http://, ...):
// Redfish through bmclib's gofish provider; IPMI 2.0 (lanplus, cipher suite
// 3) through a native Go client (go-ipmi), so the agent's image needs no
// ipmitool. With Options.IpmitoolPath set, IPMI goes through bmclib's
// ipmitool provider instead.
//
// Power is one read (PowerState, with PoweringOn and PoweringOff on
// Redfish) and one command per call (Send, named as Redfish's ResetType):
// on Redfish both go to the system's resources directly, since bmclib's
// power calls read every system first and substitute or repeat commands.
// Every call is logged at V(1) by the context's logger.
//
// bmclib's answers are normalised here (ipmitool says "Chassis Power is
// on", Redfish "On"). Known bmclib v2.3.0 behaviour is handled where it
// matters: the Redfish provider always opens a session; its inventory reads
// only Systems and Managers with ids on its built-in list; power cycling a
// powered-off host fails (the caller powers it on instead); the ipmitool provider
// is dropped unless its binary exists when the client is created (Open says
// so).
package bmc
