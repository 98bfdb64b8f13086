package chaos

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestWatchFindsViolations: the watch of the hosts sees what no moment may
// show, and what the end-of-run check cannot see once it is over: a claim
// held by two hosts, a host passing from one claim to another, a host
// quarantined unfenced or while its BMC has it on, and a claim bound to
// another host, on this plane or another, while the one quarantined for it
// is on; a host bound while the release gate holds it, or with another
// claim's tenant's BMC account on it.
func TestWatchFindsViolations(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "infra-1", "infra-2")
	infra, other := f.Plane("infra-1").Client, f.Plane("infra-2").Client
	for _, c := range []client.Client{infra, other} {
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	}
	g.Expect(other.Create(ctx, &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "x1"}})).To(Succeed())
	hold := func(uid string) string {
		if uid == "" {
			return `{"spec":{"consumerRef":null},"metadata":{"annotations":{"` + hostfleetv1alpha1.AnnotationClaimUID + `":null}}}`
		}
		return `{"spec":{"consumerRef":{"kind":"HostClaim","namespace":"tenant-acme","name":"` + uid + `"}},"metadata":{"annotations":{"` +
			hostfleetv1alpha1.AnnotationClaimUID + `":"` + uid + `"}}}`
	}
	patch := func(host, p string) {
		g.Expect(infra.Patch(ctx, &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: host}},
			client.RawPatch(types.MergePatchType, []byte(p)))).To(Succeed())
	}
	quarantine := func(host, uid string, fenced bool) {
		q := healing.Quarantine{Since: metav1.Now(), Claim: "tenant-acme/" + uid, ClaimUID: uid, Reason: "PowerManagementError", Fenced: fenced}
		value, err := json.Marshal(q.String())
		g.Expect(err).NotTo(HaveOccurred())
		patch(host, hold(""))
		patch(host, `{"metadata":{"annotations":{"`+hostfleetv1alpha1.AnnotationQuarantined+`":`+string(value)+`}}}`)
	}
	for _, h := range []string{"h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9", "h10"} {
		g.Expect(infra.Create(ctx, &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: h}})).To(Succeed())
	}
	patch("h1", hold("a"))
	patch("h3", hold("b"))
	patch("h4", hold("c"))
	patch("h6", hold("d"))
	patch("h7", hold("f"))

	// h4's BMC has it on; every other host is off.
	qs := newQuarantines()
	w, err := watchHosts(ctx, "infra-1", f.Plane("infra-1").Config, func(host string) string {
		if host == "h4" {
			return "On"
		}
		return "Off"
	}, qs, func(host string) []string {
		return map[string][]string{"h9": {"t-zz"}, "h10": {tenantAccount("i")}}[host]
	})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.stop()
	w2, err := watchHosts(ctx, "infra-2", f.Plane("infra-2").Config, func(string) string { return "Off" }, qs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	defer w2.stop()
	<-w.following
	<-w2.following

	patch("h2", hold("a"))       // a on h1 and h2
	quarantine("h3", "b", false) // unfenced
	quarantine("h4", "c", true)  // fenced, yet on
	patch("h5", hold("c"))       // c bound again while h4 is on
	patch("h6", hold("e"))       // d's host handed to e
	quarantine("h7", "f", true)  // as it should be: off
	patch("h8", `{"metadata":{"annotations":{"`+hostfleetv1alpha1.AnnotationRestore+`":"{\"phase\":\"held\"}"}}}`)
	patch("h8", hold("g"))  // bound while held by the release gate
	patch("h9", hold("h"))  // bound with another tenant's BMC account on it
	patch("h10", hold("i")) // its own tenant's account: as it may be
	g.Eventually(func(g Gomega) {
		q, b := w.counts()
		g.Expect(q).To(Equal(3), "h3, h4 and h7 quarantined")
		g.Expect(b).To(Equal(1), "c bound again")
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	// c moved to infra-2 and bound there while h4 is on.
	g.Expect(other.Patch(ctx, &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "x1"}},
		client.RawPatch(types.MergePatchType, []byte(hold("c"))))).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, b := w2.counts()
		g.Expect(b).To(Equal(1), "c bound again on infra-2")
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(w2.stop()).To(ConsistOf(Equal("claim tenant-acme/c bound to infra-2/x1 while infra-1/h4, quarantined for it, is On")))
	g.Expect(w.stop()).To(ConsistOf(
		HavePrefix("claim a held by infra-1/h1 and infra-1/h2"),
		Equal("infra-1/h3 quarantined for claim tenant-acme/b without being fenced"),
		Equal("infra-1/h4 quarantined for claim tenant-acme/c while its BMC has it On"),
		Equal("claim tenant-acme/c bound to infra-1/h5 while infra-1/h4, quarantined for it, is On"),
		HavePrefix("h6 passed from claim d to claim e"),
		Equal(`infra-1/h8 bound to claim g while its restore to its firmware baselines is pending or held ({"phase":"held"})`),
		Equal("infra-1/h9 bound to claim h with BMC account t-zz, which another claim's tenant added"),
	))
}
