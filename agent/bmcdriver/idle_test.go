package bmcdriver_test

import (
	"encoding/base64"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// TestIdlePollsReadAndWriteNothing: a settled host's polls write nothing
// and read no Secret; its credentials Secret is read once, and once more
// after a rotation, when the BMC refuses what was kept.
func TestIdlePollsReadAndWriteNothing(t *testing.T) {
	e := start(t)
	g := e.g
	count := func(verb, resource string) float64 {
		n, err := planes.Requests(e.ctx, e.cfg, verb, resource)
		g.Expect(err).NotTo(HaveOccurred())
		return n
	}
	writes := func() float64 {
		return count("PUT", "baremetalhosts") + count("PATCH", "baremetalhosts") + count("POST", "baremetalhosts")
	}
	reads0 := count("GET", "secrets")

	var bmcs []*redfish.BMC
	var hosts []*metal3api.BareMetalHost
	for _, name := range []string{"a", "b", "c"} {
		b := redfish.Start(redfish.Options{})
		t.Cleanup(b.Close)
		bmcs = append(bmcs, b)
		hosts = append(hosts, e.host(name, b, "password"))
	}
	for _, h := range hosts {
		e.state(h, metal3api.StateAvailable)
	}
	// polled waits until every BMC has served n more requests: each poll
	// logs in, reads the power and logs out.
	polled := func(n int64) {
		t.Helper()
		var seen []int64
		for _, b := range bmcs {
			_, r := b.Traffic()
			seen = append(seen, r)
		}
		g.Eventually(func(g Gomega) {
			for i, b := range bmcs {
				_, r := b.Traffic()
				g.Expect(r - seen[i]).To(BeNumerically(">=", n))
			}
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}

	t.Log("settled: several polls of each host write nothing and read no Secret")
	polled(1) // the last step's write is done
	w := writes()
	polled(3)
	g.Expect(writes()).To(Equal(w), "a poll that finds nothing new writes nothing")
	g.Expect(count("GET", "secrets")-reads0).To(Equal(3.0), "each host's Secret read once")

	t.Log("the password rotated on the BMC and in the Secret: read once more, at the first refusal")
	bmcs[0].SetPasswordInBand("admin", "rotated")
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "a-bmc"}}
	rotated := base64.StdEncoding.EncodeToString([]byte("rotated"))
	g.Expect(e.c.Patch(e.ctx, s, client.RawPatch(types.MergePatchType, []byte(`{"data":{"password":"`+rotated+`"}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(e.get(g, hosts[0]).Status.GoodCredentials.Version).To(Equal(s.ResourceVersion))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	polled(3)
	g.Expect(count("GET", "secrets") - reads0).To(Equal(4.0))
	g.Expect(e.get(g, hosts[0]).Status.ErrorCount).To(BeZero(), "the new password was used at the refusal of the old one")
}
