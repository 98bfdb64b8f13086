package claim_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestFailureDuringHubOutage: the bound host's BMC answers 500 to every
// request, and the hub's API server stops for 8 s, longer than the grace:
// nothing is replaced while the hub is away (the replacement is recorded on
// the hub claim first). Once it is back, the host is fenced; its BMC
// answers again, confirms it off, and the claim is Ready on the other
// host. Checked every 100 ms throughout: a quarantined host is off.
func TestFailureDuringHubOutage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, infra, bmcs, iso, f := redfishScene(t, hostfleetv1alpha1.ServedTenant{Healing: replacing()}, redfish.Options{}, []string{"rf-a", "rf-b"}, watchful)
	c := hubClaim("live", "infra-1", nil)
	c.Spec.PoweredOn = true
	c.Spec.Image = &metal3api.Image{URL: iso.URL + "/live.iso", DiskFormat: ptr.To("live-iso")}
	mustCreate(t, hub, c)
	ready := func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(healthOf(g, hub, c).Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
	}
	g.Eventually(ready).WithTimeout(90 * time.Second).Should(Succeed())
	failed := c.Status.BareMetalHost.Name

	broken := offWhileQuarantined(t, infra, failed, bmcs[failed])
	held := func(g Gomega) {
		h := &metal3api.BareMetalHost{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
		g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationQuarantined))
		g.Expect(h.Spec.ConsumerRef).NotTo(BeNil())
	}

	t.Log("its BMC fails and the hub's API server stops for 8 s: nothing is replaced meanwhile")
	bmcs[failed].SetFaults(redfish.Faults{Status: 500})
	hubPlane := f.Plane("hub")
	g.Expect(hubPlane.PauseAPIServer()).To(Succeed())
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			g.Expect(hubPlane.ResumeAPIServer()).To(Succeed())
		}
	}
	t.Cleanup(resume)
	g.Consistently(held).WithTimeout(8*time.Second).Should(Succeed(), "a replacement is recorded on the hub claim first")
	resume()

	t.Log("the hub is back: the host is fenced; once the claim says so, its BMC answers again")
	g.Eventually(func(g Gomega) {
		g.Expect(healthOf(g, hub, c).Reason).To(Equal(hostfleetv1alpha1.ReasonFencing))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	held(g)
	bmcs[failed].SetFaults(redfish.Faults{})
	g.Eventually(func(g Gomega) {
		ready(g)
		g.Expect(c.Status.BareMetalHost.Name).NotTo(Equal(failed))
	}).WithTimeout(90 * time.Second).Should(Succeed())
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
	q, ok, err := healing.QuarantineOf(h.Annotations)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(q.Fenced).To(BeTrue())
	g.Consistently(func() string { return bmcs[failed].Power() }).WithTimeout(3*time.Second).Should(Equal("Off"), "a quarantined host stays off")
	g.Expect(broken()).To(BeEmpty())
}

// offWhileQuarantined checks, every 100 ms until the test ends or the
// returned function is called, that host name is off whenever it is
// quarantined; the function returns what broke it.
func offWhileQuarantined(t *testing.T, infra client.Client, name string, b *redfish.BMC) func() []string {
	var mu sync.Mutex
	var broken []string
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			h := &metal3api.BareMetalHost{}
			if infra.Get(context.Background(), client.ObjectKey{Namespace: hostsNS, Name: name}, h) != nil {
				continue
			}
			if _, q := h.Annotations[hostfleetv1alpha1.AnnotationQuarantined]; q && b.Power() != "Off" {
				mu.Lock()
				broken = append(broken, fmt.Sprintf("%s quarantined while its BMC has it %s: %v", name, b.Power(), b.Actions()))
				mu.Unlock()
			}
		}
	}()
	var once sync.Once
	done := func() []string {
		once.Do(func() { close(stop); <-watched })
		mu.Lock()
		defer mu.Unlock()
		return broken
	}
	t.Cleanup(func() { done() })
	return done
}
