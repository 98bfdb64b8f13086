package bmc

import (
	"strings"

	ipmi "github.com/bougou/go-ipmi"
)

// Health is the system's health as its BMC reports it.
type Health string

const (
	// HealthUnknown: the BMC says nothing of it.
	HealthUnknown  Health = ""
	HealthOK       Health = "OK"
	HealthWarning  Health = "Warning"
	HealthCritical Health = "Critical"
)

// HealthReader is a Driver that reads the system's health along with its
// power, without a request of its own: Health is what the last Power read
// said, and in the BMC's words what.
type HealthReader interface {
	Health() (Health, string)
}

// worse is the worse of two healths.
func worse(a, b Health) Health {
	rank := map[Health]int{HealthUnknown: 0, HealthOK: 1, HealthWarning: 2, HealthCritical: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// redfishHealth is a ComputerSystem's health: the worse of its
// Status.Health and Status.HealthRollup (which counts its processors,
// memory, drives...).
func redfishHealth(health, rollup string) (Health, string) {
	known := func(s string) Health {
		switch h := Health(s); h {
		case HealthOK, HealthWarning, HealthCritical:
			return h
		}
		return HealthUnknown
	}
	h, r := known(health), known(rollup)
	switch worse(h, r) {
	case HealthUnknown:
		return HealthUnknown, ""
	case h:
		return h, "Status.Health " + health
	}
	return r, "Status.HealthRollup " + rollup
}

// chassisHealth is an IPMI chassis status's health: a power fault, a power
// control fault (the system did not enter the state asked), a power
// overload or an active interlock is critical; a cooling fan or drive fault
// a warning.
func chassisHealth(st *ipmi.GetChassisStatusResponse) (Health, string) {
	var critical, warning []string
	for _, f := range []struct {
		on   bool
		what string
	}{{st.PowerFault, "power fault"}, {st.PowerControlFault, "power control fault"}, {st.PowerOverload, "power overload"}, {st.InterLock, "interlock active"}} {
		if f.on {
			critical = append(critical, f.what)
		}
	}
	for _, f := range []struct {
		on   bool
		what string
	}{{st.CollingFanFault, "cooling fan fault"}, {st.DriveFault, "drive fault"}} {
		if f.on {
			warning = append(warning, f.what)
		}
	}
	switch {
	case len(critical) > 0:
		return HealthCritical, "chassis status: " + strings.Join(append(critical, warning...), ", ")
	case len(warning) > 0:
		return HealthWarning, "chassis status: " + strings.Join(warning, ", ")
	}
	return HealthOK, ""
}
