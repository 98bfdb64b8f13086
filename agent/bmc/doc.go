// Package bmc is the agent's BMC driver: one small interface (power,
// reboot, one-time boot device, virtual media, inventory) and its bmclib
// implementation, with baremetal-operator's address schemes
// (ipmi://, redfish://, redfish-virtualmedia://, redfish+http://, ...).
//
// bmclib's answers are normalised here (ipmitool says "Chassis Power is
// on", Redfish "On"). Known bmclib v2.3.0 behaviour is handled where it
// matters: the Redfish provider always opens a session; its inventory reads
// only Systems and Managers with ids on its built-in list; power cycling a
// powered-off host fails (Reboot powers it on instead); the ipmitool provider
// is dropped unless ipmitool is on PATH when the client is created (Open
// says so).
package bmc
