package forwarding

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/forwarder"
)

// buildStandIn builds e2e/tools/upstreambind, whose -hostclaims mode plays
// baremetal-operator v0.14's HostClaim controller with upstream's own
// association code (its own module: baremetal-operator's dependencies stay
// out of Hostfleet's).
func buildStandIn(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "upstreambind")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "..", "tools", "upstreambind")
	cmd.Env = append(os.Environ(), "GONOSUMDB=github.com/metal3-io/ironic-standalone-operator", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the baremetal-operator stand-in: %v\n%s", err, out)
	}
	return bin
}

// tally is who serves the forwarded claims, read from the target cluster.
type tally struct {
	// byAgent and byOther count the claims whose one host the agent (it
	// carries the claim's UID) or the other controller bound; waiting the
	// claims with no host.
	byAgent, byOther, waiting int
	// twoHosts are claims two hosts name; shared, hosts two claims' status
	// name.
	twoHosts, shared []string
	// servedBy is, per claim, which controller bound its host.
	servedBy map[string]string
	// free are the hosts no claim holds, with their annotations.
	free []string
}

func count(ctx context.Context, infra client.Client) (tally, error) {
	var hosts metal3api.BareMetalHostList
	if err := infra.List(ctx, &hosts, client.InNamespace(hostsNS)); err != nil {
		return tally{}, err
	}
	var claims metal3api.HostClaimList
	if err := infra.List(ctx, &claims, client.InNamespace(forwarder.TargetNamespace(tenantNS))); err != nil {
		return tally{}, err
	}
	t := tally{servedBy: map[string]string{}}
	naming := map[string][]metal3api.BareMetalHost{}
	for _, h := range hosts.Items {
		if ref := h.Spec.ConsumerRef; ref != nil {
			naming[ref.Name] = append(naming[ref.Name], h)
		} else {
			t.free = append(t.free, fmt.Sprintf("%s %v", h.Name, h.Annotations))
		}
	}
	statusOf := map[string]string{}
	for _, c := range claims.Items {
		hs := naming[c.Name]
		switch {
		case len(hs) > 1:
			t.twoHosts = append(t.twoHosts, c.Name)
		case len(hs) == 0:
			t.waiting++
		case hs[0].Annotations[hostfleetv1alpha1.AnnotationClaimUID] == string(c.UID):
			t.byAgent++
			t.servedBy[c.Name] = forwarder.ServedByAgent
		default:
			t.byOther++
			t.servedBy[c.Name] = forwarder.ServedByBMO
		}
		if ref := c.Status.BareMetalHost; ref != nil {
			if other, ok := statusOf[ref.Name]; ok {
				t.shared = append(t.shared, other+","+c.Name)
			}
			statusOf[ref.Name] = c.Name
		}
	}
	return t, nil
}

// TestOneControllerPerClaim: on a cluster where baremetal-operator v0.14's
// HostClaim controller (played by a stand-in running upstream's association:
// its finalizer, a random admitted host, the host's consumerRef by an Update
// with its resourceVersion) runs beside the agent's --local-claims, 200
// forwarded claims race for 100 hosts. Whichever controller binds a claim's
// host serves it alone: no claim ends with two hosts, no host is named by
// two claims, the agent keeps no claim the other bound, and each hub claim's
// Forwarded condition names the controller that serves it.
func TestOneControllerPerClaim(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const claims, hosts = 200, 100
	standIn := buildStandIn(t)
	f, hub, infra := fleet(t, g)
	for i := range hosts {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: fmt.Sprintf("h%03d", i)},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 7000+i), CredentialsName: "bmc"}}}
		g.Expect(infra.Create(ctx, h)).To(Succeed())
		h.Status.Provisioning.State = metal3api.StateAvailable
		h.Status.OperationalStatus = metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
	startAgent(t, f)
	bmo, err := f.Run("baremetal-operator-hostclaims", cluster, standIn, []string{"-hostclaims", "-workers", "4"})
	g.Expect(err).NotTo(HaveOccurred())

	t.Logf("%d remote claims for %d hosts, pinned to %s", claims, hosts, cluster)
	start := time.Now()
	for i := range claims {
		g.Expect(hub.Create(ctx, remoteClaim(fmt.Sprintf("c%03d", i), func(c *metal3api.HostClaim) {
			c.Labels[hostfleetv1alpha1.LabelCluster] = cluster
		}))).To(Succeed())
	}
	// While they race: how often, at any moment, a claim has two hosts.
	var seenTwo atomic.Int32
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampling.Err() == nil {
			if t, err := count(sampling, infra); err == nil && len(t.twoHosts) > int(seenTwo.Load()) {
				seenTwo.Store(int32(len(t.twoHosts)))
			}
			time.Sleep(200 * time.Millisecond) // sampling, not waiting
		}
	}()

	var final tally
	g.Eventually(func(g Gomega) {
		g.Expect(bmo.Exited()).To(BeFalse(), "the stand-in exited; see %s", bmo.Log)
		var err error
		final, err = count(ctx, infra)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(final.byAgent+final.byOther+final.waiting+len(final.twoHosts)).To(Equal(claims), "every claim on the target")
		g.Expect(final.twoHosts).To(BeEmpty(), func() string { return describe(ctx, infra, final.twoHosts) })
		g.Expect(final.byAgent+final.byOther).To(Equal(hosts), "every host taken; free: %v", final.free)
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
	settled := time.Since(start)
	stopSampling()
	<-sampled

	t.Log("settled: every claim served by one controller, and the hub says which")
	g.Eventually(func(g Gomega) {
		now, err := count(ctx, infra)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(now.shared).To(BeEmpty(), "no host named by two claims' status: %s", describe(ctx, infra, now.shared))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "statuses follow the bindings")
	g.Consistently(func(g Gomega) {
		now, err := count(ctx, infra)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(now.twoHosts).To(BeEmpty(), "no claim bound to two hosts")
		g.Expect(now.shared).To(BeEmpty(), "no host named by two claims")
		g.Expect(now.servedBy).To(Equal(final.servedBy), "nobody takes a host over")
	}).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	var targets metal3api.HostClaimList
	g.Expect(infra.List(ctx, &targets, client.InNamespace(forwarder.TargetNamespace(tenantNS)))).To(Succeed())
	for _, c := range targets.Items {
		if final.servedBy[c.Name] == forwarder.ServedByBMO || final.servedBy[c.Name] == "" {
			g.Expect(controllerutil.ContainsFinalizer(&c, hostfleetv1alpha1.AgentFinalizer)).To(BeFalse(),
				"%s: the agent keeps nothing of a claim it does not serve", c.Name)
		}
	}
	g.Eventually(func(g Gomega) {
		var list metal3api.HostClaimList
		g.Expect(hub.List(ctx, &list, client.InNamespace(tenantNS))).To(Succeed())
		for _, c := range list.Items {
			who := final.servedBy[c.Name]
			if who == "" {
				continue
			}
			fwd := cond(&c, hostfleetv1alpha1.ConditionForwarded)
			g.Expect(fwd.Message).To(ContainSubstring("by "+who), "%s on the hub", c.Name)
			if who == forwarder.ServedByBMO && !strings.Contains(fwd.Message, forwarder.ServedByAgent) {
				g.Expect(cond(&c, hostfleetv1alpha1.ConditionReady).Reason).To(Equal(hostfleetv1alpha1.ReasonServedByBareMetalOperator), c.Name)
			}
		}
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("%d claims, %d hosts: %d bound by the agent, %d by the other controller, %d waiting; settled in %s; "+
		"at most %d claims had two hosts at once while racing, none once settled",
		claims, hosts, final.byAgent, final.byOther, final.waiting, settled.Round(100*time.Millisecond), seenTwo.Load())
}

// describe says, for pairs of claims "a,b", what each carries: finalizers,
// reservation, status host and Associated condition.
func describe(ctx context.Context, infra client.Client, pairs []string) string {
	var out []string
	for _, p := range pairs {
		for _, name := range strings.Split(p, ",") {
			c := &metal3api.HostClaim{}
			if err := infra.Get(ctx, client.ObjectKey{Namespace: forwarder.TargetNamespace(tenantNS), Name: name}, c); err != nil {
				out = append(out, name+": "+err.Error())
				continue
			}
			a := cond(c, hostfleetv1alpha1.ConditionAssociated)
			out = append(out, fmt.Sprintf("%s: finalizers %v, reserved %q, status %v, Associated %s/%s %q", name, c.Finalizers,
				c.Annotations[hostfleetv1alpha1.AnnotationReservedHost], c.Status.BareMetalHost, a.Status, a.Reason, a.Message))
		}
	}
	return strings.Join(out, "; ")
}
