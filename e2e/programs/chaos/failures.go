package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// replaceFailed gives the tenant a healing policy that replaces a failed
// host after 5 s.
func replaceFailed(ctx context.Context, hub client.Client) error {
	patch := `{"spec":{"healing":{"action":"Replace","grace":"5s"}}}`
	return hub.Patch(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}}, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// failures makes o.HostFailures bound hosts fail, one after another at
// random moments over span, on each plane in turn (so that no plane's
// circuit breaker opens), each as soon as that plane has a bound host. The churn leaves a failed host's claim alone from
// then on. Its BMC answers 500 to every request until the claim's
// HostHealthy says Fencing (the agent gave the host up after the grace and
// powers it off), for at most o.FailFor; then it answers again, and the
// fence lands.
func failures(ctx context.Context, f *planes.Fleet, infras []string, bmcs []*redfish.BMC, ch *churn, o Options, span time.Duration, r *rand.Rand, rep *Report, say func(string, ...any)) {
	for i := 0; i < o.HostFailures; i++ {
		wait := time.Duration(r.Int64N(int64(span/time.Duration(o.HostFailures)))) + time.Second
		if !sleep(ctx, wait) {
			return
		}
		plane := infras[i%len(infras)]
		var h *metal3api.BareMetalHost
		for deadline := time.Now().Add(time.Minute); h == nil && time.Now().Before(deadline) && sleep(ctx, 500*time.Millisecond); {
			h = pickBound(ctx, f.Plane(plane).Client, ch, r)
		}
		if h == nil {
			rep.HostFailures = append(rep.HostFailures, "no bound host on "+plane+" to fail")
			continue
		}
		b := bmcs[hostIndex(h.Name)]
		say("  %s/%s's BMC fails (HTTP 500 to every request); it holds claim %s", plane, h.Name, h.Spec.ConsumerRef.Name)
		start := time.Now()
		b.SetFaults(redfish.Faults{Status: 500})
		outcome := awaitFence(ctx, f.Plane("hub").Client, h, o.FailFor)
		b.SetFaults(redfish.Faults{})
		d := fmt.Sprintf("%s/%s (claim %s): %s after %s", plane, h.Name, h.Spec.ConsumerRef.Name, outcome, time.Since(start).Round(100*time.Millisecond))
		rep.HostFailures = append(rep.HostFailures, d)
		say("  BMC answers again: %s", d)
	}
}

// pickBound picks, at random, a host of a plane that holds a live claim
// (provisioned, or bound without an image), is not quarantined and has no
// error; the churn keeps its claim.
func pickBound(ctx context.Context, c client.Client, ch *churn, r *rand.Rand) *metal3api.BareMetalHost {
	hosts, err := listHosts(ctx, c)
	if err != nil {
		return nil
	}
	var all []metal3api.BareMetalHost
	for _, h := range hosts {
		_, quarantined, _ := healing.QuarantineOf(h.Annotations)
		settled := h.Status.Provisioning.State == metal3api.StateProvisioned || h.Status.Provisioning.State == metal3api.StateAvailable // bound without an image
		if h.Spec.ConsumerRef != nil && settled && h.Status.ErrorType == "" && !quarantined {
			all = append(all, h)
		}
	}
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for i := range all {
		if ch.keep(all[i].Spec.ConsumerRef.Name) {
			return &all[i]
		}
	}
	return nil
}

// awaitFence waits, at most d, until the claim h holds says its host is
// being fenced, or is gone; it says which, or what the claim said last.
func awaitFence(ctx context.Context, hub client.Client, h *metal3api.BareMetalHost, d time.Duration) string {
	uid := types.UID(h.Annotations[hostfleetv1alpha1.AnnotationClaimUID])
	key := client.ObjectKey{Namespace: h.Spec.ConsumerRef.Namespace, Name: h.Spec.ConsumerRef.Name}
	last := "no HostHealthy condition"
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var c metal3api.HostClaim
		err := hub.Get(gctx, key, &c)
		cancel()
		switch {
		case apierrors.IsNotFound(err) || (err == nil && c.UID != uid):
			return "claim deleted"
		case err != nil:
			last = err.Error()
		default:
			if hc := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionHostHealthy); hc != nil {
				if hc.Reason == hostfleetv1alpha1.ReasonFencing {
					return "fencing"
				}
				last = "HostHealthy " + hc.Reason
			}
		}
		if !sleep(ctx, 500*time.Millisecond) {
			break
		}
	}
	return "not fencing (" + last + ")"
}
