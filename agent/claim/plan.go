package claim

import (
	"fmt"
	"maps"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/heal"
	"github.com/hostfleet/hostfleet/agent/hostspec"
	"github.com/hostfleet/hostfleet/agent/hoststatus"
	"github.com/hostfleet/hostfleet/agent/labelsync"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	"github.com/hostfleet/hostfleet/hub/api/usage"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
)

// observed is what a reconcile reads of a claim that holds a host: what
// its plan is made from.
type observed struct {
	claim    *metal3api.HostClaim
	host     *metal3api.BareMetalHost
	prefixes []string
	// pausedBy and paused: the claim's pause annotation (baremetal-operator's).
	pausedBy string
	paused   bool
	// detach: a HostDeployPolicy of the host lets its claim detach it.
	detach bool
	// refs and secrets are the claim's data secrets, read from its
	// namespace; failed says why they cannot be copied (a missing secret,
	// a reference outside the namespace).
	refs    []hostspec.SecretRef
	secrets []*corev1.Secret
	failed  *hoststatus.Sync
	// usage names the hub claim the host's use counts for (its namespace
	// and UID; none for a local claim not forwarded from the hub).
	usageNS, usageClaim string
	// policy is the claim's healing policy (its tenant's, bounded by its
	// annotation); policyErr says why the annotation was ignored.
	policy    healing.Policy
	policyErr error
	// now is when the claim was read: what its health is judged at.
	now time.Time
	// health is the host's health as judged (judge): a fence powers the
	// host off whatever the claim asks, a replacement quarantines it.
	health health
}

// plan is what a claim that holds a host, the host and their copies should
// be, in the order the executor writes them.
type plan struct {
	// meta: the claim's metadata (reservation, host UID, finalizer,
	// labels) is not what it should be.
	meta bool
	// migrate: the host's consumerRef is the upstream one an older agent
	// wrote; openUsage: the host lacks a whole open usage interval.
	migrate, openUsage bool
	// confirm: the binding is confirmed in the claim's status, with
	// pending as the Synchronized outcome, before anything is written on
	// the host.
	confirm bool
	pending hoststatus.Sync
	// spec: the secrets to copy and the host spec to apply; nil: none.
	spec *hostPlan
	// reboot: a one-shot reboot request to hand to the host.
	reboot bool
	// sync: the Synchronized outcome once the writes are done.
	sync hoststatus.Sync
	// quarantine: the host failed and is replaced; nothing above is
	// written, the quarantine's own steps are.
	quarantine *quarantine
}

// quarantine is how a failed host is replaced: the claim records the
// replacement (record; nil when recorded already), then the host is
// released and quarantined with its evidence and whether it was confirmed
// off.
type quarantine struct {
	evidence, why string
	fenced        bool
	record        *healing.Record
}

// hostPlan is what is written on the host for its claim: the hub secrets
// to copy next to it, then its spec.
type hostPlan struct {
	refs        []hostspec.SecretRef
	secrets     []*corev1.Secret
	allowDetach bool
	// off: the host is powered off, whatever the claim asks (a fence).
	off bool
}

// planFor is a claim's plan (pure). A paused claim gets the same plan with
// every host write off: it keeps its metadata and status, and says what
// waits for the pause to end.
func planFor(o observed, consumer binder.Consumer, cluster string) plan {
	c, h := o.claim, o.host
	var p plan
	if o.health.d.Step == heal.Quarantine {
		return plan{quarantine: quarantineFor(o, cluster)}
	}
	fenced := o.health.fenced()
	_, _, _, p.meta = claimMeta(c, h, o.prefixes)
	writes := false
	switch {
	case o.failed != nil:
		// Nothing is written on the host until it is fixed: a host never
		// deploys with half of its configuration.
		p.sync = *o.failed
	default:
		want := hostspec.Bound(poweredAs(c, fenced), h, o.refs, o.detach)
		writes = len(o.refs) > 0 || len(hostspec.ReferencedCopies(h)) > 0 || !hostspec.UpToDate(h, want)
		p.spec = &hostPlan{refs: o.refs, secrets: o.secrets, allowDetach: o.detach, off: fenced}
		p.sync = detachSync(c, h, o.detach)
		if o.paused && !hostspec.UpToDate(h, want) {
			p.sync = hoststatus.Sync{Reason: hostfleetv1alpha1.ReasonPaused, Message: fmt.Sprintf(
				"%s: the claim's changes reach host %s once the annotation is removed", conditions.PausedMessage(o.pausedBy), klog.KObj(h))}
		}
	}
	if o.paused {
		// Nothing on any host: no spec, no secret copy, no reboot.
		p.spec = nil
		return p
	}
	p.migrate = consumer.IsLegacy(h)
	p.openUsage = o.usageNS != "" && o.usageClaim != "" && !usage.Opened(h) && consumer.Bound(h)
	p.confirm = !confirmed(c, h)
	p.pending = p.sync
	if p.confirm && writes {
		p.pending = hoststatus.Sync{Reason: hostfleetv1alpha1.ReasonSynchronizing, Message: fmt.Sprintf(
			"writing the claim's image, power and data secrets to host %s", klog.KObj(h))}
	}
	_, p.reboot = hostspec.OneShotReboot(c)
	if fenced {
		p.reboot = false // a fenced host stays off
	}
	if request := c.Annotations[hostfleetv1alpha1.AnnotationRebootRequest]; request != "" && c.Annotations[hostfleetv1alpha1.AnnotationRebootHandled] == request {
		p.reboot = false // carried out already: a re-applied request reboots once
	}
	return p
}

// quarantineFor is the quarantine of a failed host (pure). Its evidence
// is the failure as the fence began (the host may look well once off),
// and it is decided once, as the quarantine begins, and recorded with it:
// a quarantine cut short resumes on a released host, which may look well,
// or have been powered on by its deprovisioning or erase, since. The
// claim's last replacement is this failure's record if made since the
// failure began.
func quarantineFor(o observed, cluster string) *quarantine {
	hl, h := o.health, o.host
	name := h.Namespace + "/" + h.Name
	q := &quarantine{evidence: hl.verdict.Evidence, why: hl.verdict.Detail, fenced: heal.Off(h)}
	if hl.current != nil {
		if e := heal.EvidenceIn(hl.current.Message); e != "" {
			q.evidence = e
		}
		if q.why == "" {
			q.why = hl.current.Message // what the claim was told as the fence began
		}
	}
	if q.evidence == "" {
		q.evidence = "failed"
	}
	if last, ok := hl.record.Last(); ok && last.Failed == name && hl.current != nil && !last.At.Time.Before(hl.current.LastTransitionTime.Time) {
		q.evidence, q.fenced = last.Reason, last.Fenced
		return q
	}
	rec := hl.record.Add(healing.Replacement{At: metav1.NewTime(o.now), Failed: name, Cluster: cluster, Reason: q.evidence, Fenced: q.fenced})
	q.record = &rec
	return q
}

// poweredAs is the claim as its host's spec is made from: powered off
// while the host is fenced.
func poweredAs(c *metal3api.HostClaim, off bool) *metal3api.HostClaim {
	if !off || !c.Spec.PoweredOn {
		return c
	}
	c = c.DeepCopy()
	c.Spec.PoweredOn = false
	return c
}

// claimMeta is what a claim's metadata should be for host h (nil: none):
// its labels (the host's under prefixes, and the bound-host hint), and,
// with a host, its reservation (hostfleet.io/reserved-host), the host's
// UID and the agent's finalizer; changed says whether the claim differs.
// Without a host the reservation goes; the finalizer stays until the claim
// is deleted.
func claimMeta(c *metal3api.HostClaim, h *metal3api.BareMetalHost, prefixes []string) (labels map[string]string, reserved, uid string, changed bool) {
	var hostLabels map[string]string
	bound := ""
	if h != nil {
		hostLabels, bound, reserved, uid = h.Labels, labelsync.BoundHostValue(h.Name), binder.ReservationValue(h), string(h.UID)
	}
	labels = labelsync.Desired(c.Labels, hostLabels, prefixes, bound)
	current, has := c.Annotations[hostfleetv1alpha1.AnnotationReservedHost]
	currentUID, hasUID := c.Annotations[hostfleetv1alpha1.AnnotationHostUID]
	moves := current != reserved || has != (h != nil) || currentUID != uid || hasUID != (h != nil)
	finalizer := h != nil && !controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.AgentFinalizer)
	return labels, reserved, uid, !maps.Equal(labels, c.Labels) || moves || finalizer
}

// detachSync is the sync outcome once everything else is written: failed
// only if the claim asks to detach where that is not allowed.
func detachSync(c *metal3api.HostClaim, h *metal3api.BareMetalHost, allowDetach bool) hoststatus.Sync {
	if hostspec.WantsDetach(c) && !allowDetach {
		return hoststatus.Sync{Reason: hostfleetv1alpha1.ReasonDetachNotAllowed, Message: fmt.Sprintf(
			"the claim asks to detach host %s/%s, but no HostDeployPolicy there allows it; remove %s from the claim, or ask the cluster administrator to annotate the policy %s=true",
			h.Namespace, h.Name, metal3api.DetachedAnnotation, hostfleetv1alpha1.AnnotationAllowDetach)}
	}
	return hoststatus.Sync{OK: true}
}
