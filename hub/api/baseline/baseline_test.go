package baseline_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/hub/api/baseline"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

var sum = "sha256:" + strings.Repeat("ab", 32)

func image(v string) hostfleetv1alpha1.FirmwareImage {
	return hostfleetv1alpha1.FirmwareImage{Version: v, URL: "https://images.example/fw-" + v + ".bin", Checksum: sum}
}

func fwBaseline(name, hw string, spec hostfleetv1alpha1.FirmwareBaselineSpec) hostfleetv1alpha1.FirmwareBaseline {
	spec.Hardware = hw
	return hostfleetv1alpha1.FirmwareBaseline{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func r750() *hardware.View {
	v := &hardware.View{CPU: hardware.CPU{Count: 64}, System: hardware.System{Manufacturer: "Dell Inc.", Product: "PowerEdge R750"}}
	hardware.Normalize(v)
	return v
}

// TestMerge: the baselines that select a host want their parts together;
// two that want different versions of one component, or values of one
// setting, for the same host are a conflict that names both; accounts
// allowed are those every baseline that checks them allows.
func TestMerge(t *testing.T) {
	g := NewWithT(t)
	fleet := fwBaseline("fleet", "", hostfleetv1alpha1.FirmwareBaselineSpec{
		BIOSSettings: map[string]string{"SecureBoot": "Enabled"}, BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{Allowed: []string{"ops", "audit"}}})
	dell := fwBaseline("r750", `host.system.product == "PowerEdge R750"`, hostfleetv1alpha1.FirmwareBaselineSpec{
		Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("1.2.3"), "bmc": image("7.10")}, BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{Allowed: []string{"ops"}}})
	other := fwBaseline("r650", `host.system.product == "PowerEdge R650"`, hostfleetv1alpha1.FirmwareBaselineSpec{
		Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("9.9.9")}})

	w, err := baseline.Merge([]hostfleetv1alpha1.FirmwareBaseline{other, dell, fleet}, r750())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w.From).To(Equal([]string{"fleet", "r750"}), "r650 does not select it")
	g.Expect(w.Components).To(Equal(map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("1.2.3"), "bmc": image("7.10")}))
	g.Expect(w.BIOS).To(Equal(map[string]string{"SecureBoot": "Enabled"}))
	g.Expect(w.CheckAccounts).To(BeTrue())
	g.Expect(w.Accounts).To(Equal([]string{"ops"}), "allowed by both")

	clash := fwBaseline("all-bios", "", hostfleetv1alpha1.FirmwareBaselineSpec{Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("2.0.0")}})
	_, err = baseline.Merge([]hostfleetv1alpha1.FirmwareBaseline{dell, clash}, r750())
	g.Expect(err).To(MatchError(And(ContainSubstring("r750 and all-bios"), ContainSubstring("bios at 1.2.3 and 2.0.0"))))
	_, err = baseline.Merge([]hostfleetv1alpha1.FirmwareBaseline{other, clash}, r750())
	g.Expect(err).NotTo(HaveOccurred(), "r650's does not select the host: no conflict")

	w, err = baseline.Merge([]hostfleetv1alpha1.FirmwareBaseline{dell}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w.From).To(BeEmpty(), "a host not inspected is selected by no expression")
}

// TestConflict: a baseline that would want another version than an
// existing one for a kind of host the fleet has is a conflict, named with
// where the hosts are; one whose hardware does not meet theirs, or a kind
// of host the fleet does not have, is none.
func TestConflict(t *testing.T) {
	r650 := &hardware.View{System: hardware.System{Manufacturer: "Dell Inc.", Product: "PowerEdge R650"}}
	hardware.Normalize(r650)
	fleet := []baseline.Known{{Where: "cluster c2, profile v1-650", View: r650}, {Where: "cluster c1, profile v1-750", View: r750()}}
	dell := fwBaseline("r750", `host.system.product == "PowerEdge R750"`, hostfleetv1alpha1.FirmwareBaselineSpec{
		Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("1.2.3")}})
	for _, tt := range []struct {
		name string
		b    hostfleetv1alpha1.FirmwareBaseline
		want string
	}{
		{"every host, another BIOS", fwBaseline("all", "", hostfleetv1alpha1.FirmwareBaselineSpec{
			Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("2.0.0")}}),
			"baselines r750 and all want bios at 1.2.3 and 2.0.0: one host cannot meet both; both select the hosts of cluster c1, profile v1-750"},
		{"the same BIOS", fwBaseline("all", "", hostfleetv1alpha1.FirmwareBaselineSpec{
			Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("1.2.3")}}), ""},
		{"other hosts", fwBaseline("r650", `host.system.product == "PowerEdge R650"`, hostfleetv1alpha1.FirmwareBaselineSpec{
			Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("2.0.0")}}), ""},
		{"hosts the fleet lacks", fwBaseline("r760", `host.system.product == "PowerEdge R760"`, hostfleetv1alpha1.FirmwareBaselineSpec{
			Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("2.0.0")}}), ""},
		{"itself, changed", fwBaseline("r750", "", hostfleetv1alpha1.FirmwareBaselineSpec{
			Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("2.0.0")}}), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := baseline.Conflict(tt.b, []hostfleetv1alpha1.FirmwareBaseline{dell}, fleet)
			if tt.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tt.want))
		})
	}
}

// TestJudgeAndPlan: what the BMC read against what the baselines want and
// what the host had when its claim bound it.
func TestJudgeAndPlan(t *testing.T) {
	want := baseline.Want{Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("1.2.3"), "bmc": image("7.10")},
		BIOS: map[string]string{"SecureBoot": "Enabled"}, Accounts: []string{"ops"}, CheckAccounts: true}
	clean := baseline.Observed{Firmware: map[string]string{"bios": "1.2.3", "bmc": "7.10", "nic:NIC.1": "22.31"},
		BIOS: map[string]string{"SecureBoot": "Enabled", "BootMode": "Uefi"}, Accounts: []string{"admin", "ops"}, Own: "admin"}
	with := func(f func(o *baseline.Observed)) baseline.Observed {
		o := clean
		o.Firmware, o.BIOS, o.Accounts = maps(clean.Firmware), maps(clean.BIOS), append([]string(nil), clean.Accounts...)
		f(&o)
		return o
	}
	for _, tc := range []struct {
		name     string
		have     baseline.Observed
		before   *baseline.Observed
		state    baseline.State
		findings []string
		restore  baseline.Restore
		held     bool
	}{
		{name: "as wanted", have: clean, before: &clean, state: baseline.Current},
		{name: "a tenant downgraded the BIOS, set Secure Boot off and added an account",
			have: with(func(o *baseline.Observed) {
				o.Firmware["bios"], o.BIOS["SecureBoot"], o.Accounts = "1.0.0", "Disabled", append(o.Accounts, "ghost")
			}), before: &clean, state: baseline.Drifted,
			findings: []string{"firmware bios drifted: 1.0.0, baseline 1.2.3, 1.2.3 when bound",
				"BIOS setting SecureBoot drifted: Disabled, baseline Enabled, Enabled when bound", "BMC account ghost drifted: enabled, baseline removed, absent when bound"},
			restore: baseline.Restore{Flash: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("1.2.3")},
				BIOS: map[string]string{"SecureBoot": "Enabled"}, RemoveAccounts: []string{"ghost"}}},
		{name: "behind: the BMC was older when bound (the baseline moved)",
			have: with(func(o *baseline.Observed) { o.Firmware["bmc"] = "7.00" }), before: ptr(with(func(o *baseline.Observed) { o.Firmware["bmc"] = "7.00" })),
			state: baseline.Behind, findings: []string{"firmware bmc behind: 7.00, baseline 7.10"},
			restore: baseline.Restore{Flash: map[string]hostfleetv1alpha1.FirmwareImage{"bmc": image("7.10")}, BIOS: map[string]string{}}},
		{name: "no record of when it was bound: behind, not blamed on the tenant",
			have: with(func(o *baseline.Observed) { o.Accounts = append(o.Accounts, "ghost") }), state: baseline.Behind,
			findings: []string{"BMC account ghost behind: enabled, baseline removed"},
			restore:  baseline.Restore{Flash: map[string]hostfleetv1alpha1.FirmwareImage{}, BIOS: map[string]string{}, RemoveAccounts: []string{"ghost"}}},
		{name: "a component the BMC does not report",
			have: with(func(o *baseline.Observed) { delete(o.Firmware, "bmc") }), before: &clean, state: baseline.Drifted,
			findings: []string{"firmware bmc drifted: none, baseline 7.10, 7.10 when bound"},
			restore:  baseline.Restore{Flash: map[string]hostfleetv1alpha1.FirmwareImage{"bmc": image("7.10")}, BIOS: map[string]string{}}},
		{name: "BIOS settings that cannot be read: unknown, held",
			have: with(func(o *baseline.Observed) { o.BIOS = nil }), before: &clean, state: baseline.Unknown,
			findings: []string{"BIOS setting SecureBoot unknown: none, baseline Enabled"}, held: true},
		{name: "accounts that cannot be read: unknown, held",
			have: with(func(o *baseline.Observed) { o.Accounts = nil }), before: &clean, state: baseline.Unknown,
			findings: []string{"BMC accounts unknown: none"}, held: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			j := baseline.Judge(want, tc.have, tc.before)
			g.Expect(j.State).To(Equal(tc.state))
			var said []string
			for _, f := range j.Findings {
				said = append(said, f.String())
			}
			g.Expect(said).To(Equal(tc.findings))
			r, ok := baseline.Plan(want, j)
			g.Expect(ok).To(Equal(!tc.held))
			if tc.held || tc.state == baseline.Current {
				g.Expect(r.Empty()).To(BeTrue())
				return
			}
			g.Expect(r).To(Equal(tc.restore))
		})
	}
}

// TestValidate: what the hub refuses, each with what to fix.
func TestValidate(t *testing.T) {
	g := NewWithT(t)
	ok := hostfleetv1alpha1.FirmwareBaselineSpec{Hardware: `host.system.product == "R750"`,
		Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": image("1.2.3"), "nic:NIC.1": image("22.31")}}
	g.Expect(baseline.Validate(ok)).To(BeEmpty())
	g.Expect(baseline.Validate(hostfleetv1alpha1.FirmwareBaselineSpec{BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{Allowed: []string{}}})).To(BeEmpty(), "only the credentials' own account")
	for _, tc := range []struct {
		spec hostfleetv1alpha1.FirmwareBaselineSpec
		says string
	}{
		{hostfleetv1alpha1.FirmwareBaselineSpec{}, "must say something"},
		{hostfleetv1alpha1.FirmwareBaselineSpec{Hardware: "host.cpu.cores > 1", BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{Allowed: []string{}}}, "hardware: the requirement does not compile"},
		{hostfleetv1alpha1.FirmwareBaselineSpec{Components: map[string]hostfleetv1alpha1.FirmwareImage{"cpld": image("1")}}, `"cpld" is no component`},
		{hostfleetv1alpha1.FirmwareBaselineSpec{Components: map[string]hostfleetv1alpha1.FirmwareImage{"nic:": image("1")}}, `"nic:" is no component`},
		{hostfleetv1alpha1.FirmwareBaselineSpec{Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": {Version: "1", URL: "ftp://x/fw.bin", Checksum: sum}}}, "no http:// or https:// URL"},
		{hostfleetv1alpha1.FirmwareBaselineSpec{Components: map[string]hostfleetv1alpha1.FirmwareImage{"bios": {Version: "1", URL: "https://x/fw.bin"}}}, "checksum: give the image's digest"},
		{hostfleetv1alpha1.FirmwareBaselineSpec{Components: map[string]hostfleetv1alpha1.FirmwareImage{"bmc": {URL: "https://x/fw.bin", Checksum: sum}}}, "components[bmc].version"},
	} {
		g.Expect(baseline.Validate(tc.spec)).To(ContainElement(ContainSubstring(tc.says)), "%+v", tc.spec)
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ptr[T any](v T) *T { return &v }
