package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Check is what the API servers say at one moment.
type Check struct {
	Claims, Bound, Waiting, Deleting int
	// Moved are claims whose host was replaced on one cluster and that
	// the hub placed on another, none being free there.
	Moved int
	// Quarantined hosts are neither held nor free.
	Hosts, Held, Free, Quarantined int
	// Unsettled counts live claims not at rest: bound and not Ready (a
	// power change or provisioning under way), or without a host and not
	// saying why (Ready, or before placement Scheduled, False with a
	// message).
	Unsettled int
	// Violations break an invariant; each says which and where.
	Violations []string
	// Repeats are power commands a BMC got that found its system where
	// they lead: sent twice. They are never undone.
	Repeats []string
}

// Converged: no invariant broken, nothing being deleted or settling, and
// no claim waiting while a host is free (a claim whose host was replaced
// too: the hub moves it to another cluster past its bind deadline).
func (c Check) Converged() bool {
	return len(c.Violations) == 0 && len(c.Repeats) == 0 && c.Deleting == 0 && c.Unsettled == 0 && (c.Waiting == 0 || c.Free == 0)
}

func (c Check) String() string {
	s := fmt.Sprintf("%d claims (%d bound and Ready, %d waiting for a host, %d moved after a replacement, %d being deleted, %d settling), %d hosts (%d held, %d free, %d quarantined), %d violations",
		c.Claims, c.Bound, c.Waiting, c.Moved, c.Deleting, c.Unsettled, c.Hosts, c.Held, c.Free, c.Quarantined, len(c.Violations)+len(c.Repeats))
	if v := append(c.Violations, c.Repeats...); len(v) > 0 {
		s += ": " + strings.Join(v[:min(len(v), 5)], "; ")
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
//   - every live claim is Ready or says why not;
//
// and, from the BMCs (host-N's is bmcs[N]), that no free or quarantined
// host is powered on, no free host keeps a BMC account a tenant added, and
// no BMC got a power command twice.
func check(ctx context.Context, f *planes.Fleet, infras []string, bmcs []*redfish.BMC) (Check, error) {
	clusters := map[string]client.Client{}
	for _, name := range infras {
		clusters[name] = f.Plane(name).Client
	}
	k, err := invariants(ctx, f.Plane("hub").Client, tenantNS, clusters)
	if err != nil {
		return k.Check, err
	}
	for key, h := range k.hosts { // plane/namespace/name
		var n int
		if _, err := fmt.Sscanf(h.Name, "host-%d", &n); err != nil || n >= len(bmcs) {
			continue
		}
		plane, _, _ := strings.Cut(key, "/")
		_, quarantined := h.Annotations[hostfleetv1alpha1.AnnotationQuarantined]
		switch power := bmcs[n].Power(); {
		case free(h) && power != "Off":
			k.violate("host %s/%s is free while its BMC has it %s", plane, h.Name, power)
		case quarantined && power != "Off":
			k.violate("host %s/%s is quarantined while its BMC has it %s", plane, h.Name, power)
		}
		if extra := extraAccounts(bmcs)(h.Name); free(h) && len(extra) > 0 {
			k.violate("host %s/%s is free with BMC accounts %v its tenants left", plane, h.Name, extra)
		}
		for _, r := range bmcs[n].Repeats() {
			k.Repeats = append(k.Repeats, fmt.Sprintf("host %s/%s: %s", plane, h.Name, r))
		}
	}
	return k.Check, nil
}

// free: the host is available to a new claim.
func free(h *metal3api.BareMetalHost) bool {
	_, quarantined := h.Annotations[hostfleetv1alpha1.AnnotationQuarantined]
	return h.Spec.ConsumerRef == nil && h.Status.Provisioning.State == metal3api.StateAvailable && h.Status.ErrorType == "" && !quarantined
}

// Invariants checks what check does on any fleet: the hub's claims in a
// tenant namespace, and the hosts (namespace hosts) and secret copies of
// each infrastructure cluster, by name. The upgrade scenarios and the
// agent's leader election test end with it.
func Invariants(ctx context.Context, hub client.Client, namespace string, infras map[string]client.Client) (Check, error) {
	k, err := invariants(ctx, hub, namespace, infras)
	return k.Check, err
}

// invariants checks, and returns the checker with the hosts it read.
func invariants(ctx context.Context, hub client.Client, namespace string, infras map[string]client.Client) (*checker, error) {
	k := &checker{byUID: map[types.UID]*metal3api.HostClaim{}, held: map[types.UID]int{}, hosts: map[string]*metal3api.BareMetalHost{}}
	var claims metal3api.HostClaimList
	if err := hub.List(ctx, &claims, client.InNamespace(namespace)); err != nil {
		return k, err
	}
	for i := range claims.Items {
		k.byUID[claims.Items[i].UID] = &claims.Items[i]
	}
	for plane, pc := range infras {
		hosts, err := listHosts(ctx, pc)
		if err != nil {
			return k, err
		}
		for i := range hosts {
			k.host(plane, &hosts[i])
		}
		var copies corev1.SecretList
		if err := pc.List(ctx, &copies, client.HasLabels{hostfleetv1alpha1.LabelClaimUID}); err != nil {
			return k, err
		}
		for _, s := range copies.Items {
			if k.byUID[types.UID(s.Labels[hostfleetv1alpha1.LabelClaimUID])] == nil {
				k.violate("secret copy %s/%s/%s outlives its claim", plane, s.Namespace, s.Name)
			}
		}
	}
	var hw metal3api.HardwareDataList
	if err := hub.List(ctx, &hw, client.InNamespace(namespace)); err != nil {
		return k, err
	}
	for _, d := range hw.Items {
		if uid, ok := d.Labels[hostfleetv1alpha1.LabelClaimUID]; ok && k.byUID[types.UID(uid)] == nil {
			k.violate("HardwareData copy %s outlives its claim", d.Name)
		}
	}
	for i := range claims.Items {
		k.claim(&claims.Items[i])
	}
	return k, nil
}

// checker is one check under way: the counts and violations so far, the
// claims by UID, the hosts read (by plane/namespace/name) and how many
// hosts each claim holds.
type checker struct {
	Check
	byUID map[types.UID]*metal3api.HostClaim
	held  map[types.UID]int
	hosts map[string]*metal3api.BareMetalHost
}

func (k *checker) violate(format string, a ...any) {
	k.Violations = append(k.Violations, fmt.Sprintf(format, a...))
}

// host counts a host of plane, free or held, and checks that the claim it
// holds exists, is placed on plane, names it back and holds no other.
func (k *checker) host(plane string, h *metal3api.BareMetalHost) {
	k.hosts[plane+"/"+h.Namespace+"/"+h.Name] = h
	k.Hosts++
	if _, ok := h.Annotations[hostfleetv1alpha1.AnnotationQuarantined]; ok {
		k.Quarantined++
	}
	ref := h.Spec.ConsumerRef
	if ref == nil {
		if free(h) {
			k.Free++
		}
		return
	}
	k.Held++
	uid := types.UID(h.Annotations[hostfleetv1alpha1.AnnotationClaimUID])
	claim := k.byUID[uid]
	switch {
	case claim == nil:
		k.violate("host %s/%s holds claim %s/%s (uid %q), which does not exist", plane, h.Name, ref.Namespace, ref.Name, uid)
		return
	case claim.Name != ref.Name || claim.Namespace != ref.Namespace:
		k.violate("host %s/%s: consumerRef %s/%s but claim uid %s is %s", plane, h.Name, ref.Namespace, ref.Name, uid, claim.Name)
	case claim.Labels[hostfleetv1alpha1.LabelCluster] != plane:
		k.violate("host %s/%s holds claim %s, which is placed on %q", plane, h.Name, claim.Name, claim.Labels[hostfleetv1alpha1.LabelCluster])
	case claim.Status.BareMetalHost == nil || claim.Status.BareMetalHost.Name != h.Name:
		// The claim's status follows its host's binding: at rest it
		// names it.
		k.violate("host %s/%s holds claim %s, whose status names %v", plane, h.Name, claim.Name, claim.Status.BareMetalHost)
	}
	k.held[uid]++
	if k.held[uid] == 2 {
		k.violate("claim %s holds two hosts or more", claim.Name)
	}
}

// claim counts a claim as deleting, bound, waiting with a reason or not
// settled, and checks that the host it names exists and names it back.
func (k *checker) claim(cl *metal3api.HostClaim) {
	k.Claims++
	if rec, err := healing.RecordOf(cl.Annotations, time.Now()); err == nil {
		if last, ok := rec.Last(); ok && last.Cluster != "" && last.Cluster != cl.Labels[hostfleetv1alpha1.LabelCluster] {
			k.Moved++
		}
	}
	if cl.DeletionTimestamp != nil {
		k.Deleting++
		return
	}
	ok, why := ready(cl.Status.Conditions, cl.Generation)
	if b := cl.Status.BareMetalHost; b != nil {
		h := k.hosts[cl.Labels[hostfleetv1alpha1.LabelCluster]+"/"+b.Namespace+"/"+b.Name]
		switch {
		case h == nil:
			k.violate("claim %s names host %s/%s on %q, which does not exist", cl.Name, b.Namespace, b.Name, cl.Labels[hostfleetv1alpha1.LabelCluster])
		case h.Spec.ConsumerRef == nil || h.Annotations[hostfleetv1alpha1.AnnotationClaimUID] != string(cl.UID):
			k.violate("claim %s names host %s/%s, which does not name it back", cl.Name, b.Namespace, b.Name)
		}
		if ok {
			k.Bound++
		} else {
			k.Unsettled++
		}
		return
	}
	// Without a host: waiting, saying why — the agent's Ready (no free
	// host matches) or, before a cluster took it, the scheduler's
	// Scheduled (no cluster has a free host).
	sched := meta.FindStatusCondition(cl.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
	r := meta.FindStatusCondition(cl.Status.Conditions, hostfleetv1alpha1.ConditionReady)
	switch {
	case ok:
		k.Unsettled++ // Ready without a host: not at rest
	case why != "no Ready condition" && why != "Ready not current" && r.Message != "":
		k.Waiting++
	case sched != nil && sched.Status == metav1.ConditionFalse && sched.Message != "":
		k.Waiting++
	default:
		k.Unsettled++ // not said yet
	}
}
