package claim

import (
	"context"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/heal"
	"github.com/hostfleet/hostfleet/agent/hoststatus"
	"github.com/hostfleet/hostfleet/agent/metrics"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/requeue"
)

// keep serves a claim bound to h in five steps, each in one place:
//
//	read    what the claim, its host, their copies and its healing policy are
//	judge   how the host is, and the healing step it calls for (heal.Next)
//	plan    what the claim, the host and their copies should be (planFor, pure):
//	        a fence powers the host off, a replacement quarantines it
//	apply   the plan's writes, in order, at the safety fences
//	report  the claim's status, made in one place (statusOf), Events, and
//	        when to look again
//
// A paused claim takes the same steps, its plan writing nothing on the host.
func (r *Reconciler) keep(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost, in binder.Input, prefixes []string) (ctrl.Result, error) {
	o, err := r.read(ctx, c, h, in, prefixes)
	if err != nil {
		return ctrl.Result{}, err
	}
	if o.health, err = r.judge(ctx, o); err != nil {
		return ctrl.Result{}, err
	}
	p := planFor(o, r.Consumer, r.ClusterName)
	a, err := r.apply(ctx, o, p)
	if err != nil {
		return requeue.OnConflict(err)
	}
	return r.report(ctx, o, p, a)
}

// read reads what a claim bound to h is judged and planned from: besides
// what the binding decision read (in), the claim's data secrets and its
// healing policy.
func (r *Reconciler) read(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost, in binder.Input, prefixes []string) (observed, error) {
	by, paused := conditions.PausedBy(c.Annotations)
	o := observed{claim: c, host: h, prefixes: prefixes, pausedBy: by, paused: paused, detach: binder.DetachAllowed(in, h), now: time.Now()}
	ns, uid := r.usageOf(c)
	o.usageNS, o.usageClaim = ns, string(uid)
	var err error
	if o.refs, o.secrets, o.failed, err = r.readSpec(ctx, c); err != nil {
		return o, err
	}
	o.policy, o.policyErr, err = r.healingOf(ctx, c, in.NamespaceLabels)
	return o, err
}

// applied is what the writes of a plan leave for the report.
type applied struct {
	// sync is the Synchronized outcome; hw the HardwareData the claim
	// references.
	sync hoststatus.Sync
	hw   *metal3api.ObjectReference
	// wait: the cache is behind the agent's own writes, or the host was
	// quarantined already; nothing more is written now.
	wait bool
}

// apply writes a claim's plan at the safety fences, in order: the claim's
// metadata (its reservation and the agent's finalizer), the host's
// consumerRef and usage marks, the claim's HardwareData copy, the
// confirmation of the binding in the claim's status, and only then the
// host's secrets and spec, and a reboot. A replacement writes its own
// steps instead (applyQuarantine).
func (r *Reconciler) apply(ctx context.Context, o observed, p plan) (applied, error) {
	if p.quarantine != nil {
		return r.applyQuarantine(ctx, o, *p.quarantine)
	}
	c, h := o.claim, o.host
	if p.meta {
		if err := r.syncMeta(ctx, c, h, o.prefixes); err != nil {
			return applied{}, err
		}
	}
	if p.migrate {
		if err := r.migrate(ctx, c, h); err != nil {
			return applied{}, err
		}
	}
	if p.openUsage {
		if err := r.openUsage(ctx, c, h, o.usageNS, types.UID(o.usageClaim)); err != nil {
			return applied{}, err
		}
	}
	r.warnOtherController(c, h)
	hw, err := r.syncHardware(ctx, c, h)
	if err != nil {
		return applied{}, err
	}
	if p.confirm {
		// The confirmation carries every condition, its health too: with
		// nothing to write on the host, the claim's last write.
		if err := r.writeStatus(ctx, o, p.pending, hw); err != nil {
			return applied{}, err
		}
		metrics.BindLatency.Observe(time.Since(c.CreationTimestamp.Time).Seconds())
	}
	a := applied{sync: p.sync, hw: hw}
	if p.spec != nil {
		if a.sync, err = r.applyHost(ctx, c, h, p.spec); err != nil {
			return applied{}, err
		}
	}
	if p.reboot {
		if err := r.forwardReboot(ctx, c, h); err != nil {
			return applied{}, err
		}
	}
	return a, nil
}

// report says how the claim stands: an Event for each change of its
// health, its status (one write, none when nothing changed), and when to
// look again: hub secrets are read, not watched, so now and then, or when
// the host's health is due to be judged again.
func (r *Reconciler) report(ctx context.Context, o observed, p plan, a applied) (ctrl.Result, error) {
	if a.wait {
		return ctrl.Result{RequeueAfter: requeue.CacheLag}, nil
	}
	r.tell(o.claim, o.health)
	if err := r.writeStatus(ctx, o, a.sync, a.hw); err != nil {
		return requeue.OnConflict(err)
	}
	if p.quarantine != nil {
		// The claim is bound to another host on its next reconcile.
		return ctrl.Result{RequeueAfter: requeue.CacheLag}, nil
	}
	after := r.Resync
	if d := o.health.d.After; d > 0 && d < after {
		after = d
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// writeStatus writes the claim's status as statusOf makes it, with sync as
// its Synchronized outcome and hw as its HardwareData.
func (r *Reconciler) writeStatus(ctx context.Context, o observed, sync hoststatus.Sync, hw *metal3api.ObjectReference) error {
	assoc, conds := statusOf(o, sync, r.ClusterName)
	return r.setStatus(ctx, o.claim, o.host, hw, assoc, conds)
}

// statusOf is the one place a bound claim's conditions are made (pure):
// Associated with its host, the host's conditions with sync as
// Synchronized (hoststatus.Conditions), HostHealthy as judged and, while
// the host is fenced or replaced, Ready saying so.
func statusOf(o observed, sync hoststatus.Sync, cluster string) (metav1.Condition, []metav1.Condition) {
	c, d := o.claim, o.health.d
	conds := hoststatus.Conditions(c, o.host, sync)
	hc := metav1.Condition{Type: hostfleetv1alpha1.ConditionHostHealthy, Status: d.Status, Reason: d.Reason, Message: d.Message, ObservedGeneration: c.Generation}
	if d.Restart {
		hc.LastTransitionTime = metav1.Now()
	}
	conds = append(conds, hc)
	switch d.Reason {
	case hostfleetv1alpha1.ReasonFencing, hostfleetv1alpha1.ReasonFenceUnconfirmed, hostfleetv1alpha1.ReasonReplacing:
		for i := range conds {
			if conds[i].Type == hostfleetv1alpha1.ConditionReady {
				conds[i].Status, conds[i].Reason, conds[i].Message = metav1.ConditionFalse, hostfleetv1alpha1.ReasonReplacing, d.Message
			}
		}
	}
	return boundCondition(c, o.host, cluster), conds
}

// fenced says whether the judged step keeps the host off, whatever the
// claim asks: a fence begun or awaited.
func (hl health) fenced() bool { return hl.d.Step == heal.Fence || hl.d.Step == heal.AwaitFence }
