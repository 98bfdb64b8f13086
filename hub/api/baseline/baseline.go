// Package baseline holds a host to the fleet's FirmwareBaselines: which
// baselines select it and what they want of it together (Merge), how the
// host stands against that from what its BMC reads (Judge: current,
// behind, drifted while a claim held it, or unknown), and what restores it
// (Plan). Pure: the agent reads, judges, plans and applies; the hub
// validates (Validate).
package baseline

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// State is how a host, or one thing of it, stands against its baselines.
type State string

// States, the least severe first.
const (
	// Current: what the baselines want.
	Current State = "Current"
	// Behind: not what they want, and as it was when its last claim
	// bound it (an older release, or a baseline changed since).
	Behind State = "Behind"
	// Drifted: changed while a claim held the host: its tenant did it.
	Drifted State = "Drifted"
	// Unknown: the BMC could not read it; the host cannot be verified.
	Unknown State = "Unknown"
)

func (s State) severity() int { return slices.Index([]State{Current, Behind, Drifted, Unknown}, s) }

// Want is what the baselines that select a host want of it.
type Want struct {
	// Components are the firmware wanted, by component (bios, bmc,
	// nic:<Id>).
	Components map[string]hostfleetv1alpha1.FirmwareImage
	// BIOS are the BIOS attributes wanted.
	BIOS map[string]string
	// Accounts are the BMC user names allowed besides the host's own;
	// CheckAccounts says whether any baseline checks them.
	Accounts      []string
	CheckAccounts bool
	// From names the baselines, sorted.
	From []string
}

// Merge is what the baselines that select a host of view v want of it
// together. Two that want different versions of one component, or
// different values of one BIOS setting, conflict: the host cannot be
// verified against both, and Merge says which. Accounts allowed are those
// every baseline that checks accounts allows.
func Merge(baselines []hostfleetv1alpha1.FirmwareBaseline, v *hardware.View) (Want, error) {
	w := Want{Components: map[string]hostfleetv1alpha1.FirmwareImage{}, BIOS: map[string]string{}}
	by := map[string]string{} // what wants each component or setting: the baseline's name
	for _, b := range baselines {
		if !Selects(b.Spec.Hardware, v) {
			continue
		}
		w.From = append(w.From, b.Name)
		for c, img := range b.Spec.Components {
			if have, ok := w.Components[c]; ok && have.Version != img.Version {
				return Want{}, fmt.Errorf("baselines %s and %s want %s at %s and %s: one host cannot meet both", by["c/"+c], b.Name, c, have.Version, img.Version)
			}
			w.Components[c], by["c/"+c] = img, b.Name
		}
		for k, val := range b.Spec.BIOSSettings {
			if have, ok := w.BIOS[k]; ok && have != val {
				return Want{}, fmt.Errorf("baselines %s and %s want BIOS setting %s as %q and %q: one host cannot meet both", by["s/"+k], b.Name, k, have, val)
			}
			w.BIOS[k], by["s/"+k] = val, b.Name
		}
		if p := b.Spec.BMCAccounts; p != nil {
			if !w.CheckAccounts {
				w.Accounts, w.CheckAccounts = slices.Clone(p.Allowed), true
			} else {
				w.Accounts = slices.DeleteFunc(w.Accounts, func(a string) bool { return !slices.Contains(p.Allowed, a) })
			}
		}
	}
	slices.Sort(w.From)
	slices.Sort(w.Accounts)
	return w, nil
}

// Known is a kind of host the fleet has, by where it is known (its
// cluster and profile, as the clusters' HostInventories publish them).
type Known struct {
	Where string
	View  *hardware.View
}

// Conflict says whether baseline b, beside the others, would want two
// things of one kind of host the fleet has: the first such host, by where
// it is known, and the baselines that disagree; nil when none does. A host
// the fleet does not have yet is judged when it comes (Merge).
func Conflict(b hostfleetv1alpha1.FirmwareBaseline, others []hostfleetv1alpha1.FirmwareBaseline, fleet []Known) error {
	for _, k := range fleet {
		if !Selects(b.Spec.Hardware, k.View) {
			continue
		}
		for _, o := range others {
			if o.Name == b.Name {
				continue
			}
			if _, err := Merge([]hostfleetv1alpha1.FirmwareBaseline{o, b}, k.View); err != nil {
				return fmt.Errorf("%w; both select the hosts of %s", err, k.Where)
			}
		}
	}
	return nil
}

// Selects reports whether a baseline's hardware expression selects a host
// of view v: an empty one selects every host; one that does not parse, or
// a host not inspected, none.
func Selects(expr string, v *hardware.View) bool {
	if expr == "" {
		return true
	}
	r, err := hardware.Cached(expr)
	if err != nil {
		return false
	}
	ok, err := r.Meets(v)
	return ok && err == nil
}

// Observed is what a host's BMC read: each part nil when it could not be
// read.
type Observed struct {
	Firmware map[string]string
	BIOS     map[string]string
	// Accounts are the BMC's enabled user names; Own the one its
	// credentials Secret names.
	Accounts []string
	Own      string
}

// Finding is one thing of a host that is not as its baselines want it.
type Finding struct {
	// What: "firmware bios", "BIOS setting SecureBoot", "BMC account ghost".
	What  string
	State State
	// Have, Want and Before (as it was when the claim bound the host; ""
	// unknown) are the evidence.
	Have, Want, Before string
}

// String says the finding in one line, for a condition or an Event.
func (f Finding) String() string {
	s := fmt.Sprintf("%s %s: %s", f.What, strings.ToLower(string(f.State)), orNone(f.Have))
	if f.Want != "" {
		s += ", baseline " + f.Want
	}
	if f.State == Drifted && f.Before != "" {
		s += ", " + f.Before + " when bound"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Judgement is how a host stands: the most severe of its findings.
type Judgement struct {
	State    State
	Findings []Finding
}

// Said is each finding in its line, for a condition or an Event.
func (j Judgement) Said() []string {
	out := make([]string, 0, len(j.Findings))
	for _, f := range j.Findings {
		out = append(out, f.String())
	}
	return out
}

// Judge compares what a host's BMC read (have) with what its baselines
// want, and with what it read when its last claim bound it (before; nil:
// no record): a difference the host did not have when bound is Drifted,
// one it had is Behind; what could not be read is Unknown.
func Judge(w Want, have Observed, before *Observed) Judgement {
	var out []Finding
	judge := func(what string, m map[string]string, part func(*Observed) map[string]string, k, want string) {
		if m == nil {
			out = append(out, Finding{What: what, State: Unknown, Want: want})
			return
		}
		got, ok := m[k]
		if ok && got == want {
			return
		}
		f := Finding{What: what, State: Behind, Have: got, Want: want}
		if before != nil && part(before) != nil {
			if f.Before = part(before)[k]; f.Before != got {
				f.State = Drifted
			}
		}
		out = append(out, f)
	}
	for _, c := range slices.Sorted(maps.Keys(w.Components)) {
		judge("firmware "+c, have.Firmware, func(o *Observed) map[string]string { return o.Firmware }, c, w.Components[c].Version)
	}
	for _, k := range slices.Sorted(maps.Keys(w.BIOS)) {
		judge("BIOS setting "+k, have.BIOS, func(o *Observed) map[string]string { return o.BIOS }, k, w.BIOS[k])
	}
	if w.CheckAccounts {
		out = append(out, accounts(w, have, before)...)
	}
	j := Judgement{State: Current, Findings: out}
	for _, f := range out {
		if f.State.severity() > j.State.severity() {
			j.State = f.State
		}
	}
	return j
}

// accounts finds the BMC accounts neither allowed nor the host's own: one
// added while the claim held the host is Drifted.
func accounts(w Want, have Observed, before *Observed) []Finding {
	if have.Accounts == nil {
		return []Finding{{What: "BMC accounts", State: Unknown}}
	}
	var out []Finding
	for _, a := range slices.Sorted(slices.Values(have.Accounts)) {
		if a == have.Own || slices.Contains(w.Accounts, a) {
			continue
		}
		f := Finding{What: "BMC account " + a, State: Behind, Have: "enabled", Want: "removed"}
		if before != nil && before.Accounts != nil && !slices.Contains(before.Accounts, a) {
			f.State, f.Before = Drifted, "absent"
		}
		out = append(out, f)
	}
	return out
}

// Restore is what brings a host back to its baselines.
type Restore struct {
	// Flash are the components to update, with their images, by name.
	Flash map[string]hostfleetv1alpha1.FirmwareImage
	// BIOS are the settings to stage (applied at the next boot).
	BIOS map[string]string
	// RemoveAccounts are the BMC accounts to remove (or disable).
	RemoveAccounts []string
}

// Empty reports whether there is nothing to restore.
func (r Restore) Empty() bool {
	return len(r.Flash) == 0 && len(r.BIOS) == 0 && len(r.RemoveAccounts) == 0
}

// Plan is what restores a host judged j against w; ok is false when the
// host cannot be verified (a part Unknown): it is held, not restored.
func Plan(w Want, j Judgement) (Restore, bool) {
	r := Restore{Flash: map[string]hostfleetv1alpha1.FirmwareImage{}, BIOS: map[string]string{}}
	for _, f := range j.Findings {
		switch {
		case f.State == Unknown:
			return Restore{}, false
		case strings.HasPrefix(f.What, "firmware "):
			c := strings.TrimPrefix(f.What, "firmware ")
			r.Flash[c] = w.Components[c]
		case strings.HasPrefix(f.What, "BIOS setting "):
			k := strings.TrimPrefix(f.What, "BIOS setting ")
			r.BIOS[k] = w.BIOS[k]
		case strings.HasPrefix(f.What, "BMC account "):
			r.RemoveAccounts = append(r.RemoveAccounts, strings.TrimPrefix(f.What, "BMC account "))
		}
	}
	return r, true
}

var checksum = regexp.MustCompile(`^(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$`)

// Validate says what is wrong with a baseline, each with what to fix: its
// hardware expression, its components' names, image URLs and checksums.
// (Its schema says most of it again; this is what the hub's webhook and
// Go clients check.)
func Validate(s hostfleetv1alpha1.FirmwareBaselineSpec) []string {
	var errs []string
	if s.Hardware != "" {
		if _, err := hardware.Parse(s.Hardware); err != nil {
			errs = append(errs, "hardware: "+err.Error())
		}
	}
	if len(s.Components) == 0 && len(s.BIOSSettings) == 0 && s.BMCAccounts == nil {
		errs = append(errs, "a baseline must say something: components, biosSettings or bmcAccounts")
	}
	for _, c := range slices.Sorted(maps.Keys(s.Components)) {
		img := s.Components[c]
		if c != "bios" && c != "bmc" && (!strings.HasPrefix(c, "nic:") || len(c) == len("nic:")) {
			errs = append(errs, fmt.Sprintf("components: %q is no component baremetal-operator knows: bios, bmc or nic:<Id>", c))
		}
		if img.Version == "" {
			errs = append(errs, fmt.Sprintf("components[%s].version: the version the BMC reads back once installed is needed", c))
		}
		if u, err := url.Parse(img.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Sprintf("components[%s].url: %q is no http:// or https:// URL the BMC can fetch", c, img.URL))
		}
		if !checksum.MatchString(img.Checksum) {
			errs = append(errs, fmt.Sprintf("components[%s].checksum: give the image's digest as sha256:<64 hex> or sha512:<128 hex>", c))
		}
	}
	return errs
}
