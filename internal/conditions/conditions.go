// Package conditions writes the conditions of Hostfleet's objects: every
// message bounded, the Scheduled and Paused conditions of claims said the
// same way by whoever writes them.
package conditions

import (
	"fmt"
	"unicode/utf8"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// MaxConditionMessage bounds every condition message Hostfleet writes, well
// under the API's 32 KiB limit on metav1.Condition messages, so that a
// message built from user input (a long annotation, many cluster names)
// can never make a status write fail.
const MaxConditionMessage = 4096

// Set is meta.SetStatusCondition with the message bounded to
// MaxConditionMessage bytes (cut at a rune boundary, marked with "…").
func Set(conds *[]metav1.Condition, c metav1.Condition) {
	c.Message = Bound(c.Message)
	meta.SetStatusCondition(conds, c)
}

// Bound cuts a condition's message to MaxConditionMessage bytes.
func Bound(msg string) string { return cut(msg, MaxConditionMessage) }

// MaxEventNote is the most an Event's note may hold: the API server
// refuses a longer one, and the Event is lost.
const MaxEventNote = 1024

// EventNote cuts an Event's note to MaxEventNote bytes; the condition that
// says the same keeps it whole.
func EventNote(msg string) string { return cut(msg, MaxEventNote) }

// cut cuts msg to max bytes at a rune boundary, marked with "…".
func cut(msg string, max int) string {
	if len(msg) <= max {
		return msg
	}
	n := max - len("…")
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:n] + "…"
}

// PlacedMessage is the message of the Scheduled condition (Placed) of a
// claim the scheduler placed on cluster, whether its agent or the
// scheduler writes it.
func PlacedMessage(cluster string) string { return "placed on " + cluster }

// SaysPlaced reports whether the conditions hold Scheduled True, Placed.
func SaysPlaced(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, hostfleetv1alpha1.ConditionScheduled)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == hostfleetv1alpha1.ReasonPlaced
}

// Admitted reports whether a hub claim that names a cluster may be served
// there: the scheduler placed it (hostfleet.io/placed-by), or its tenant
// pinned it and the scheduler let the pin through its checks, the host
// classes among them (Scheduled True), or it already holds a host there
// (the agent's reservation or binding). Only the hub sets the first two
// and only the agent the last (admission): a pin alone admits nothing, so
// that no pin gets around a host class.
func Admitted(c *metal3api.HostClaim) bool {
	return c.Annotations[hostfleetv1alpha1.AnnotationPlacedBy] == hostfleetv1alpha1.PlacedByScheduler ||
		meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled) ||
		c.Annotations[hostfleetv1alpha1.AnnotationReservedHost] != "" || c.Status.BareMetalHost != nil
}

// PausedBy is the value of a claim's pause annotation (who paused it, by
// Cluster API's convention; possibly empty) and whether it has one.
func PausedBy(annotations map[string]string) (string, bool) {
	v, ok := annotations[hostfleetv1alpha1.AnnotationPaused]
	return v, ok
}

// PausedMessage says who paused a claim (the annotation's value).
func PausedMessage(by string) string {
	if by == "" {
		return "paused (" + hostfleetv1alpha1.AnnotationPaused + " is set)"
	}
	return fmt.Sprintf("paused by %q (%s)", by, hostfleetv1alpha1.AnnotationPaused)
}

// SetPaused records on a claim's conditions whether it is paused: the
// Paused condition (True, naming who paused it and whether a deletion
// waits) while the annotation is there, none otherwise.
func SetPaused(conds *[]metav1.Condition, annotations map[string]string, deleting bool, generation int64) {
	by, ok := PausedBy(annotations)
	if !ok {
		meta.RemoveStatusCondition(conds, hostfleetv1alpha1.ConditionPaused)
		return
	}
	msg := PausedMessage(by) + ": Hostfleet changes nothing on the claim's host until the annotation is removed"
	if deleting {
		msg += "; the claim's deletion waits for it"
	}
	Set(conds, metav1.Condition{Type: hostfleetv1alpha1.ConditionPaused, Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonPaused,
		Message: msg, ObservedGeneration: generation})
}
