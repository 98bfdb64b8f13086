package baseline_test

import (
	"testing"

	"github.com/hostfleet/hostfleet/hub/api/baseline"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestStanding: a host is counted by what its BMC last read (or, without
// a reading, its view's firmware), by its findings while it is restored,
// and not at all when it is held or no baseline selects it.
func TestStanding(t *testing.T) {
	fw := fwBaseline("r750", `host.system.product == "PowerEdge R750"`, hostfleetv1alpha1.FirmwareBaselineSpec{
		Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("1.2.3")}})
	settings := fwBaseline("secure", "", hostfleetv1alpha1.FirmwareBaselineSpec{BIOSSettings: map[string]string{"SecureBoot": "Enabled"}})
	withFirmware := func(v string) *hardware.View {
		h := r750()
		h.Firmware = map[string]string{"bios": v}
		return h
	}
	observed := func(s string) map[string]string {
		return map[string]string{hostfleetv1alpha1.AnnotationBaselineObserved: s}
	}
	restore := func(p baseline.Progress) map[string]string {
		return map[string]string{hostfleetv1alpha1.AnnotationRestore: p.String()}
	}
	other := r750()
	other.System.Product = "PowerEdge R650"
	for _, tc := range []struct {
		name        string
		baselines   []hostfleetv1alpha1.FirmwareBaseline
		view        *hardware.View
		annotations map[string]string
		want        baseline.State
		counted     bool
	}{
		{"no baseline", nil, withFirmware("1.2.3"), nil, "", false},
		{"no baseline selects it", []hostfleetv1alpha1.FirmwareBaseline{fw}, other, nil, "", false},
		{"its view's firmware is the baseline's", []hostfleetv1alpha1.FirmwareBaseline{fw}, withFirmware("1.2.3"), nil, baseline.Current, true},
		{"its view's firmware is older", []hostfleetv1alpha1.FirmwareBaseline{fw}, withFirmware("1.0.0"), nil, baseline.Behind, true},
		{"what its BMC read when freed comes first", []hostfleetv1alpha1.FirmwareBaseline{fw}, withFirmware("1.0.0"),
			observed(`{"Firmware":{"bios":"1.2.3"}}`), baseline.Current, true},
		{"a setting its view cannot hold", []hostfleetv1alpha1.FirmwareBaseline{settings}, withFirmware("1.2.3"), nil, baseline.Unknown, true},
		{"a setting its BMC read", []hostfleetv1alpha1.FirmwareBaseline{settings}, nil, observed(`{"BIOS":{"SecureBoot":"Disabled"}}`), baseline.Behind, true},
		{"not inspected", []hostfleetv1alpha1.FirmwareBaseline{settings}, nil, nil, baseline.Unknown, true},
		{"restored, a tenant changed it", []hostfleetv1alpha1.FirmwareBaseline{fw}, withFirmware("1.2.3"), restore(baseline.Progress{Phase: baseline.PhaseFlash,
			Found: []string{"firmware bios behind: 1.0.0, baseline 1.2.3", "BIOS setting SecureBoot drifted: Disabled, baseline Enabled, Enabled when bound"}}), baseline.Drifted, true},
		{"restored, it was behind", []hostfleetv1alpha1.FirmwareBaseline{fw}, withFirmware("1.2.3"), restore(baseline.Progress{Phase: baseline.PhaseVerify,
			Found: []string{"firmware bios behind: 1.0.0, baseline 1.2.3"}}), baseline.Behind, true},
		{"released, not judged yet: as last read", []hostfleetv1alpha1.FirmwareBaseline{fw}, withFirmware("1.2.3"), restore(baseline.Progress{Phase: baseline.PhaseJudge}), baseline.Current, true},
		{"held: counted as held", []hostfleetv1alpha1.FirmwareBaseline{fw}, withFirmware("1.0.0"), restore(baseline.Progress{Phase: baseline.PhaseHeld, Reason: "RestoreFailed"}), "", false},
		{"baselines in conflict", []hostfleetv1alpha1.FirmwareBaseline{fw, fwBaseline("old", "", hostfleetv1alpha1.FirmwareBaselineSpec{
			Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("1.0.0")}})}, withFirmware("1.0.0"), nil, baseline.Unknown, true},
	} {
		got, counted := baseline.Standing(tc.baselines, tc.view, tc.annotations)
		if got != tc.want || counted != tc.counted {
			t.Errorf("%s: Standing = %q, %v; want %q, %v", tc.name, got, counted, tc.want, tc.counted)
		}
	}
}
