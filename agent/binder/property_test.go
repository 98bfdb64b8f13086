package binder_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/inventory"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/scheduler"
)

// world is one cluster as the binder and the scheduler see it: its hosts
// and the claims placed on it, changed by random events.
type world struct {
	r      *rand.Rand
	hosts  []*metal3api.BareMetalHost
	claims []*metal3api.HostClaim
	next   int
	// log is the events so far, for a failure's message.
	log []string
	// moved: the last event changed a host (its labels, marks, state or
	// holder): placement is checked again.
	moved bool
}

var (
	consumer = binder.HubConsumer("hub")
	admitAll = []metal3api.HostDeployPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "p"},
		Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{Names: []string{"tenant-a"}}}}}
	prefixes = []string{"example.com"}
)

const gpu = "example.com/gpu"

func newWorld(seed uint64) *world {
	w := &world{r: rand.New(rand.NewPCG(seed, seed*31+7))}
	for i := range 2 + w.r.IntN(6) {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%d", i), Labels: map[string]string{}, Annotations: map[string]string{}}}
		h.Status.Provisioning.State = metal3api.StateAvailable
		w.hosts = append(w.hosts, h)
	}
	return w
}

// step applies one random event.
func (w *world) step() {
	w.moved = true
	switch n := w.r.IntN(10); {
	case n < 2 || len(w.claims) == 0:
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: fmt.Sprintf("c%d", w.next),
			UID: types.UID(fmt.Sprintf("u%d", w.next)), Annotations: map[string]string{}}}
		w.next++
		if w.r.IntN(2) == 0 {
			c.Spec.HostSelector.MatchLabels = map[string]string{gpu: "yes"}
		}
		if w.r.IntN(3) == 0 {
			c.Annotations[hostfleetv1alpha1.AnnotationTolerations] = "reserved"
		}
		w.claims = append(w.claims, c)
		w.log = append(w.log, "create "+c.Name)
	case n < 3:
		i := w.r.IntN(len(w.claims))
		c := w.claims[i]
		for _, h := range w.hosts {
			if consumer.Holds(h, c) {
				release(h)
			}
		}
		w.claims = append(w.claims[:i], w.claims[i+1:]...)
		w.log = append(w.log, "delete "+c.Name)
	case n < 5:
		h := w.hosts[w.r.IntN(len(w.hosts))]
		switch w.r.IntN(4) {
		case 0:
			toggle(h.Labels, gpu, "yes")
		case 1:
			toggle(h.Annotations, hostfleetv1alpha1.AnnotationTaints, "reserved")
		case 2:
			toggle(h.Annotations, hostfleetv1alpha1.AnnotationMaintenance, "m")
		default:
			if h.Status.Provisioning.State == metal3api.StateAvailable {
				h.Status.Provisioning.State = metal3api.StateInspecting
			} else if h.Status.Provisioning.State == metal3api.StateInspecting {
				h.Status.Provisioning.State = metal3api.StateAvailable
			}
		}
		w.log = append(w.log, "change "+h.Name)
	default:
		w.reconcile(w.claims[w.r.IntN(len(w.claims))])
	}
}

func toggle(m map[string]string, k, v string) {
	if _, ok := m[k]; ok {
		delete(m, k)
	} else {
		m[k] = v
	}
}

func release(h *metal3api.BareMetalHost) {
	h.Spec.ConsumerRef = nil
	delete(h.Annotations, hostfleetv1alpha1.AnnotationClaimUID)
	delete(h.Annotations, hostfleetv1alpha1.AnnotationHub)
	h.Status.Provisioning.State = metal3api.StateAvailable
}

// reconcile decides for c and applies the decision, as the agent does.
func (w *world) reconcile(c *metal3api.HostClaim) {
	in := binder.Input{Consumer: consumer, Claim: c, Policies: admitAll, Hosts: w.hosts, Reserved: binder.Reservation(c)}
	d := binder.Decide(in)
	w.moved = len(d.Strays) > 0 || d.Action == binder.Bind
	for _, s := range d.Strays {
		release(s)
	}
	switch d.Action {
	case binder.Reserve:
		c.Annotations[hostfleetv1alpha1.AnnotationReservedHost] = binder.ReservationValue(d.Host)
	case binder.Bind:
		d.Host.Spec.ConsumerRef = consumer.Ref(c)
		for k, v := range consumer.Annotations(c) {
			d.Host.Annotations[k] = v
		}
		d.Host.Status.Provisioning.State = metal3api.StateProvisioned
	case binder.Wait:
		if !d.KeepReservation {
			delete(c.Annotations, hostfleetv1alpha1.AnnotationReservedHost)
		}
	}
	w.log = append(w.log, fmt.Sprintf("reconcile %s: %s", c.Name, d.Action))
}

// check is the invariants: every host holds at most one claim, every claim
// at most one host once reconciled, no claim holds a host it does not
// tolerate unless the taint came after, and placement agrees with binding.
func (w *world) check() error {
	for _, c := range w.claims {
		held := 0
		for _, h := range w.hosts {
			if consumer.Holds(h, c) {
				held++
			}
		}
		if held > 1 {
			return fmt.Errorf("claim %s holds %d hosts", c.Name, held)
		}
	}
	for _, h := range w.hosts {
		if ref := h.Spec.ConsumerRef; ref != nil && !w.exists(ref.Name) {
			return fmt.Errorf("host %s is held by %s, which is gone", h.Name, ref.Name)
		}
	}
	if !w.moved {
		return nil
	}
	return w.placementAgrees()
}

func (w *world) exists(name string) bool {
	for _, c := range w.claims {
		if c.Name == name {
			return true
		}
	}
	return false
}

// placementAgrees: for a new claim, the scheduler places it on the cluster
// (from the inventory the agent would publish) exactly when the binder
// would reserve a host for it, no claim pending.
func (w *world) placementAgrees() error {
	hosts := make([]metal3api.BareMetalHost, len(w.hosts))
	for i, h := range w.hosts {
		hosts[i] = *h
	}
	inv := &hostfleetv1alpha1.HostInventory{Status: inventory.Build(inventory.Input{Hosts: hosts, Policies: admitAll,
		Namespaces: []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}}}, Prefixes: prefixes})}
	for _, sel := range []map[string]string{nil, {gpu: "yes"}} {
		for _, tol := range []string{"", "reserved"} {
			c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "probe", UID: "probe",
				Annotations: map[string]string{hostfleetv1alpha1.AnnotationTolerations: tol}}}
			c.Spec.HostSelector.MatchLabels = sel
			placed := scheduler.Place(scheduler.Input{Claim: c, Clusters: []string{"c1"}, Prefixes: prefixes,
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"c1": inv}}).Cluster == "c1"
			d := binder.Decide(binder.Input{Consumer: consumer, Claim: c, Policies: admitAll, Hosts: w.hosts})
			if placed != (d.Action == binder.Reserve) {
				return fmt.Errorf("a claim selecting %v tolerating %q: placed %t, binder %s (%s)", sel, tol, placed, d.Action, d.Message)
			}
		}
	}
	return nil
}

// TestBindingAndPlacementProperties drives 10 000 random sequences of
// claim, host and spec events through the binder and the scheduler and
// checks the invariants after each event.
func TestBindingAndPlacementProperties(t *testing.T) {
	sequences, events := 10_000, 30
	if testing.Short() {
		sequences = 500
	}
	for s := range sequences {
		w := newWorld(uint64(s))
		for range events {
			w.step()
			if err := w.check(); err != nil {
				t.Fatalf("sequence %d, after %v: %v", s, w.log, err)
			}
		}
	}
}
