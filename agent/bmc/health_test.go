package bmc

import (
	"testing"

	ipmi "github.com/bougou/go-ipmi"
	. "github.com/onsi/gomega"
)

func TestRedfishHealth(t *testing.T) {
	for _, tc := range []struct {
		health, rollup string
		want           Health
		what           string
	}{
		{"", "", HealthUnknown, ""},
		{"OK", "", HealthOK, "Status.Health OK"},
		{"OK", "OK", HealthOK, "Status.Health OK"},
		{"OK", "Warning", HealthWarning, "Status.HealthRollup Warning"},
		{"Critical", "Warning", HealthCritical, "Status.Health Critical"},
		{"OK", "Critical", HealthCritical, "Status.HealthRollup Critical"},
		{"Warning", "", HealthWarning, "Status.Health Warning"},
		{"Bogus", "", HealthUnknown, ""},
	} {
		h, what := redfishHealth(tc.health, tc.rollup)
		NewWithT(t).Expect([]any{h, what}).To(Equal([]any{tc.want, tc.what}), "%q %q", tc.health, tc.rollup)
	}
}

func TestChassisHealth(t *testing.T) {
	for _, tc := range []struct {
		st   ipmi.GetChassisStatusResponse
		want Health
		what string
	}{
		{ipmi.GetChassisStatusResponse{PowerIsOn: true}, HealthOK, ""},
		{ipmi.GetChassisStatusResponse{PowerFault: true}, HealthCritical, "chassis status: power fault"},
		{ipmi.GetChassisStatusResponse{PowerControlFault: true, DriveFault: true}, HealthCritical, "chassis status: power control fault, drive fault"},
		{ipmi.GetChassisStatusResponse{PowerOverload: true, InterLock: true}, HealthCritical, "chassis status: power overload, interlock active"},
		{ipmi.GetChassisStatusResponse{CollingFanFault: true}, HealthWarning, "chassis status: cooling fan fault"},
	} {
		h, what := chassisHealth(&tc.st)
		NewWithT(t).Expect([]any{h, what}).To(Equal([]any{tc.want, tc.what}), "%+v", tc.st)
	}
}
