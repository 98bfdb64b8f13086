package chaos

import (
	"context"
	"fmt"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Check is what the API servers say at one moment.
type Check struct {
	Claims, Bound, Waiting, Deleting int
	Hosts, Held, Free                int
	// Unsettled counts live claims not at rest: bound and not Ready (a
	// power change or provisioning under way), or without a host and not
	// saying why (Ready, or before placement Scheduled, False with a
	// message).
	Unsettled int
	// Violations break an invariant; each says which and where.
	Violations []string
}

// Converged: no invariant broken, nothing being deleted or settling, and
// no claim waiting while a host is free.
func (c Check) Converged() bool {
	return len(c.Violations) == 0 && c.Deleting == 0 && c.Unsettled == 0 && (c.Waiting == 0 || c.Free == 0)
}

func (c Check) String() string {
	s := fmt.Sprintf("%d claims (%d bound and Ready, %d waiting for a host, %d being deleted, %d settling), %d hosts (%d held, %d free), %d violations",
		c.Claims, c.Bound, c.Waiting, c.Deleting, c.Unsettled, c.Hosts, c.Held, c.Free, len(c.Violations))
	if n := len(c.Violations); n > 0 {
		s += ": " + strings.Join(c.Violations[:min(n, 5)], "; ")
	}
	return s
}

// check reads every claim, host, secret copy and HardwareData copy, and
// checks the invariants:
//   - every host's consumerRef names exactly one live claim (by UID), which
//     names the host back;
//   - every bound claim names a host, on its cluster, that names it back;
//   - no claim holds two hosts;
//   - no secret copy or HardwareData copy outlives its claim;
//   - every live claim is Ready or says why not.
func check(ctx context.Context, f *planes.Fleet, infras []string) (Check, error) {
	var c Check
	hub := f.Plane("hub").Client
	var claims metal3api.HostClaimList
	if err := hub.List(ctx, &claims, client.InNamespace(tenantNS)); err != nil {
		return c, err
	}
	byUID := map[types.UID]*metal3api.HostClaim{}
	for i := range claims.Items {
		byUID[claims.Items[i].UID] = &claims.Items[i]
	}
	violate := func(format string, a ...any) { c.Violations = append(c.Violations, fmt.Sprintf(format, a...)) }

	held := map[types.UID]int{}
	hostsByKey := map[string]*metal3api.BareMetalHost{}
	for _, plane := range infras {
		pc := f.Plane(plane).Client
		hosts, err := listHosts(ctx, pc)
		if err != nil {
			return c, err
		}
		for i := range hosts {
			h := &hosts[i]
			hostsByKey[plane+"/"+h.Namespace+"/"+h.Name] = h
			c.Hosts++
			ref := h.Spec.ConsumerRef
			if ref == nil {
				if h.Status.Provisioning.State == metal3api.StateAvailable && h.Status.ErrorType == "" {
					c.Free++
				}
				continue
			}
			c.Held++
			uid := types.UID(h.Annotations[hostfleetv1alpha1.AnnotationClaimUID])
			claim := byUID[uid]
			switch {
			case claim == nil:
				violate("host %s/%s holds claim %s/%s (uid %q), which does not exist", plane, h.Name, ref.Namespace, ref.Name, uid)
				continue
			case claim.Name != ref.Name || claim.Namespace != ref.Namespace:
				violate("host %s/%s: consumerRef %s/%s but claim uid %s is %s", plane, h.Name, ref.Namespace, ref.Name, uid, claim.Name)
			case claim.Labels[hostfleetv1alpha1.LabelCluster] != plane:
				violate("host %s/%s holds claim %s, which is placed on %q", plane, h.Name, claim.Name, claim.Labels[hostfleetv1alpha1.LabelCluster])
			case claim.Status.BareMetalHost == nil || claim.Status.BareMetalHost.Name != h.Name:
				// The claim's status follows its host's binding: at rest
				// it names it.
				violate("host %s/%s holds claim %s, whose status names %v", plane, h.Name, claim.Name, claim.Status.BareMetalHost)
			}
			held[uid]++
			if held[uid] == 2 {
				violate("claim %s holds two hosts or more", claim.Name)
			}
		}
		var copies corev1.SecretList
		if err := pc.List(ctx, &copies, client.HasLabels{hostfleetv1alpha1.LabelClaimUID}); err != nil {
			return c, err
		}
		for _, s := range copies.Items {
			if byUID[types.UID(s.Labels[hostfleetv1alpha1.LabelClaimUID])] == nil {
				violate("secret copy %s/%s/%s outlives its claim", plane, s.Namespace, s.Name)
			}
		}
	}
	var hw metal3api.HardwareDataList
	if err := hub.List(ctx, &hw, client.InNamespace(tenantNS)); err != nil {
		return c, err
	}
	for _, d := range hw.Items {
		if uid, ok := d.Labels[hostfleetv1alpha1.LabelClaimUID]; ok && byUID[types.UID(uid)] == nil {
			violate("HardwareData copy %s outlives its claim", d.Name)
		}
	}

	for i := range claims.Items {
		cl := &claims.Items[i]
		c.Claims++
		if cl.DeletionTimestamp != nil {
			c.Deleting++
			continue
		}
		ok, why := ready(cl.Status.Conditions, cl.Generation)
		if b := cl.Status.BareMetalHost; b != nil {
			h := hostsByKey[cl.Labels[hostfleetv1alpha1.LabelCluster]+"/"+b.Namespace+"/"+b.Name]
			switch {
			case h == nil:
				violate("claim %s names host %s/%s on %q, which does not exist", cl.Name, b.Namespace, b.Name, cl.Labels[hostfleetv1alpha1.LabelCluster])
			case h.Spec.ConsumerRef == nil || h.Annotations[hostfleetv1alpha1.AnnotationClaimUID] != string(cl.UID):
				violate("claim %s names host %s/%s, which does not name it back", cl.Name, b.Namespace, b.Name)
			}
			if ok {
				c.Bound++
			} else {
				c.Unsettled++
			}
			continue
		}
		// Without a host: waiting, saying why — the agent's Ready (no free
		// host matches) or, before a cluster took it, the scheduler's
		// Scheduled (no cluster has a free host).
		sched := meta.FindStatusCondition(cl.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
		r := meta.FindStatusCondition(cl.Status.Conditions, hostfleetv1alpha1.ConditionReady)
		switch {
		case ok:
			c.Unsettled++ // Ready without a host: not at rest
		case why != "no Ready condition" && why != "Ready not current" && r.Message != "":
			c.Waiting++
		case sched != nil && sched.Status == metav1.ConditionFalse && sched.Message != "":
			c.Waiting++
		default:
			c.Unsettled++ // not said yet
		}
	}
	return c, nil
}
