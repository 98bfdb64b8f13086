package baseline

import (
	"encoding/json"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Progress is a host's way through the release gate, as its
// hostfleet.io/restore annotation holds it (JSON).
type Progress struct {
	Phase string `json:"phase"`
	// Tasks are the update tasks started, by component.
	Tasks map[string]string `json:"tasks,omitempty"`
	// Found are the findings that started the restore, as said.
	Found []string `json:"found,omitempty"`
	// Reason is why a held host is held (a condition reason).
	Reason string `json:"reason,omitempty"`
	// Since is when the restore was asked of baremetal-operator (RFC 3339).
	Since string `json:"since,omitempty"`
}

// Phases of the release gate.
const (
	// PhaseJudge: released, to be judged (a host baremetal-operator
	// serves, once it is available again).
	PhaseJudge = "judge"
	// PhaseFlash: updates started; their tasks are followed.
	PhaseFlash = "flash"
	// PhaseBoot: the host boots once, so that staged BIOS settings and
	// flashed firmware take effect.
	PhaseBoot = "boot"
	// PhaseVerify: restored; read again, anything still not as the
	// baselines want holds the host.
	PhaseVerify = "verify"
	// PhaseHeld: held until its administrator removes the annotation.
	PhaseHeld = "held"
)

// ProgressOf reads a host's hostfleet.io/restore (value v, present ok); one
// that does not parse is held: judged again only once removed.
func ProgressOf(v string, ok bool) Progress {
	var p Progress
	if ok && json.Unmarshal([]byte(v), &p) != nil {
		p = Progress{Phase: PhaseHeld, Reason: "Unverifiable"}
	}
	return p
}

// String is the annotation's value.
func (p Progress) String() string {
	data, _ := json.Marshal(p)
	return string(data)
}

// Held reports whether the release gate holds a host with these
// annotations (its hostfleet.io/restore), and why.
func Held(annotations map[string]string) (string, bool) {
	v, ok := annotations[hostfleetv1alpha1.AnnotationRestore]
	p := ProgressOf(v, ok)
	return p.Reason, ok && p.Phase == PhaseHeld
}
