// Package advice says, for every condition reason the hub and the agents
// write, what causes it and what to do: `kubectl hostfleet why` prints it
// and docs/troubleshooting.md is generated from it (make generate).
package advice

// Section is the reasons one condition carries.
type Section struct {
	// Title heads the section in docs/troubleshooting.md.
	Title string
	// Condition is the condition type (on a HostClaim, or "Tenant").
	Condition string
	// Intro, when set, is a line printed before the reasons.
	Intro   string
	Reasons []Reason
}

// Reason is one reason's cause and fix, in Markdown (backquoted names).
type Reason struct {
	Reason, Cause, Fix string
}

// For is the advice on reason, if there is any.
func For(reason string) (Reason, bool) {
	for _, s := range Sections {
		for _, r := range s.Reasons {
			if r.Reason == reason {
				return r, true
			}
		}
	}
	return Reason{}, false
}
