package baseline_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hostfleet/hostfleet/hub/api/baseline"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// FuzzJudgeAndPlan: whatever a host's BMC reads, the judgement is Current
// exactly when nothing is found; a plan exists exactly when nothing is
// unknown, flashes only what a baseline wants, with the baseline's image;
// and the host the plan restores is judged Current.
func FuzzJudgeAndPlan(f *testing.F) {
	f.Add("1.2.3", "7.10", "Enabled", "admin,ops", "1.2.3", "Enabled", "admin", uint8(0))
	f.Add("1.0.0", "", "Disabled", "admin,ghost", "1.2.3", "Enabled", "admin,ops", uint8(1))
	f.Add("x", "y", "z", "", "", "", "", uint8(7))
	f.Fuzz(func(t *testing.T, bios, bmc, secure, accounts, biosBefore, secureBefore, accountsBefore string, unread uint8) {
		want := baseline.Want{Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("1.2.3"), "bmc": image("7.10")},
			BIOS: map[string]string{"SecureBoot": "Enabled"}, Accounts: []string{"ops"}, CheckAccounts: unread&8 == 0}
		have := baseline.Observed{Firmware: map[string]string{"bios": bios}, BIOS: map[string]string{"SecureBoot": secure},
			Accounts: split(accounts), Own: "admin"}
		if bmc != "" {
			have.Firmware["bmc"] = bmc
		}
		if unread&1 != 0 {
			have.Firmware = nil
		}
		if unread&2 != 0 {
			have.BIOS = nil
		}
		if unread&4 != 0 {
			have.Accounts = nil
		}
		var before *baseline.Observed
		if unread&16 == 0 {
			before = &baseline.Observed{Firmware: map[string]string{"bios": biosBefore}, BIOS: map[string]string{"SecureBoot": secureBefore},
				Accounts: split(accountsBefore)}
		}
		j := baseline.Judge(want, have, before)
		if (j.State == baseline.Current) != (len(j.Findings) == 0) {
			t.Fatalf("state %s with findings %v", j.State, j.Findings)
		}
		unknown := slices.ContainsFunc(j.Findings, func(f baseline.Finding) bool { return f.State == baseline.Unknown })
		r, ok := baseline.Plan(want, j)
		if ok == unknown {
			t.Fatalf("plan %t with an unknown finding %t: %v", ok, unknown, j.Findings)
		}
		if !ok {
			return
		}
		for c, img := range r.Flash {
			if want.Components[c] != img {
				t.Fatalf("flashes %s with %+v, the baseline wants %+v", c, img, want.Components[c])
			}
			have.Firmware[c] = img.Version
		}
		for k, v := range r.BIOS {
			have.BIOS[k] = v
		}
		have.Accounts = slices.DeleteFunc(have.Accounts, func(a string) bool { return slices.Contains(r.RemoveAccounts, a) })
		if again := baseline.Judge(want, have, before); again.State != baseline.Current {
			t.Fatalf("restored by %+v, still %s: %v", r, again.State, again.Findings)
		}
	})
}

func split(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// FuzzValidate: any spec is validated without panicking, and one it
// accepts names only components baremetal-operator knows, each with an
// http(s) image and a checksum.
func FuzzValidate(f *testing.F) {
	f.Add("host.cpu.count > 1", "bios", "1.2.3", "https://x/fw.bin", sum)
	f.Add("", "nic:", "", "ftp://x", "md5:00")
	f.Fuzz(func(t *testing.T, hw, component, version, url, checksum string) {
		s := hostfleetv1alpha1.FirmwareBaselineSpec{Hardware: hw,
			Components: map[string]hostfleetv1alpha1.FirmwareImage{component: {Version: version, URL: url, Checksum: checksum}}}
		if len(baseline.Validate(s)) > 0 {
			return
		}
		if component != "bios" && component != "bmc" && !strings.HasPrefix(component, "nic:") {
			t.Fatalf("accepted component %q", component)
		}
		if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") || version == "" || checksum == "" {
			t.Fatalf("accepted %+v", s.Components[component])
		}
	})
}
