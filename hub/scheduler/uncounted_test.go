package scheduler

import (
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestUncounted: a claim bound after its cluster's inventory was written
// still takes one of the hosts the inventory counts as available (the scale
// benchmark found clusters given more claims than hosts when bound claims
// stopped counting at once).
func TestUncounted(t *testing.T) {
	g := NewWithT(t)
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC)) }
	inv := func(s int) *hostfleetv1alpha1.HostInventory {
		t := at(s)
		return &hostfleetv1alpha1.HostInventory{Status: hostfleetv1alpha1.HostInventoryStatus{LastUpdated: &t}}
	}
	bound := func(s int) *metal3api.HostClaim {
		c := &metal3api.HostClaim{}
		c.Status.Conditions = []metav1.Condition{{Type: hostfleetv1alpha1.ConditionAssociated, Status: metav1.ConditionTrue, LastTransitionTime: at(s)}}
		return c
	}
	g.Expect(uncounted(&metal3api.HostClaim{}, inv(10))).To(BeTrue(), "not bound")
	g.Expect(uncounted(bound(5), inv(10))).To(BeFalse(), "bound before the inventory: counted there")
	g.Expect(uncounted(bound(10), inv(10))).To(BeTrue(), "the same second: counted twice rather than not at all")
	g.Expect(uncounted(bound(15), inv(10))).To(BeTrue(), "bound after the inventory")
	g.Expect(uncounted(bound(5), nil)).To(BeTrue(), "no inventory")
	g.Expect(uncounted(bound(5), &hostfleetv1alpha1.HostInventory{})).To(BeTrue(), "an inventory never written")
}
