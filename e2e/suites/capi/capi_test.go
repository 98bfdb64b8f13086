package capi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/e2e/suites/capi"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

const kindLabel = "kind.example.com/kind"

// TestClusterOnClaims: with only tenant a's admin kubeconfig on the hub,
// the Cluster API client builds a three-machine cluster on claims, once on
// hosts baremetal-operator drives and once on hosts the agent's BMC driver
// drives: machines created powered off, bound, their data rendered from the
// claims' status and HardwareData, powered on, Ready; Nodes registered with
// the providerID made from the host's UID and labelled; the cluster paused,
// moved to new objects and unpaused with the claims untouched; one machine
// scaled down with node reuse and up again on the same host; the cluster
// deleted and every host released.
func TestClusterOnClaims(t *testing.T) {
	g := NewWithT(t)
	fl := newFleet(t, g)
	t.Run("the tenant kubeconfig reaches its namespace only", fl.rights)
	t.Run("bmo", func(t *testing.T) { t.Parallel(); fl.buildCluster(t, "bmo") })
	t.Run("bmc", func(t *testing.T) { t.Parallel(); fl.buildCluster(t, "bmc") })
}

// rights: what the client's kubeconfig can do outside tenant a's namespace
// is refused.
func (fl *fleet) rights(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	forbidden := func(err error, what string) {
		g.ExpectWithOffset(1, apierrors.IsForbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", what, err)
	}
	g.Expect(fl.alice.List(ctx, &metal3api.HostClaimList{}, client.InNamespace(tenantNS))).To(Succeed(), "its own namespace")
	watcher, err := client.NewWithWatch(fl.aliceCfg, client.Options{Scheme: planes.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := watcher.Watch(ctx, &metal3api.HostClaimList{}, client.InNamespace(tenantNS))
	g.Expect(err).NotTo(HaveOccurred(), "the provider watches the claims of its namespace")
	w.Stop()
	forbidden(fl.alice.List(ctx, &metal3api.HostClaimList{}), "claims of every namespace")
	forbidden(fl.alice.List(ctx, &metal3api.HostClaimList{}, client.InNamespace("tenant-b")), "another tenant's claims")
	forbidden(fl.alice.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "x"}}), "a claim for another tenant")
	forbidden(fl.alice.List(ctx, &corev1.SecretList{}, client.InNamespace("infra-1")), "secrets of a cluster's namespace")
	forbidden(fl.alice.List(ctx, &hostfleetv1alpha1.HostInventoryList{}, client.InNamespace("infra-1")), "inventories")
	forbidden(fl.alice.List(ctx, &clusterv1.ManagedClusterList{}), "clusters")
	forbidden(fl.alice.List(ctx, &corev1.NodeList{}), "nodes")
	forbidden(fl.alice.List(ctx, &metal3api.BareMetalHostList{}, client.InNamespace(tenantNS)), "hosts")
	forbidden(fl.alice.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}}), "its namespace")
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "rights"}}
	g.Expect(fl.alice.Create(ctx, c)).To(Succeed())
	c.Status.PoweredOn = true
	forbidden(fl.alice.Status().Update(ctx, c), "claim status")
	g.Expect(fl.alice.Delete(ctx, c)).To(Succeed())
}

// buildCluster runs the whole client path for cluster c-<kind>, on the
// hosts labelled kind.example.com/kind=<kind>.
func (fl *fleet) buildCluster(t *testing.T, kind string) {
	g := NewWithT(t)
	ctx := context.Background()
	cl := &capi.Client{Mgmt: fl.mgmt, Namespace: "capi", Remote: fl.alice, RemoteNamespace: tenantNS, Cluster: "c-" + kind}
	image := metal3api.Image{URL: fl.diskURL, Checksum: fl.diskURL + ".sha256sum"}
	if kind == "bmc" {
		image = metal3api.Image{URL: fl.isoURL, DiskFormat: ptr("live-iso")}
	}
	machine := func(name string) capi.Machine {
		return capi.Machine{Name: name, Image: image, NodeReuse: "md-" + kind,
			HostSelector: metal3api.HostSelector{MatchLabels: map[string]string{kindLabel: kind}}}
	}
	names := []string{kind + "-m0", kind + "-m1", kind + "-m2"}
	t.Log("three machines: created powered off, bound, data rendered, powered on, Ready; Nodes registered and labelled")
	for _, n := range names {
		g.Expect(cl.Create(ctx, machine(n))).To(Succeed())
	}
	fl.timeline(t, g, cl, names)
	ready := fl.converge(g, cl, names)
	for _, m := range ready {
		fl.registerNode(t, g, m)
	}

	t.Log("paused, moved to new objects, unpaused: the claims are untouched")
	claims := fl.pauseAndMove(t, g, &cl, names)
	cl.Paused = false
	g.Eventually(func(g Gomega) {
		for _, n := range names {
			m, err := cl.Reconcile(ctx, n)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m.Ready).To(BeTrue())
			c := fl.claim(g, m.HostClaim)
			g.Expect(c.Annotations).NotTo(HaveKey(metal3api.PausedAnnotation))
			g.Expect(status(c.Status.Conditions, hostfleetv1alpha1.ConditionPaused)).To(BeEmpty())
			g.Expect(c.Generation).To(Equal(claims[n].Generation), "the claim's spec never changed")
		}
	}).WithTimeout(60 * time.Second).Should(Succeed())

	fl.nodeReuse(t, g, cl, ready[2], machine(kind+"-m3"))
	names = []string{names[0], names[1], kind + "-m3"}

	t.Log("the cluster deleted: every claim goes, every host is released")
	cl.Deleting = true
	for _, n := range names {
		m, err := cl.Get(ctx, n)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fl.wl.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.Hostname}})).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		for _, n := range names {
			done, err := cl.Delete(ctx, n)
			if !errors.Is(err, capi.ErrWaiting) {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(done).To(BeTrue(), n)
		}
	}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		for cluster, infra := range fl.infra {
			var hosts metal3api.BareMetalHostList
			g.Expect(infra.List(ctx, &hosts, client.MatchingLabels{kindLabel: kind})).To(Succeed())
			for _, h := range hosts.Items {
				g.Expect(h.Spec.ConsumerRef).To(BeNil(), "%s/%s on %s", h.Namespace, h.Name, cluster)
			}
		}
	}).WithTimeout(60 * time.Second).Should(Succeed())
}

// converge reconciles the machines until each is Ready with a providerID.
func (fl *fleet) converge(g *WithT, cl *capi.Client, names []string) []*capi.Machine {
	out := make([]*capi.Machine, len(names))
	g.Eventually(func(g Gomega) {
		for i, n := range names {
			m, err := cl.Reconcile(context.Background(), n)
			if !errors.Is(err, capi.ErrWaiting) {
				g.Expect(err).NotTo(HaveOccurred(), n)
			}
			g.Expect(m.Ready).To(BeTrue(), n)
			g.Expect(m.ProviderID).To(HavePrefix("metal3://"))
			out[i] = m
		}
	}).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(Succeed(), fl.report)
	return out
}

// timeline reconciles the machines and follows the first, logging when its
// claim was bound, its data rendered and it was Ready, from its creation.
func (fl *fleet) timeline(t *testing.T, g *WithT, cl *capi.Client, names []string) {
	name, start, seen := names[0], time.Now(), map[string]time.Duration{}
	mark := func(step string, now bool) {
		if _, ok := seen[step]; !ok && now {
			seen[step] = time.Since(start).Round(100 * time.Millisecond)
		}
	}
	g.Eventually(func(g Gomega) {
		for _, other := range names[1:] { // as the provider's controller does, concurrently
			if _, err := cl.Reconcile(context.Background(), other); !errors.Is(err, capi.ErrWaiting) {
				g.Expect(err).NotTo(HaveOccurred())
			}
		}
		m, err := cl.Reconcile(context.Background(), name)
		if !errors.Is(err, capi.ErrWaiting) {
			g.Expect(err).NotTo(HaveOccurred())
		}
		if m.HostClaim != "" {
			c := fl.claim(g, m.HostClaim)
			mark("bound", meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated))
			mark("powered on", c.Spec.PoweredOn)
		}
		mark("data rendered", m.UserData != "")
		mark("Ready", m.Ready)
		g.Expect(m.Ready).To(BeTrue())
	}).WithTimeout(5*time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), fl.report)
	t.Logf("machine %s: created → bound %s → data rendered %s → powered on %s → Ready %s",
		name, seen["bound"], seen["data rendered"], seen["powered on"], seen["Ready"])
	fl.mu.Lock()
	fl.started[name] = start
	fl.mu.Unlock()
}

// report says, when a machine does not get Ready, where its claims and
// hosts stand: each claim's conditions, each host's state, power, error,
// labels, annotations and conditions, and each cluster's HostInventory.
func (fl *fleet) report() string {
	ctx := context.Background()
	var b strings.Builder
	claims := &metal3api.HostClaimList{}
	if err := fl.hub.List(ctx, claims, client.InNamespace(tenantNS)); err != nil {
		fmt.Fprintf(&b, "claims: %v\n", err)
	}
	for _, c := range claims.Items {
		fmt.Fprintf(&b, "claim %s (uid %s, generation %d, poweredOn %v, reserves %q, finalizers %v):\n", c.Name, c.UID, c.Generation, c.Spec.PoweredOn,
			c.Annotations[hostfleetv1alpha1.AnnotationReservedHost], c.Finalizers)
		for _, cond := range c.Status.Conditions {
			fmt.Fprintf(&b, "  %s=%s %s (gen %d): %s\n", cond.Type, cond.Status, cond.Reason, cond.ObservedGeneration, cond.Message)
		}
	}
	for cluster, infra := range fl.infra {
		hosts := &metal3api.BareMetalHostList{}
		if err := infra.List(ctx, hosts); err != nil {
			fmt.Fprintf(&b, "hosts of %s: %v\n", cluster, err)
		}
		for _, h := range hosts.Items {
			consumer := "none"
			if ref := h.Spec.ConsumerRef; ref != nil {
				consumer = fmt.Sprintf("%s %s/%s uid %q hub %q", ref.Kind, ref.Namespace, ref.Name,
					h.Annotations[hostfleetv1alpha1.AnnotationClaimUID], h.Annotations[hostfleetv1alpha1.AnnotationHub])
			}
			fmt.Fprintf(&b, "host %s/%s on %s: %s, online %v, poweredOn %v, error %q %q, consumer %s, orphaned since %q\n", h.Namespace, h.Name, cluster,
				h.Status.Provisioning.State, h.Spec.Online, h.Status.PoweredOn, h.Status.ErrorType, h.Status.ErrorMessage, consumer,
				h.Annotations[hostfleetv1alpha1.AnnotationOrphanedSince])
			fmt.Fprintf(&b, "  labels %v, annotations %v\n", h.Labels, h.Annotations)
			for _, cond := range h.Status.Conditions {
				fmt.Fprintf(&b, "  %s=%s %s: %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
			}
		}
		inv := &hostfleetv1alpha1.HostInventory{}
		if err := fl.hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: cluster}, inv); err != nil {
			fmt.Fprintf(&b, "HostInventory of %s: %v\n", cluster, err)
			continue
		}
		fmt.Fprintf(&b, "HostInventory of %s, updated %v: %d of %d available\n", cluster, inv.Status.LastUpdated, inv.Status.Available, inv.Status.Total)
		for _, p := range inv.Status.Pools {
			fmt.Fprintf(&b, "  pool %v namespaces %v taints %v: %d of %d\n", p.Labels, p.Namespaces, p.Taints, p.Available, p.Total)
		}
	}
	return b.String()
}

// claim reads a claim as the tenant.
func (fl *fleet) claim(g Gomega, name string) *metal3api.HostClaim {
	c := &metal3api.HostClaim{}
	g.ExpectWithOffset(1, fl.alice.Get(context.Background(), client.ObjectKey{Namespace: tenantNS, Name: name}, c)).To(Succeed())
	return c
}

// registerNode registers the machine's Node on the workload cluster as
// kubelet does (with the providerID the machine's bootstrap passes it and
// the labels-pending gate), and waits until the workload agent found it by
// that providerID and gave it the host's labels.
func (fl *fleet) registerNode(t *testing.T, g *WithT, m *capi.Machine) {
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.Hostname, Labels: map[string]string{"hostfleet.io/labels-pending": "true"}},
		Spec: corev1.NodeSpec{ProviderID: m.ProviderID}}
	g.Expect(fl.wl.Create(ctx, n)).To(Succeed())
	addresses := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: m.Hostname}}
	for _, a := range m.Addresses {
		addresses = append(addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
	}
	// The workload agent may label the Node (found by providerID) first.
	g.Eventually(func() error {
		if err := fl.wl.Get(ctx, client.ObjectKeyFromObject(n), n); err != nil {
			return err
		}
		n.Status.Addresses = addresses
		return fl.wl.Status().Update(ctx, n)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	registered := time.Now()
	g.Eventually(func(g Gomega) {
		c := fl.claim(g, m.HostClaim)
		synced := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionNodeLabelsSynced)
		g.Expect(synced).NotTo(BeNil())
		g.Expect(synced.Message).To(ContainSubstring("found by providerID"))
		g.Expect(fl.wl.Get(ctx, client.ObjectKeyFromObject(n), n)).To(Succeed())
		g.Expect(n.Labels).To(HaveKeyWithValue(rack, MatchRegexp(`^r\d$`)))
		g.Expect(n.Labels).To(HaveKey(kindLabel))
		g.Expect(n.Labels).NotTo(HaveKey("hostfleet.io/labels-pending"))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	fl.mu.Lock()
	start, ok := fl.started[m.Name]
	fl.mu.Unlock()
	if ok {
		t.Logf("machine %s: Node %s labelled %s after it registered (%s after the machine was created, its cluster's other machines Ready meanwhile)",
			m.Name, n.Name, time.Since(registered).Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	}
}

// pauseAndMove pauses the cluster (its claims are paused and say so),
// moves the client's objects, and returns the claims as they were before
// the move; after it they are the same objects, unchanged.
func (fl *fleet) pauseAndMove(t *testing.T, g *WithT, cl **capi.Client, names []string) map[string]*metal3api.HostClaim {
	ctx := context.Background()
	(*cl).Paused = true
	before := map[string]*metal3api.HostClaim{}
	g.Eventually(func(g Gomega) {
		for _, n := range names {
			m, err := (*cl).Reconcile(ctx, n)
			g.Expect(err).NotTo(HaveOccurred())
			c := fl.claim(g, m.HostClaim)
			g.Expect(c.Annotations).To(HaveKeyWithValue(metal3api.PausedAnnotation, capi.PausedAnnotationKey))
			g.Expect(status(c.Status.Conditions, hostfleetv1alpha1.ConditionPaused)).To(Equal(metav1.ConditionTrue))
			before[n] = c
		}
	}).WithTimeout(60 * time.Second).Should(Succeed())
	moved, err := capi.Move(ctx, *cl)
	g.Expect(err).NotTo(HaveOccurred())
	for _, n := range names {
		m, err := moved.Get(ctx, n)
		g.Expect(err).NotTo(HaveOccurred())
		c := fl.claim(g, m.HostClaim)
		g.Expect(c.UID).To(Equal(before[n].UID))
		g.Expect(c.Generation).To(Equal(before[n].Generation))
		g.Expect(c.Spec.ConsumerRef).To(Equal(before[n].Spec.ConsumerRef), "the consumerRef names the machine by name: it still does")
		g.Expect(c.Labels).To(HaveKeyWithValue(capi.ClusterNameLabel, (*cl).Cluster))
	}
	t.Logf("moved %d machines: claims untouched", len(names))
	*cl = moved
	return before
}

// nodeReuse scales the pool down by one machine (its Node deleted, its
// claim kept and cleared) and up by another, which takes the same claim and
// host back.
func (fl *fleet) nodeReuse(t *testing.T, g *WithT, cl *capi.Client, old *capi.Machine, next capi.Machine) {
	ctx := context.Background()
	t.Logf("scale down %s with node reuse, then up with %s", old.Name, next.Name)
	before := fl.claim(g, old.HostClaim)
	host, uid := *before.Status.BareMetalHost, before.Annotations[hostfleetv1alpha1.AnnotationHostUID]
	g.Expect(fl.wl.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: old.Hostname}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		done, err := cl.Delete(ctx, old.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(done).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	infra := fl.infra[before.Labels[hostfleetv1alpha1.LabelCluster]]
	g.Eventually(func(g Gomega) {
		c := fl.claim(g, old.HostClaim)
		g.Expect(c.Spec.ConsumerRef).To(BeNil())
		g.Expect(c.Status.BareMetalHost).To(HaveValue(Equal(host)), "the claim keeps its host")
		h := &metal3api.BareMetalHost{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: host.Name}, h)).To(Succeed())
		g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateAvailable), "deprovisioned")
		g.Expect(h.Spec.ConsumerRef).NotTo(BeNil())
		g.Expect(h.Spec.ConsumerRef.Name).To(Equal(old.HostClaim))
		g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionAvailableForProvisioning)).To(BeTrue())
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

	g.Expect(cl.Create(ctx, next)).To(Succeed())
	m := fl.converge(g, cl, []string{next.Name})[0]
	g.Expect(m.HostClaim).To(Equal(old.HostClaim), "the pool's kept claim is reused")
	c := fl.claim(g, m.HostClaim)
	g.Expect(c.Status.BareMetalHost).To(HaveValue(Equal(host)), "on the same host")
	g.Expect(c.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationHostUID, uid))
	g.Expect(c.Spec.ConsumerRef.Name).To(Equal(next.Name))
	fl.registerNode(t, g, m)
}

func ptr[T any](v T) *T { return &v }
