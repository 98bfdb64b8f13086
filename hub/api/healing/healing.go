// Package healing reads what a claim's healing rests on: its tenant's
// policy (spec.healing) bounded by the claim's hostfleet.io/healing, the
// claim's record of replacements (hostfleet.io/replacements) and a
// quarantined host's hostfleet.io/quarantined.
package healing

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Defaults of a tenant's policy.
const (
	DefaultGrace     = 5 * time.Minute
	DefaultMaxPerDay = 3
	// MaxGrace bounds a claim's grace: a longer one is a typo.
	MaxGrace = 7 * 24 * time.Hour
)

// Policy is what happens to one claim whose host fails.
type Policy struct {
	Action hostfleetv1alpha1.HealingAction
	// Grace is how long the host stays failed before it is replaced.
	Grace time.Duration
	// MaxPerDay caps replacements in any 24 hours.
	MaxPerDay int
	// Unfenced: the host is replaced even if it cannot be confirmed off.
	Unfenced bool
	// Node: the claim's Node NotReady counts as its host failed (the
	// tenant's nodeNotReady).
	Node bool
}

// Tenant is a tenant's policy, its defaults filled in (nil: Notify). It
// is never unfenced: a claim asks for that, where the tenant allows it.
func Tenant(h *hostfleetv1alpha1.Healing) Policy {
	p := Policy{Action: hostfleetv1alpha1.HealingNotify, Grace: DefaultGrace, MaxPerDay: DefaultMaxPerDay}
	if h == nil {
		return p
	}
	if h.Action != "" {
		p.Action = h.Action
	}
	if h.Grace != nil && h.Grace.Duration > 0 {
		p.Grace = h.Grace.Duration
	}
	if h.MaxReplacementsPerDay != nil {
		p.MaxPerDay = int(*h.MaxReplacementsPerDay)
	}
	p.Node = h.NodeNotReady
	return p
}

// Override is what a claim's annotation asks.
type Override struct {
	Action hostfleetv1alpha1.HealingAction
	// Grace, if not zero, replaces the tenant's.
	Grace    time.Duration
	Unfenced bool
}

// Parse reads a claim's hostfleet.io/healing: "Notify" or "Replace", then
// optionally ",grace=<duration>" and ",unfenced".
func Parse(v string) (Override, error) {
	parts := strings.Split(v, ",")
	var o Override
	switch a := hostfleetv1alpha1.HealingAction(strings.TrimSpace(parts[0])); a {
	case hostfleetv1alpha1.HealingNotify, hostfleetv1alpha1.HealingReplace:
		o.Action = a
	default:
		return Override{}, fmt.Errorf("%s %q starts with neither Notify nor Replace", hostfleetv1alpha1.AnnotationHealing, v)
	}
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		switch {
		case p == "unfenced":
			o.Unfenced = true
		case strings.HasPrefix(p, "grace="):
			d, err := time.ParseDuration(strings.TrimPrefix(p, "grace="))
			if err != nil || d <= 0 || d > MaxGrace {
				return Override{}, fmt.Errorf("%s: %q is not a grace: give a Go duration between 0 and %s, such as grace=10m", hostfleetv1alpha1.AnnotationHealing, p, MaxGrace)
			}
			o.Grace = d
		default:
			return Override{}, fmt.Errorf("%s: %q is neither grace=<duration> nor unfenced", hostfleetv1alpha1.AnnotationHealing, p)
		}
	}
	return o, nil
}

// Effective is a claim's policy: its tenant's (t), overridden by the
// claim's annotation within the tenant's bounds: a grace no shorter than
// the tenant's, unfenced only where the tenant allows it. An annotation
// that does not parse or oversteps is ignored, and the error says why.
func Effective(t *hostfleetv1alpha1.Healing, annotations map[string]string) (Policy, error) {
	p := Tenant(t)
	v, ok := annotations[hostfleetv1alpha1.AnnotationHealing]
	if !ok {
		return p, nil
	}
	o, err := Parse(v)
	if err != nil {
		return p, err
	}
	if o.Grace != 0 && o.Grace < p.Grace {
		return p, fmt.Errorf("%s asks a grace of %s, shorter than the tenant's %s: give one of at least %s", hostfleetv1alpha1.AnnotationHealing, o.Grace, p.Grace, p.Grace)
	}
	if o.Unfenced && (t == nil || !t.AllowUnfenced) {
		return p, fmt.Errorf("%s asks unfenced, which the tenant does not allow (spec.healing.allowUnfenced)", hostfleetv1alpha1.AnnotationHealing)
	}
	p.Action = o.Action
	if o.Grace != 0 {
		p.Grace = o.Grace
	}
	p.Unfenced = o.Unfenced
	return p, nil
}

// Replacement is one replacement of a claim's host.
type Replacement struct {
	// At is when the failed host was quarantined (the agent's clock).
	At metav1.Time `json:"at"`
	// Failed is the failed host, <namespace>/<name>.
	Failed string `json:"failed"`
	// Cluster is the cluster of the failed host: the claim waits there for
	// another host for the hub's bind deadline, then, unless pinned, the
	// hub places it elsewhere. Empty in records written before it existed.
	Cluster string `json:"cluster,omitempty"`
	// Reason is the failure's evidence, in a word (a HostHealthy reason's
	// evidence: PowerManagementError, say).
	Reason string `json:"reason"`
	// Fenced says whether the failed host was confirmed off as its
	// quarantine began; false in records written before it existed.
	Fenced bool `json:"fenced,omitempty"`
}

// MaxRecent is how many replacements a record keeps.
const MaxRecent = 10

// Record is a claim's hostfleet.io/replacements.
type Record struct {
	// Count is how many times the claim's host was replaced.
	Count int `json:"count"`
	// Recent are the last replacements, oldest first.
	Recent []Replacement `json:"recent,omitempty"`
}

// RecordOf reads a claim's record; a value that does not parse counts as
// MaxRecent replacements now, so that a claim whose record was damaged is
// not replaced again until it is fixed.
func RecordOf(annotations map[string]string, now time.Time) (Record, error) {
	v, ok := annotations[hostfleetv1alpha1.AnnotationReplacements]
	if !ok {
		return Record{}, nil
	}
	var r Record
	if err := json.Unmarshal([]byte(v), &r); err != nil || r.Count < len(r.Recent) {
		bad := Record{Count: MaxRecent}
		for range MaxRecent {
			bad.Recent = append(bad.Recent, Replacement{At: metav1.NewTime(now)})
		}
		return bad, fmt.Errorf("%s does not parse as the agent writes it: %q", hostfleetv1alpha1.AnnotationReplacements, v)
	}
	return r, nil
}

// Within counts the replacements in the d before now.
func (r Record) Within(now time.Time, d time.Duration) int {
	n := 0
	for _, x := range r.Recent {
		if !x.At.Time.Before(now.Add(-d)) {
			n++
		}
	}
	return n
}

// Add is the record with one more replacement, the oldest beyond
// MaxRecent dropped.
func (r Record) Add(x Replacement) Record {
	out := Record{Count: r.Count + 1, Recent: append(append([]Replacement(nil), r.Recent...), x)}
	if n := len(out.Recent); n > MaxRecent {
		out.Recent = out.Recent[n-MaxRecent:]
	}
	return out
}

// Last is the last replacement, if any.
func (r Record) Last() (Replacement, bool) {
	if len(r.Recent) == 0 {
		return Replacement{}, false
	}
	return r.Recent[len(r.Recent)-1], true
}

// String is the annotation's value.
func (r Record) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Quarantine is a quarantined host's hostfleet.io/quarantined.
type Quarantine struct {
	// Since is when the host was quarantined (the agent's clock).
	Since metav1.Time `json:"since"`
	// Claim is the claim it was replaced for, <namespace>/<name>, and
	// ClaimUID its UID.
	Claim    string `json:"claim"`
	ClaimUID string `json:"claimUID,omitempty"`
	// Reason and Message are the failure's evidence.
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Fenced says whether the host was confirmed off before it was
	// replaced (false only under an unfenced policy).
	Fenced bool `json:"fenced"`
}

// String is the annotation's value.
func (q Quarantine) String() string {
	b, _ := json.Marshal(q)
	return string(b)
}

// QuarantineOf reads a host's quarantine: ok whenever the annotation is
// there, even if it does not parse (the host stays out of the pool; the
// error says why).
func QuarantineOf(annotations map[string]string) (Quarantine, bool, error) {
	v, ok := annotations[hostfleetv1alpha1.AnnotationQuarantined]
	if !ok {
		return Quarantine{}, false, nil
	}
	var q Quarantine
	if err := json.Unmarshal([]byte(v), &q); err != nil {
		return Quarantine{Reason: "Unreadable", Message: v}, true, fmt.Errorf("%s does not parse: %w", hostfleetv1alpha1.AnnotationQuarantined, err)
	}
	return q, true, nil
}
