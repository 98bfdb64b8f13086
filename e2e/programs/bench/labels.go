package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

const rackLabel = "rack.example.com/rack"

// runLabels measures label sync's two hops: a host label changed on the
// infrastructure plane, then seen on the hub claim (the infrastructure
// agent's hop, the baseline) and on the Node of the workload plane (the
// workload agent's hop after it). Changes are made one at a time, on
// hosts in turn, each waited for on both before the next.
func runLabels(hosts, changes int) error {
	ctx := context.Background()
	f, stop, err := startPlanes(ctx, "hub", "infra-1", "wl")
	if err != nil {
		return err
	}
	defer stop()
	hub, infra, wl := f.Plane("hub").Client, f.Plane("infra-1").Client, f.Plane("wl").Client
	fmt.Printf("\nsetting up %d hosts, claims and Nodes\n", hosts)
	if err := labelsFleet(ctx, hub, infra, wl, hosts); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 2)
	for _, o := range []*app.Options{
		labelsAgent("infra-1", nil),
		labelsAgent("wl", func(o *app.Options) {
			o.Role, o.ServedNamespaces, o.InProcess = hostfleetv1alpha1.RoleWorkload, []string{"tenant-a", "wl"}, true
		}),
	} {
		a, err := app.New(ctx, f.Plane("hub").Config, f.Plane(o.ClusterName).Config, o)
		if err != nil {
			return err
		}
		go func() { done <- a.Manager.Start(runCtx) }()
	}
	start := time.Now()
	for i := range hosts {
		if _, _, err := waitLabel(ctx, hub, wl, i, "start", time.Now(), done); err != nil {
			return err
		}
	}
	fmt.Printf("  %d claims bound and their Nodes labelled in %s\n", hosts, time.Since(start).Round(10*time.Millisecond))

	var toClaim, toNode []time.Duration
	for k := range changes {
		i, value := k%hosts, fmt.Sprintf("r%d", k)
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%03d", i)}}
		changed := time.Now()
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"`+rackLabel+`":"`+value+`"}}}`))
		if err := infra.Patch(ctx, h, patch); err != nil {
			return err
		}
		c, n, err := waitLabel(ctx, hub, wl, i, value, changed, done)
		if err != nil {
			return err
		}
		toClaim, toNode = append(toClaim, c), append(toNode, n)
	}
	cancel()
	for range 2 {
		<-done
	}
	fmt.Printf("\nlabel sync, %d host label changes over %d hosts, one at a time\n", changes, hosts)
	fmt.Printf("  baseline: host → hub claim (the infrastructure agent's hop) median %s, p99 %s\n", quantile(toClaim, 0.5), quantile(toClaim, 0.99))
	fmt.Printf("  agent:    host → Node on the workload cluster            median %s, p99 %s\n", quantile(toNode, 0.5), quantile(toNode, 0.99))
	fmt.Printf("  ratio:    %.2f (medians, Node over claim)\n", float64(quantile(toNode, 0.5))/float64(quantile(toClaim, 0.5)))
	return nil
}

// labelsFleet makes what the hub's controllers would for tenant a, served
// by infra-1 with wl its only workload cluster, and hosts hosts on infra-1,
// each with a claim selecting it and a Node on wl whose providerID names
// the claim.
func labelsFleet(ctx context.Context, hub, infra, wl client.Client, hosts int) error {
	if err := create(ctx, infra,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "all"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: ".*"}}}); err != nil {
		return err
	}
	a := hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{"tenant-a"}, LabelSyncPrefixes: []string{"rack.example.com"}}
	onlyA := a
	onlyA.OnlyWorkloadCluster = true
	wlTenancy := planes.Tenancy("wl")
	wlTenancy.Spec.WorkloadTenants = []hostfleetv1alpha1.ServedTenant{onlyA}
	if err := create(ctx, hub,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wl"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		planes.Tenancy("infra-1", a), wlTenancy); err != nil {
		return err
	}
	for i := range hosts {
		name := fmt.Sprintf("h%03d", i)
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name, Labels: map[string]string{"host": name, rackLabel: "start"}},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 10000+i), CredentialsName: "bmc"}}}
		if err := infra.Create(ctx, h); err != nil {
			return err
		}
		if err := planes.MarkAvailable(ctx, infra, h); err != nil {
			return err
		}
		claim := fmt.Sprintf("c%03d", i)
		if err := create(ctx, hub, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: claim,
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, Annotations: planes.PlacedBy()},
			Spec: metal3api.HostClaimSpec{HostSelector: metal3api.HostSelector{MatchLabels: map[string]string{"host": name}}}}); err != nil {
			return err
		}
		if err := create(ctx, wl, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-" + claim},
			Spec: corev1.NodeSpec{ProviderID: "metal3://tenant-a/" + claim + "/m3m"}}); err != nil {
			return err
		}
	}
	return nil
}

func labelsAgent(cluster string, opt func(*app.Options)) *app.Options {
	o := app.NewOptions()
	o.ClusterName, o.LeaderElect, o.HealthLease, o.InProcess = cluster, false, false, true
	if opt != nil {
		opt(o)
	}
	return o
}

// waitLabel polls claim c<i> and Node n-c<i> every 5 ms until each carries
// value, and says when each did, from since.
func waitLabel(ctx context.Context, hub, wl client.Client, i int, value string, since time.Time, done <-chan error) (toClaim, toNode time.Duration, err error) {
	claim := fmt.Sprintf("c%03d", i)
	for toClaim == 0 || toNode == 0 {
		if toClaim == 0 {
			c := &metal3api.HostClaim{}
			if err := hub.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: claim}, c); err != nil {
				return 0, 0, err
			}
			if c.Labels[rackLabel] == value {
				toClaim = time.Since(since)
			}
		}
		if toNode == 0 {
			n := &corev1.Node{}
			if err := wl.Get(ctx, client.ObjectKey{Name: "n-" + claim}, n); err != nil {
				return 0, 0, err
			}
			if n.Labels[rackLabel] == value {
				toNode = time.Since(since)
			}
		}
		select {
		case err := <-done:
			return 0, 0, fmt.Errorf("an agent stopped: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Since(since) > 2*time.Minute {
			return 0, 0, fmt.Errorf("claim %s or its Node did not get %s=%s in 2 minutes", claim, rackLabel, value)
		}
	}
	return toClaim, toNode, nil
}

// quantile is the q-quantile of ds (nearest rank), rounded to the millisecond.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return s[i].Round(time.Millisecond)
}

func create(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}
