package forwarding

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/forwarder"
)

// buildStandIn is e2e/tools/upstreambind, whose -hostclaims mode plays
// baremetal-operator v0.14's HostClaim controller with upstream's own
// association code (its own module: baremetal-operator's dependencies stay
// out of Hostfleet's), built once into the tool cache.
func buildStandIn(t *testing.T) string {
	t.Helper()
	bin, err := planes.Tool("upstreambind")
	if err != nil {
		t.Fatalf("the baremetal-operator stand-in: %v", err)
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
	// deleting counts the claims being deleted.
	deleting int
	// free are the hosts no claim holds, with their annotations; strays
	// the hosts whose consumer is no claim on the target.
	free, strays []string
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
	live := map[string]bool{}
	for _, c := range claims.Items {
		live[c.Name] = true
		if c.DeletionTimestamp != nil {
			t.deleting++
			continue
		}
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
	for name, hs := range naming {
		for _, h := range hs {
			if !live[name] {
				t.strays = append(t.strays, fmt.Sprintf("%s (consumer %s) %v", h.Name, name, h.Annotations))
			}
		}
	}
	return t, nil
}

// TestOneControllerPerClaim: on a cluster where baremetal-operator
// v0.14.0-rc.0's HostClaim controller (played by a stand-in running
// upstream's association and cluster-api's patch helper: its finalizer on
// every claim, its conditions on every reconcile, a release that clears a
// consumerRef by name without deprovisioning) runs beside the agent's
// --local-claims, forwarded claims with an image race, in bursts, for 100
// hosts: the agent alone binds the first 50 (baremetal-operator upgraded to
// v0.14 afterwards turns --hostclaims on), then both race for 150 more.
// Whichever controller binds a claim's host serves it alone: no
// claim ends with two hosts, no host is named by two claims, the agent
// keeps no claim the other bound, and each hub claim's Forwarded condition
// names the controller that serves it and what to turn off. Then half the
// claims are deleted and half of those re-created: no host is taken from a
// claim the other controller serves, none freed twice, none left with an
// image or the agent's annotations without a claim the agent serves; and
// once settled, claims are written at most 10 times a minute in all, over
// HOSTFLEET_RACE_SOAK (default 1m, past a resync of each controller; 5m is
// the documented long run) with both controllers running.
func TestOneControllerPerClaim(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const claims, hosts = 200, 100
	soak := soakWindow(t, g)
	standIn := buildStandIn(t)
	f, hub, infra := fleet(t, g)
	makeAvailableHosts(ctx, g, infra, hosts)
	rec := startRecord(t, g, f.Plane(cluster).Config)
	// The other controller patches a claim's finalizers as a whole list
	// (cluster-api's patch helper, no resourceVersion): removing its own
	// from a stale view of a claim being deleted, it can drop the agent's,
	// and the claim goes with the agent's host still bound. The agent
	// releases such a host after --orphan-grace, here shorter than settle's
	// wait.
	startAgent(t, f, func(o *app.Options) { o.OrphanGrace = 30 * time.Second })
	all := names(0, claims)
	t.Logf("the agent alone serves the first %d claims, as before baremetal-operator is upgraded to v0.14 (its --hostclaims on by default)", burst)
	createBursts(ctx, g, hub, all[:burst])
	// What is checked is who serves them, not how fast: each claim crosses
	// the scheduler, the forwarder, the work agent and the agent, and on a
	// machine at a load of 40 the agent had bound 39 of the 50 after 2
	// minutes.
	g.Eventually(func(g Gomega) {
		now, err := count(ctx, infra)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(now.byAgent).To(Equal(burst))
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
	bmo, err := f.Run("baremetal-operator-hostclaims", cluster, standIn, []string{"-hostclaims", "-workers", "4"})
	g.Expect(err).NotTo(HaveOccurred())

	t.Logf("then %d more remote claims race for the other hosts (%d in all), pinned to %s, in bursts of %d", claims-burst, hosts, cluster, burst)
	start := time.Now()
	createBursts(ctx, g, hub, all[burst:])
	sampled := sampleTwoHosts(ctx, infra)
	final := settle(g, infra, bmo, claims, hosts)
	seenTwo := sampled()
	t.Logf("%d claims, %d hosts: %d bound by the agent, %d by the other controller, %d waiting; settled in %s; "+
		"at most %d claims had two hosts at once while racing, none once settled",
		claims, hosts, final.byAgent, final.byOther, final.waiting, time.Since(start).Round(100*time.Millisecond), seenTwo)
	checkServed(ctx, t, g, hub, infra, final)

	t.Log("half the claims deleted, then half of those re-created")
	mark := time.Now()
	deleted := everyOther(all)
	deleteBursts(ctx, g, hub, deleted)
	final = settle(g, infra, bmo, claims-len(deleted), hosts)
	gone(g, hub, deleted)
	createBursts(ctx, g, hub, deleted[:len(deleted)/2])
	final = settle(g, infra, bmo, claims-len(deleted)/2, hosts)
	checkServed(ctx, t, g, hub, infra, final)
	violations, freed := rec.audit(mark)
	g.Expect(violations).To(BeEmpty(), "no host taken from the other controller's live claim, none freed twice")
	g.Expect(hostsWrong(ctx, infra)).To(BeEmpty(), "no host provisioned without a claim the agent serves")
	t.Logf("after deleting %d claims and re-creating %d: %d hosts freed from deleted claims, each once; none taken from a live claim; "+
		"%d bound by the agent, %d by the other controller, %d waiting", len(deleted), len(deleted)/2, freed, final.byAgent, final.byOther, final.waiting)

	total, most, top := rec.writesDuring(soak)
	perMinute := float64(total) / soak.Minutes()
	t.Logf("claim writes once settled, both controllers running: %d in %s (%.1f a minute, all claims); the most written: %q, %d times",
		total, soak, perMinute, most, top)
	g.Expect(perMinute).To(BeNumerically("<=", 10), "claims are not written over and over once settled")
	g.Expect(bmo.Exited()).To(BeFalse(), "the stand-in exited; see %s", bmo.Log)
	g.Expect(hostsWrong(ctx, infra)).To(BeEmpty())
}

// burst is how many claims are created or deleted at once.
const burst = 50

// soakWindow is how long the settled claims' writes are counted:
// HOSTFLEET_RACE_SOAK, a minute by default (the agent resyncs a bound claim
// every minute, the other controller a waiting one every 30 s).
func soakWindow(t *testing.T, g Gomega) time.Duration {
	v := os.Getenv("HOSTFLEET_RACE_SOAK")
	if v == "" {
		return time.Minute
	}
	d, err := time.ParseDuration(v)
	g.Expect(err).NotTo(HaveOccurred(), "HOSTFLEET_RACE_SOAK")
	t.Logf("counting settled writes for %s (HOSTFLEET_RACE_SOAK)", d)
	return d
}

// makeAvailableHosts makes n hosts on the target, available to either
// controller (their status set, nothing driving them).
func makeAvailableHosts(ctx context.Context, g Gomega, infra client.Client, n int) {
	for i := range n {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: fmt.Sprintf("h%03d", i)},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 7000+i), CredentialsName: "bmc"}}}
		g.Expect(infra.Create(ctx, h)).To(Succeed())
		h.Status.Provisioning.State = metal3api.StateAvailable
		h.Status.OperationalStatus = metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
}

func names(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("c%03d", i))
	}
	return out
}

func everyOther(names []string) []string {
	var out []string
	for i := 0; i < len(names); i += 2 {
		out = append(out, names[i])
	}
	return out
}

// createBursts creates remote claims with an image, pinned to the
// cluster, burst at a time, each burst at once.
func createBursts(ctx context.Context, g Gomega, hub client.Client, names []string) {
	inBursts(g, names, func(name string) error {
		return hub.Create(ctx, remoteClaim(name, func(c *metal3api.HostClaim) {
			c.Labels[hostfleetv1alpha1.LabelCluster] = cluster
			c.Spec.Image = &metal3api.Image{URL: "http://images.example/" + name + ".qcow2", Checksum: "http://images.example/" + name + ".qcow2.sha256",
				ChecksumType: metal3api.SHA256}
		}))
	})
}

// deleteBursts deletes hub claims, burst at a time, each burst at once.
func deleteBursts(ctx context.Context, g Gomega, hub client.Client, names []string) {
	inBursts(g, names, func(name string) error {
		return hub.Delete(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name}})
	})
}

func inBursts(g Gomega, names []string, do func(string) error) {
	for i := 0; i < len(names); i += burst {
		var wg sync.WaitGroup
		errs := make([]error, min(burst, len(names)-i))
		for j := range errs {
			wg.Go(func() { errs[j] = do(names[i+j]) })
		}
		wg.Wait()
		for _, err := range errs {
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
}

// sampleTwoHosts counts, while the claims race, the most claims seen with
// two hosts at once; the returned func stops it and says.
func sampleTwoHosts(ctx context.Context, infra client.Client) func() int32 {
	var seenTwo atomic.Int32
	sampling, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sampling.Err() == nil {
			if t, err := count(sampling, infra); err == nil && len(t.twoHosts) > int(seenTwo.Load()) {
				seenTwo.Store(int32(len(t.twoHosts)))
			}
			time.Sleep(200 * time.Millisecond) // sampling, not waiting
		}
	}()
	return func() int32 { stop(); <-done; return seenTwo.Load() }
}

// settle waits until every one of the claims is on the target, none
// deleting, none with two hosts, every host taken, and no host named by two
// claims' status.
func settle(g Gomega, infra client.Client, bmo *planes.Process, claims, hosts int) tally {
	ctx := context.Background()
	var final tally
	g.Eventually(func(g Gomega) {
		g.Expect(bmo.Exited()).To(BeFalse(), "the stand-in exited; see %s", bmo.Log)
		var err error
		final, err = count(ctx, infra)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(final.deleting).To(BeZero(), "claims being deleted")
		g.Expect(final.byAgent+final.byOther+final.waiting+len(final.twoHosts)).To(Equal(claims), "every claim on the target")
		g.Expect(final.twoHosts).To(BeEmpty(), func() string { return describe(ctx, infra, final.twoHosts) })
		g.Expect(final.byAgent+final.byOther).To(Equal(hosts), "every host taken; free: %v; held for no claim: %v", final.free, final.strays)
		g.Expect(final.shared).To(BeEmpty(), "no host named by two claims' status: %s", describe(ctx, infra, final.shared))
	}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return final
}

// gone waits until the hub claims named are deleted (the forwarder lets
// them go once their forwarded claims are), so that they can be made again.
func gone(g Gomega, hub client.Client, names []string) {
	g.Eventually(func(g Gomega) {
		var claims metal3api.HostClaimList
		g.Expect(hub.List(context.Background(), &claims, client.InNamespace(tenantNS))).To(Succeed())
		left := map[string]bool{}
		for _, c := range claims.Items {
			left[c.Name] = true
		}
		var still []string
		for _, n := range names {
			if left[n] {
				still = append(still, n)
			}
		}
		g.Expect(still).To(BeEmpty(), "hub claims still being deleted")
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// checkServed: once settled, nobody takes a host over; the agent keeps
// nothing of a claim the other controller serves, and says once, in an
// Event, that two controllers reconcile each claim it serves; each hub
// claim's Forwarded condition names who serves it and what to turn off.
func checkServed(ctx context.Context, t *testing.T, g Gomega, hub, infra client.Client, final tally) {
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
		warned := warnedClaims(ctx, g, infra)
		for name, who := range final.servedBy {
			if who == forwarder.ServedByAgent {
				g.Expect(warned).To(HaveKey(name), "the Event on %s says two controllers reconcile it", name)
			}
		}
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
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
			if who == forwarder.ServedByAgent {
				g.Expect(fwd.Message).To(ContainSubstring("turn baremetal-operator's --hostclaims off there"), "%s on the hub", c.Name)
			} else {
				g.Expect(cond(&c, hostfleetv1alpha1.ConditionReady).Reason).To(Equal(hostfleetv1alpha1.ReasonServedByBareMetalOperator), c.Name)
			}
		}
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Expect(gauge(g, "hostfleet_agent_local_claims_other_controller")).To(BeNumerically(">", 0), "the agent's metric says two controllers run")
	t.Logf("served as settled: the agent's claims carry the Event %s, its metric counts %v claims the other controller reconciles too, the hub says what to turn off",
		hostfleetv1alpha1.ReasonTwoHostClaimControllers, gauge(g, "hostfleet_agent_local_claims_other_controller"))
}

// gauge is the value of one of the in-process agent's gauges.
func gauge(g Gomega, name string) float64 {
	families, err := crmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == name && len(f.Metric) == 1 {
			return f.Metric[0].GetGauge().GetValue()
		}
	}
	g.Expect(name).To(BeEmpty(), "gauge %s not registered", name)
	return 0
}

// warnedClaims are the target claims an Event of the agent's says two
// HostClaim controllers reconcile.
func warnedClaims(ctx context.Context, g Gomega, infra client.Client) map[string]bool {
	var events eventsv1.EventList
	g.Expect(infra.List(ctx, &events, client.InNamespace(forwarder.TargetNamespace(tenantNS)))).To(Succeed())
	out := map[string]bool{}
	for _, e := range events.Items {
		if e.Reason == hostfleetv1alpha1.ReasonTwoHostClaimControllers {
			out[e.Regarding.Name] = true
		}
	}
	return out
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
