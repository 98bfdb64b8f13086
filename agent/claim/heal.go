package claim

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/hostfleet/hostfleet/agent/heal"
	"github.com/hostfleet/hostfleet/agent/hostspec"
	"github.com/hostfleet/hostfleet/agent/hoststatus"
	"github.com/hostfleet/hostfleet/agent/metrics"
	"github.com/hostfleet/hostfleet/agent/servedtenants"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/fence"
)

// Healing tunes how the agent heals the claims whose hosts fail
// (agent/heal decides).
type Healing struct {
	// Breaker pauses replacement on the cluster when too many of its
	// bound hosts fail at once.
	Breaker heal.Breaker
	// FenceTimeout is how long a failed host may take to be confirmed off
	// before its fence counts as unconfirmed.
	FenceTimeout time.Duration
}

// health is a claim's healing decision and what it was made from.
type health struct {
	d       heal.Decision
	verdict heal.Verdict
	record  healing.Record
	current *metav1.Condition
}

// judge decides the healing step of a claim bound to its host: how the
// host is (and its Node, if its tenant counts Nodes), the claim's policy,
// its replacements and, before a fence, the cluster's breaker.
func (r *Reconciler) judge(ctx context.Context, o observed) (health, error) {
	c, h, now := o.claim, o.host, o.now
	rec, _ := healing.RecordOf(c.Annotations, now)
	hl := health{verdict: heal.Judge(h), record: rec, current: meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionHostHealthy)}
	if o.policy.Node {
		hl.verdict = nodeVerdict(hl.verdict, h, c)
	}
	ready := readyOf(hoststatus.Conditions(c, h, hoststatus.Sync{OK: true}))
	hin := heal.Input{Host: h.Namespace + "/" + h.Name, Verdict: hl.verdict, Policy: o.policy, PolicyErr: o.policyErr, Current: hl.current,
		Off: heal.Off(h), Replaced: rec.Within(now, 24*time.Hour), Ready: ready.Status == metav1.ConditionTrue, ReadyMessage: ready.Message,
		FenceTimeout: r.Healing.FenceTimeout, Now: now}
	if last, ok := rec.Last(); ok {
		hin.Last = &last
	}
	hl.d = heal.Next(hin)
	if hl.d.Step == heal.Fence {
		count, err := r.breakerCount(ctx, now)
		if err != nil {
			return health{}, err
		}
		open, why := r.Healing.Breaker.Open(count)
		metrics.BreakerOpen.Set(map[bool]float64{false: 0, true: 1}[open])
		if open {
			hin.BreakerOpen, hin.BreakerWhy = true, why
			hl.d = heal.Next(hin)
		}
	}
	return hl, nil
}

// healingOf is the claim's healing policy, and why its annotation was
// ignored (if it was): a hub claim's tenant's (through the
// ClusterTenancy), bounded by the claim's hostfleet.io/healing; a local
// claim's annotation within the defaults.
func (r *Reconciler) healingOf(ctx context.Context, c *metal3api.HostClaim, nsLabels map[string]string) (healing.Policy, error, error) {
	var t *hostfleetv1alpha1.Healing
	if name := nsLabels[hostfleetv1alpha1.LabelTenant]; name != "" && !r.local() {
		ct, err := servedtenants.Get(ctx, r.Claims, r.ClusterName)
		if err != nil {
			return healing.Policy{}, nil, err
		}
		if st := ct.Tenant(hostfleetv1alpha1.RoleInfrastructure, name); st != nil {
			t = st.Healing
		}
	}
	p, perr := healing.Effective(t, c.Annotations)
	return p, perr, nil
}

// breakerCount counts, for the breaker, the cluster's bound hosts, the
// failed ones among them and the hosts quarantined within its window.
func (r *Reconciler) breakerCount(ctx context.Context, now time.Time) (heal.Count, error) {
	var hosts metal3api.BareMetalHostList
	if err := r.Managed.List(ctx, &hosts, client.UnsafeDisableDeepCopy); err != nil {
		return heal.Count{}, fmt.Errorf("list BareMetalHosts: %w", err)
	}
	var n heal.Count
	for i := range hosts.Items {
		h := &hosts.Items[i]
		if q, ok, _ := healing.QuarantineOf(h.Annotations); ok {
			if !q.Since.Time.Before(now.Add(-r.Healing.Breaker.Window)) {
				n.Quarantined++
			}
			continue
		}
		if h.Spec.ConsumerRef == nil {
			continue
		}
		n.Bound++
		v := heal.Judge(h)
		if v.State != heal.Failed {
			var err error
			if v, err = r.byItsNode(ctx, h, v); err != nil {
				return heal.Count{}, err
			}
		}
		if v.State == heal.Failed {
			n.Failed++
		}
	}
	return n, nil
}

// nodeVerdict is v, a host's own verdict, once its claim's Node counts:
// the claim's NodeReady since the host was bound (heal.Node).
func nodeVerdict(v heal.Verdict, h *metal3api.BareMetalHost, c *metal3api.HostClaim) heal.Verdict {
	boundAt, _ := time.Parse(time.RFC3339, h.Annotations[hostfleetv1alpha1.AnnotationBoundAt])
	return heal.Node(v, h, meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionNodeReady), boundAt)
}

// byItsNode is a bound host's verdict for the breaker once its claim's
// Node counts: when a switch fails, the Nodes behind it go not Ready while
// their hosts report nothing wrong, and the breaker must count them before
// the first is fenced, not as each is quarantined.
func (r *Reconciler) byItsNode(ctx context.Context, h *metal3api.BareMetalHost, v heal.Verdict) (heal.Verdict, error) {
	if r.local() || !r.Consumer.Bound(h) {
		return v, nil // local claims have no workload agent, hence no NodeReady
	}
	ref, c := h.Spec.ConsumerRef, &metal3api.HostClaim{}
	if err := r.Claims.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, c, client.UnsafeDisableDeepCopy); err != nil {
		return v, client.IgnoreNotFound(err)
	}
	node := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionNodeReady)
	if string(c.UID) != h.Annotations[hostfleetv1alpha1.AnnotationClaimUID] || node == nil || node.Status == metav1.ConditionTrue {
		return v, nil
	}
	nsLabels, err := r.namespaceLabels(ctx, c.Namespace)
	if err != nil {
		return v, nil // a namespace no longer served: no tenant's policy counts its Node
	}
	p, _, err := r.healingOf(ctx, c, nsLabels)
	if err != nil || !p.Node {
		return v, err
	}
	return nodeVerdict(v, h, c), nil
}

func readyOf(conds []metav1.Condition) metav1.Condition {
	for _, c := range conds {
		if c.Type == hostfleetv1alpha1.ConditionReady {
			return c
		}
	}
	return metav1.Condition{}
}

// tell says in an Event what changed in the claim's health: a failure and
// each step taken about it (Warning), a replacement done (Normal).
func (r *Reconciler) tell(c *metal3api.HostClaim, hl health) {
	d, was := hl.d, hl.current
	if was != nil && was.Reason == d.Reason && was.Status == d.Status {
		return
	}
	switch {
	case d.Status == metav1.ConditionFalse:
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, d.Reason, "Heal", "%s", conditions.EventNote(d.Message))
	case was != nil && was.Reason == hostfleetv1alpha1.ReasonReplacing && d.Reason == hostfleetv1alpha1.ReasonHealthy:
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "HostReplaced", "Heal", "%s", conditions.EventNote(d.Message))
	}
}

// applyQuarantine replaces a fenced host (q, planFor's): the claim
// records the replacement and says so, then the host is released (no
// image, off: erased as at any release) in the write that unbinds it,
// closes its usage interval and quarantines it. The claim is bound to
// another host on its next reconcile, as any unbound claim is. Each write
// is safe to repeat: cut short, the next reconcile resumes it (heal.Next).
func (r *Reconciler) applyQuarantine(ctx context.Context, o observed, q quarantine) (applied, error) {
	c, h := o.claim, o.host
	if r.Fence.Behind(r.hosts.Name, fence.Hosts, h) {
		return applied{wait: true}, nil
	}
	if q.record != nil {
		if err := r.recordReplacement(ctx, c, *q.record); err != nil {
			return applied{}, err
		}
	}
	a := applied{sync: hoststatus.Sync{OK: true}, hw: c.Status.HardwareData}
	// The claim says its host is replaced before the host goes.
	if err := r.writeStatus(ctx, o, a.sync, a.hw); err != nil {
		return applied{}, err
	}
	if err := r.hosts.Apply(ctx, hostspec.Released(h)); err != nil {
		return applied{}, fmt.Errorf("release failed host %s of %s: %w", klog.KObj(h), klog.KObj(c), err)
	}
	fresh := &metal3api.BareMetalHost{}
	if err := r.ManagedReader.Get(ctx, client.ObjectKeyFromObject(h), fresh); err != nil {
		return applied{}, fmt.Errorf("read failed host %s: %w", klog.KObj(h), err)
	}
	if !r.Consumer.Holds(fresh, c) {
		return a, nil // quarantined already
	}
	orig := fresh.DeepCopy()
	r.unbind(ctx, fresh)
	fresh.Annotations[hostfleetv1alpha1.AnnotationQuarantined] = healing.Quarantine{Since: metav1.NewTime(o.now), Claim: c.Namespace + "/" + c.Name,
		ClaimUID: string(c.UID), Reason: q.evidence, Message: q.why, Fenced: q.fenced}.String()
	if err := r.hosts.Patch(ctx, fresh, orig); err != nil {
		return applied{}, fmt.Errorf("quarantine host %s of %s: %w", klog.KObj(h), klog.KObj(c), err)
	}
	metrics.HostReplacements.WithLabelValues(strconv.FormatBool(q.fenced)).Inc()
	r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "HostQuarantined", "Heal",
		"host %s/%s on cluster %s (%s; confirmed off: %t) is quarantined and released; the claim is bound to another host", h.Namespace, h.Name, r.ClusterName, q.evidence, q.fenced)
	ctrl.LoggerFrom(ctx).Info("quarantined a failed host", "host", klog.KObj(h), "evidence", q.evidence, "fenced", q.fenced)
	return a, nil
}

// recordReplacement writes the claim's record of replacements, with its
// resourceVersion.
func (r *Reconciler) recordReplacement(ctx context.Context, c *metal3api.HostClaim, rec healing.Record) error {
	orig := c.DeepCopy()
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[hostfleetv1alpha1.AnnotationReplacements] = rec.String()
	if err := r.Fence.PatchLocked(ctx, r.Claims, r.hosts.Name, fence.Claims, c, orig); err != nil {
		return fmt.Errorf("record the replacement of %s's host: %w", klog.KObj(c), err)
	}
	return nil
}

// letGo drops the agent's finalizer from a hub claim whose failed host it
// replaced and that now waits holding no host (no reservation, every host
// naming it released): nothing is left here to release when it goes, and
// the hub, which never moves a claim an agent keeps, may place it on
// another cluster once its bind deadline passes. A host freed here
// meanwhile is reserved as for any claim, the finalizer with it.
func (r *Reconciler) letGo(ctx context.Context, c *metal3api.HostClaim) error {
	if _, replaced := c.Annotations[hostfleetv1alpha1.AnnotationReplacements]; !replaced || r.local() ||
		!controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.AgentFinalizer) {
		return nil
	}
	orig := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, hostfleetv1alpha1.AgentFinalizer)
	if err := r.Fence.PatchLocked(ctx, r.Claims, r.hosts.Name, fence.Claims, c, orig); err != nil {
		return fmt.Errorf("let %s go to another cluster: %w", klog.KObj(c), err)
	}
	ctrl.LoggerFrom(ctx).Info("no host here replaces the claim's failed one: the hub may place it on another cluster")
	return nil
}
