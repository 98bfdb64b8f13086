package main_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestOneToOneAcrossKill binds 200 claims to 100 hosts with 4 workers, kills
// the agent with SIGKILL in the middle, starts it again next to a second
// agent for the same cluster, and checks from both API servers that every
// host has at most one claim and every claim at most one host.
func TestOneToOneAcrossKill(t *testing.T) {
	const hosts, claims = 100, 200
	g := NewWithT(t)
	ctx := context.Background()
	// The race is between agents, not with the host state machine: no
	// baremetal-operator here, hosts are made available directly.
	bin, f, hub, infra := agentScene(t, hosts, 7000, func(i int) string { return fmt.Sprintf("h%03d", i) })
	for i := 0; i < claims; i++ {
		g.Expect(hub.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: fmt.Sprintf("c%03d", i),
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, Annotations: planes.PlacedBy()}})).To(Succeed())
	}

	args := []string{
		"--hub-kubeconfig=" + f.Plane("hub").Kubeconfig,
		"--managed-kubeconfig=" + f.Plane("infra-1").Kubeconfig,
		"--cluster-name=infra-1", "--concurrency=4", "--retry-after=5s",
		// The worst case: no leader election, both agents act at once.
		"--leader-elect=false",
	}
	bound := func() int {
		var list metal3api.BareMetalHostList
		g.Expect(infra.List(ctx, &list, client.InNamespace("hosts"))).To(Succeed())
		n := 0
		for _, h := range list.Items {
			if h.Spec.ConsumerRef != nil {
				n++
			}
		}
		return n
	}

	start := time.Now()
	first, err := f.Run("agent-first", "infra-1", bin, args)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(bound).WithTimeout(60 * time.Second).WithPolling(50 * time.Millisecond).Should(BeNumerically(">=", 30))
	first.Kill()
	killedAt := bound()
	t.Logf("killed the agent with SIGKILL after %s, %d hosts bound", time.Since(start).Round(time.Millisecond), killedAt)
	g.Expect(killedAt).To(BeNumerically("<", hosts), "killed mid-run")

	for _, name := range []string{"agent-restarted", "agent-second"} {
		_, err := f.Run(name, "infra-1", bin, args)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Eventually(func(g Gomega) {
		var list metal3api.HostClaimList
		g.Expect(hub.List(ctx, &list, client.InNamespace("tenant-a"))).To(Succeed())
		n := 0
		for i := range list.Items {
			if isAssociated(&list.Items[i]) {
				n++
			}
		}
		g.Expect(n).To(Equal(hosts), "claims holding a host without reporting it: %v", silentHolders(ctx, g, hub, infra))
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("all %d hosts bound %s after the start", hosts, time.Since(start).Round(time.Millisecond))

	// Both sides agree, one to one.
	var hostList metal3api.BareMetalHostList
	g.Expect(infra.List(ctx, &hostList, client.InNamespace("hosts"))).To(Succeed())
	var claimList metal3api.HostClaimList
	g.Expect(hub.List(ctx, &claimList, client.InNamespace("tenant-a"))).To(Succeed())
	hostOf := map[string]string{} // claim -> host, from the hosts' consumerRefs
	for _, h := range hostList.Items {
		g.Expect(h.Spec.ConsumerRef).NotTo(BeNil(), "host %s unbound while claims wait", h.Name)
		claim := h.Spec.ConsumerRef.Name
		g.Expect(hostOf).NotTo(HaveKey(claim), "claim %s holds two hosts: %s and %s", claim, hostOf[claim], h.Name)
		hostOf[claim] = h.Name
		g.Expect(h.Annotations).To(HaveKey(hostfleetv1alpha1.AnnotationClaimUID))
	}
	reported := map[string]string{} // host -> claim, from the claims' status
	for _, c := range claimList.Items {
		if !isAssociated(&c) {
			g.Expect(hostOf).NotTo(HaveKey(c.Name), "claim %s holds a host but does not report it", c.Name)
			continue
		}
		h := c.Status.BareMetalHost.Name
		g.Expect(reported).NotTo(HaveKey(h), "host %s reported by %s and %s", h, reported[h], c.Name)
		reported[h] = c.Name
		g.Expect(hostOf[c.Name]).To(Equal(h), "claim %s reports %s but holds %q", c.Name, h, hostOf[c.Name])
		uid := ""
		for _, hh := range hostList.Items {
			if hh.Name == h {
				uid = hh.Annotations[hostfleetv1alpha1.AnnotationClaimUID]
			}
		}
		g.Expect(uid).To(Equal(string(c.UID)))
	}
	g.Expect(reported).To(HaveLen(hosts))
}

// silentHolders are the claims named by a host's consumerRef whose status does
// not name that host.
func silentHolders(ctx context.Context, g Gomega, hub, infra client.Client) []string {
	var hostList metal3api.BareMetalHostList
	g.Expect(infra.List(ctx, &hostList, client.InNamespace("hosts"))).To(Succeed())
	var out []string
	for _, h := range hostList.Items {
		if h.Spec.ConsumerRef == nil {
			continue
		}
		c := &metal3api.HostClaim{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: h.Spec.ConsumerRef.Name}, c)).To(Succeed())
		if !isAssociated(c) || c.Status.BareMetalHost.Name != h.Name {
			out = append(out, fmt.Sprintf("%s (holds %s, status names %v)", c.Name, h.Name, c.Status.BareMetalHost))
		}
	}
	return out
}

func isAssociated(c *metal3api.HostClaim) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
	return cond != nil && cond.Status == metav1.ConditionTrue && c.Status.BareMetalHost != nil
}
