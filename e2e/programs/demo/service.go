package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/kubectl"
)

// service shows the service side (docs/service.md): a host class full
// holds a claim back until one of its claims goes, and a lease is warned
// and ends.
func (r *run) service(ctx context.Context) error {
	t := &hostfleetv1alpha1.Tenant{}
	if err := r.hub.Get(ctx, client.ObjectKey{Name: "acme"}, t); err != nil {
		return err
	}
	// A merge patch of the fields the demo sets: the tenant controller
	// writes the Tenant too (its finalizer, its status), and an update
	// from this read would lose to it.
	orig := t.DeepCopy()
	t.Spec.MaxClaims = ptr.To[int32](7)
	t.Spec.LeaseWarning = &metav1.Duration{Duration: 20 * time.Second}
	t.Spec.Quotas = []hostfleetv1alpha1.ClassQuota{{Name: "large", MaxClaims: 2,
		HostSelector: hostfleetv1alpha1.ClassSelector{MatchLabels: map[string]string{"example.com/size": "large"}}}}
	if err := r.hub.Patch(ctx, t, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("give tenant acme a host class: %w", err)
	}
	r.say("Tenant acme gets host class large (example.com/size=large) with maxClaims 2, which db-1 and edge-fwd fill,")
	r.say("and a lease warning of 20 s.")
	held := r.claim("big-3", map[string]string{"example.com/size": "large"}, nil)
	if err := r.create(ctx, held); err != nil {
		return err
	}
	if err := r.waitClaim(ctx, held, func(c *metal3api.HostClaim) bool {
		if c == nil {
			return false
		}
		ready := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionReady)
		return ready != nil && ready.Reason == hostfleetv1alpha1.ReasonClassQuotaExceeded
	}); err != nil {
		return fmt.Errorf("big-3 not held back by class large: %w", err)
	}
	ready := meta.FindStatusCondition(held.Status.Conditions, hostfleetv1alpha1.ConditionReady)
	r.say("  big-3 (a large host) is held back: Ready=False %s:\n  %q", ready.Reason, ready.Message)

	short := r.claim("short", nil, map[string]string{hostfleetv1alpha1.AnnotationLeaseFor: "30s"})
	if err := r.create(ctx, short); err != nil {
		return err
	}
	r.say("short, a claim leased for 30 s (hostfleet.io/lease-for):")
	for _, reason := range []string{hostfleetv1alpha1.ReasonLeaseEnding, hostfleetv1alpha1.ReasonLeaseEnded} {
		gone := false
		if err := r.waitClaim(ctx, short, func(c *metal3api.HostClaim) bool {
			if c == nil {
				gone = true
				return true
			}
			x := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionLeaseExpiring)
			return x != nil && x.Reason == reason
		}); err != nil {
			return fmt.Errorf("short's lease not %s: %w", reason, err)
		}
		if gone {
			r.say("  the lease ended at %s: the hub deleted the claim, already gone", short.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil])
			return r.placedOnceGone(ctx, held)
		}
		x := meta.FindStatusCondition(short.Status.Conditions, hostfleetv1alpha1.ConditionLeaseExpiring)
		r.say("  LeaseExpiring=%s %s: %q", x.Status, x.Reason, x.Message)
	}
	r.say("  the hub deleted it (hostfleet.io/released-by: %s); its host is released as for any deletion", short.Annotations[hostfleetv1alpha1.AnnotationReleasedBy])
	return r.placedOnceGone(ctx, held)
}

// placedOnceGone deletes edge-fwd, a claim of class large, and waits for
// held to be placed.
func (r *run) placedOnceGone(ctx context.Context, held *metal3api.HostClaim) error {

	if err := r.hub.Delete(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "edge-fwd"}}); client.IgnoreNotFound(err) != nil {
		return err
	}
	start := time.Now()
	if err := r.waitClaim(ctx, held, func(c *metal3api.HostClaim) bool { return c != nil && c.Labels[hostfleetv1alpha1.LabelCluster] != "" }); err != nil {
		return fmt.Errorf("big-3 not placed once edge-fwd went: %w", err)
	}
	r.say("edge-fwd deleted: once it is gone the class has room, and big-3 is placed on %s (%s later)", held.Labels[hostfleetv1alpha1.LabelCluster],
		time.Since(start).Round(100*time.Millisecond))
	return nil
}

// hardwareAsked shows a claim asking for hardware no free host has: the
// scheduler names, per cluster, the closest hardware and what it lacks,
// and so does `kubectl hostfleet why` (once the inventories show a free
// host: server-0, back from its maintenance). Then a claim whose hardware
// server-0 has is placed and bound by it.
func (r *run) hardwareAsked(ctx context.Context) error {
	if err := r.hardwareRefused(ctx); err != nil {
		return err
	}
	const expr = `host.gpus.exists(g, g.model.startsWith("H100"))`
	c := r.claim("gpu-1", nil, map[string]string{hostfleetv1alpha1.AnnotationHardware: expr})
	if err := r.create(ctx, c); err != nil {
		return err
	}
	if err := r.waitClaim(ctx, c, func(c *metal3api.HostClaim) bool {
		s := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
		return s != nil && s.Reason == hostfleetv1alpha1.ReasonNoCapacity && strings.Contains(s.Message, "hardware asked")
	}); err != nil {
		return fmt.Errorf("gpu-1 not told why it waits: %w", err)
	}
	s := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
	r.say("gpu-1 asks for an H100 (hostfleet.io/hardware: %s): Scheduled=False %s:\n  %q", expr, s.Reason, s.Message)
	args := []string{"why", "gpu-1", "-n", "tenant-acme", "--events", "0", "--kubeconfig=" + r.f.Plane("hub").Kubeconfig}
	r.say("$ kubectl hostfleet %s", strings.Join(args[:6], " "))
	if err := kubectl.Main(ctx, args, r.o.Out); err != nil {
		return fmt.Errorf("kubectl hostfleet why gpu-1: %w", err)
	}
	if err := r.hub.Delete(ctx, c); client.IgnoreNotFound(err) != nil {
		return err
	}
	r.say("  gpu-1 deleted.")
	return r.hardwarePlaced(ctx)
}

// hardwareRefused shows a requirement that does not compile refused when
// the claim is created, by the hub's webhook, with what to fix.
func (r *run) hardwareRefused(ctx context.Context) error {
	const typo = `host.gpu.exists(g, g.model.startsWith("H100"))`
	var refusal error
	if err := poll(ctx, r.o.Timeout, func() (bool, error) {
		err := r.hub.Create(ctx, r.claim("gpu-typo", nil, map[string]string{hostfleetv1alpha1.AnnotationHardware: typo}), client.DryRunAll)
		if err == nil {
			return false, errors.New("admitted: the hub's webhook is not registered yet")
		}
		refusal = err
		return strings.Contains(err.Error(), "denied the request"), nil
	}); err != nil {
		return fmt.Errorf("gpu-typo not refused at admission: %w", err)
	}
	r.say("gpu-typo asks for %s, and is refused when created:\n  %s", typo, refusal)
	return nil
}

// hardwarePlaced shows a claim placed and bound by its hardware: 32 cores
// and a 10 Gb/s NIC, which server-0 of infra-3 has.
func (r *run) hardwarePlaced(ctx context.Context) error {
	const expr = `host.cpu.count >= 32 && host.nics.exists(n, n.speedGbps >= 10)`
	c := r.claim("cpu-32", nil, map[string]string{hostfleetv1alpha1.AnnotationHardware: expr})
	if err := r.create(ctx, c); err != nil {
		return err
	}
	if err := r.waitClaim(ctx, c, func(c *metal3api.HostClaim) bool { return c != nil && c.Status.BareMetalHost != nil }); err != nil {
		return fmt.Errorf("cpu-32 not bound: %w", err)
	}
	r.say("cpu-32 asks for %s: placed on %s, bound to %s/%s", expr, c.Labels[hostfleetv1alpha1.LabelCluster],
		c.Status.BareMetalHost.Namespace, c.Status.BareMetalHost.Name)
	if err := r.hub.Delete(ctx, c); client.IgnoreNotFound(err) != nil {
		return err
	}
	r.say("  cpu-32 deleted.")
	return nil
}

// claim is a claim of tenant acme, powered on, selecting labels.
func (r *run) claim(name string, sel, ann map[string]string) *metal3api.HostClaim {
	return &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: name, Annotations: ann},
		Spec: metal3api.HostClaimSpec{PoweredOn: true, HostSelector: metal3api.HostSelector{MatchLabels: sel}}}
}

// create makes a claim, again while the quota has not yet counted a
// deletion.
func (r *run) create(ctx context.Context, c *metal3api.HostClaim) error {
	if err := poll(ctx, r.o.Timeout, func() (bool, error) {
		err := create(ctx, r.hub, c.DeepCopy())
		return err == nil, err
	}); err != nil {
		return fmt.Errorf("create %s: %w", c.Name, err)
	}
	return nil
}

// waitClaim reads c until cond holds; c keeps the last read. A claim gone
// is cond(nil), c keeping the read before.
func (r *run) waitClaim(ctx context.Context, c *metal3api.HostClaim, cond func(*metal3api.HostClaim) bool) error {
	return poll(ctx, r.o.Timeout, func() (bool, error) {
		fresh := &metal3api.HostClaim{}
		if err := r.hub.Get(ctx, client.ObjectKeyFromObject(c), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				return cond(nil), nil
			}
			return false, err
		}
		*c = *fresh
		return cond(c), nil
	})
}
