package main_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestMain(m *testing.M) { planes.Main(m) }

const (
	clusters   = 5
	perCluster = 40
	claims     = clusters * perCluster
)

// TestLeaderKilledMidStorm: two hub replicas with an 8 s Lease; the leader
// is killed with SIGKILL while claims arrive at 20/s; the standby takes the
// Lease and places again within 15 s of the kill; every claim is placed once, and no
// cluster gets more claims than it has hosts.
func TestLeaderKilledMidStorm(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	fleet(g, hub)

	replicas, _, leader := startReplicas(t, g, f)
	g.Eventually(leader).WithTimeout(60 * time.Second).Should(BeNumerically(">=", 0))
	first := leader()

	t.Logf("%d claims at 20/s; the leader, replica %d, is killed once a third are placed", claims, first)
	placed := watchPlacements(t, g, hub)
	arrivals := time.NewTicker(50 * time.Millisecond) // 20 claims a second
	t.Cleanup(arrivals.Stop)
	go func() {
		for i := range claims {
			c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: fmt.Sprintf("c%03d", i)}}
			for range arrivals.C {
				if hub.Create(ctx, c) == nil { // else the API server is busy: at the next tick
					break
				}
			}
		}
	}()
	g.Eventually(func() int { return placed.count() }).WithTimeout(2 * time.Minute).Should(BeNumerically(">=", claims/3))
	killed := time.Now()
	replicas[first].Kill()
	g.Eventually(leader).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(Equal(1-first), "the standby leads")
	leads := time.Now()
	g.Eventually(placed.count).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Equal(claims), "every claim placed")
	// Placements seen after the standby leads are its own (the killed
	// leader's last writes landed before).
	takeover := placed.firstAfter(leads).Sub(killed)
	t.Logf("leader killed with %d claims placed; the standby led %s after the kill and placed the next claim %s after it",
		placed.countBefore(killed), leads.Sub(killed).Round(100*time.Millisecond), takeover.Round(100*time.Millisecond))
	g.Expect(takeover).To(BeNumerically("<", 15*time.Second))

	var list metal3api.HostClaimList
	g.Expect(hub.List(ctx, &list, client.InNamespace("tenant-a"))).To(Succeed())
	per := map[string]int{}
	for _, c := range list.Items {
		cl := c.Labels[hostfleetv1alpha1.LabelCluster]
		g.Expect(cl).To(Equal(placed.cluster(c.Name)), "%s placed once: its cluster never changed", c.Name)
		per[cl]++
	}
	for cl, n := range per {
		g.Expect(n).To(BeNumerically("<=", perCluster), "%s: no more claims than hosts", cl)
	}
}

// startReplicas builds the hub and runs two replicas on the hub plane with
// an 8 s leader Lease, serving metrics on addrs; leader is the index of the
// one leading, -1 while none does.
func startReplicas(t *testing.T, g *WithT, f *planes.Fleet) (replicas []*planes.Process, addrs []string, leader func() int) {
	bin := filepath.Join(t.TempDir(), "hostfleet-hub")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "go build: %s", out)
	for _, name := range []string{"hub-a", "hub-b"} {
		addr := planes.FreeAddr(t)
		p, err := f.Run(name, "hub", bin, []string{"--kubeconfig=" + f.Plane("hub").Kubeconfig, "--addon-manager=false",
			"--leader-election-namespace=default", "--metrics-bind-address=" + addr, "--metrics-secure=false",
			"--leader-elect-lease-duration=8s", "--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=1s"})
		g.Expect(err).NotTo(HaveOccurred())
		replicas, addrs = append(replicas, p), append(addrs, addr)
	}
	return replicas, addrs, func() int {
		for i, r := range replicas {
			if !r.Exited() && leads(addrs[i]) {
				return i
			}
		}
		return -1
	}
}

// fleet: tenant a on set lab, five clusters whose HostInventories have
// perCluster free hosts each (no agent: nothing binds, the deadline is far).
func fleet(g *WithT, hub client.Client) {
	ctx := context.Background()
	objs := []client.Object{&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}}}
	for i := range clusters {
		c := fmt.Sprintf("c%d", i)
		objs = append(objs, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}})
	}
	for _, o := range objs {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	for i := range clusters {
		c := fmt.Sprintf("c%d", i)
		inv := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: c, Name: c}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: c}}
		g.Expect(hub.Create(ctx, inv)).To(Succeed())
		inv.Status.Pools = []hostfleetv1alpha1.HostPool{{Namespaces: []string{"tenant-a"}, Total: perCluster, Available: perCluster}}
		inv.Status.LastUpdated = &metav1.Time{Time: time.Now()}
		g.Expect(hub.Status().Update(ctx, inv)).To(Succeed())
	}
}

// metric is the first line of a replica's metrics (plain HTTP) that starts
// with prefix; "" if none.
func metric(addr, prefix string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), prefix) {
			return s.Text()
		}
	}
	return ""
}

// leads reads a replica's leader_election_master_status (plain HTTP).
func leads(addr string) bool {
	return metric(addr, `leader_election_master_status{name="hostfleet-hub"} 1`) != ""
}

// placements records when each claim was first seen placed, and where.
type placements struct {
	mu sync.Mutex
	at map[string]time.Time
	on map[string]string
}

func (p *placements) count() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.at) }

func (p *placements) cluster(name string) string { p.mu.Lock(); defer p.mu.Unlock(); return p.on[name] }

func (p *placements) countBefore(t time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, at := range p.at {
		if at.Before(t) {
			n++
		}
	}
	return n
}

// firstAfter is the first placement after t.
func (p *placements) firstAfter(t time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first time.Time
	for _, at := range p.at {
		if at.After(t) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// watchPlacements lists the claims every 100 ms until the test ends.
func watchPlacements(t *testing.T, g *WithT, hub client.Client) *placements {
	p := &placements{at: map[string]time.Time{}, on: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var list metal3api.HostClaimList
			if err := hub.List(ctx, &list, client.InNamespace("tenant-a")); err == nil {
				now := time.Now()
				p.mu.Lock()
				for _, c := range list.Items {
					if cl := c.Labels[hostfleetv1alpha1.LabelCluster]; cl != "" && p.on[c.Name] == "" {
						p.at[c.Name], p.on[c.Name] = now, cl
					}
				}
				p.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return p
}
