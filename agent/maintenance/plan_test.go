package maintenance

import (
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestPlan(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	maint := func(name string, created time.Duration, rack string, complete bool) hostfleetv1alpha1.HostMaintenance {
		return hostfleetv1alpha1.HostMaintenance{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1, CreationTimestamp: metav1.NewTime(t0.Add(created))},
			Spec: hostfleetv1alpha1.HostMaintenanceSpec{HostSelector: metav1.LabelSelector{MatchLabels: map[string]string{"rack": rack}}, Complete: complete}}
	}
	host := func(name, rack, mark string, state metal3api.ProvisioningState, consumer string) *metal3api.BareMetalHost {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name, Labels: map[string]string{"rack": rack}}}
		if mark != "" {
			h.Annotations = map[string]string{hostfleetv1alpha1.AnnotationMaintenance: mark}
		}
		h.Status.Provisioning.State = state
		if consumer != "" {
			h.Spec.ConsumerRef = &corev1.ObjectReference{Kind: "HostClaim", Namespace: "tenant-a", Name: consumer}
		}
		return h
	}
	p := Plan(Input{
		Maintenances: []hostfleetv1alpha1.HostMaintenance{maint("newer", time.Minute, "r1", false), maint("older", 0, "r1", false), maint("done", 0, "r2", true)},
		Hosts: []*metal3api.BareMetalHost{
			host("bound", "r1", "", metal3api.StateProvisioned, "web"),
			host("free", "r1", "", metal3api.StateAvailable, ""),
			host("going", "r1", "older", metal3api.StateDeprovisioning, ""),
			host("back", "r2", "done", metal3api.StateAvailable, ""),
			host("other", "r3", "", metal3api.StateAvailable, ""),
		},
		HolderOf: func(h *metal3api.BareMetalHost) Holder {
			return Holder{Claim: h.Spec.ConsumerRef.Namespace + "/" + h.Spec.ConsumerRef.Name}
		},
	})
	g.Expect(p.Marks).To(Equal(map[string]string{"hosts/bound": "older", "hosts/free": "older", "hosts/back": ""}),
		"the oldest active maintenance marks; a complete one unmarks; unchanged marks are not written")
	g.Expect(p.Statuses["older"]).To(Equal(hostfleetv1alpha1.HostMaintenanceStatus{ObservedGeneration: 1, Waiting: 1, InMaintenance: 1, Hosts: []hostfleetv1alpha1.MaintainedHost{
		{Host: "hosts/bound", State: hostfleetv1alpha1.MaintenanceWaiting, Claim: "tenant-a/web"},
		{Host: "hosts/free", State: hostfleetv1alpha1.MaintenanceInMaintenance},
		{Host: "hosts/going", State: hostfleetv1alpha1.MaintenanceReleased},
	}}))
	g.Expect(p.Statuses["newer"].Hosts).To(HaveLen(3), "a host selected twice is listed by both")
	g.Expect(p.Statuses["done"].Hosts).To(Equal([]hostfleetv1alpha1.MaintainedHost{{Host: "hosts/back", State: hostfleetv1alpha1.MaintenanceDone}}))

	t.Log("no maintenance left: every mark goes")
	p = Plan(Input{Hosts: []*metal3api.BareMetalHost{host("x", "r1", "gone", metal3api.StateAvailable, "")}})
	g.Expect(p.Marks).To(Equal(map[string]string{"hosts/x": ""}))
}
