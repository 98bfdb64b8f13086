package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/manifests"
)

// stormClusters is the size of the storm's fleet.
var stormClusters = flag.Int("storm-clusters", 1000, "storm: clusters (each an agent) connected when the hub API server restarts")

// runFleetBench runs the scale benchmark at each of counts ("100,1000"), or
// the storm.
func runFleetBench(which, counts string, hostsPer, infraPlanes int, rate float64, hubBin string) error {
	if which == "storm" {
		return runStorm(*stormClusters, hostsPer, infraPlanes, hubBin)
	}
	cs, err := parseCounts(counts)
	if err != nil {
		return err
	}
	return runScale(cs, hostsPer, infraPlanes, rate, hubBin)
}

// stormWindow is how long a storm is watched after the hub API server
// answers again.
var stormWindow = 60 * time.Second

// hubServiceAccount is the user the hub controller has on a real hub (the
// operator's ServiceAccount), which the storm's hub runs as: an
// administrator's requests are exempt from priority and fairness.
const hubServiceAccount = "system:serviceaccount:hostfleet-system:hostfleet-hub"

// storm is what one restart of the hub API server did to its clients.
type storm struct {
	flowSchemas bool
	// down is how long the API server did not answer.
	down time.Duration
	// tenant are the latencies of a tenant's `get hostclaims` (a list, one
	// after the other) in the window after the API server answered again,
	// early those of the first stormEarly; tenantFailed those that failed.
	tenant, early []time.Duration
	tenantFailed  int
	// scheduled are the hub's created→Scheduled latencies (as a watch sees
	// them) of claims created in the window, one a second: the hub
	// controller's watches at work.
	scheduled []time.Duration
	// unscheduled counts those not Scheduled by the end of the window.
	unscheduled int
	// requests are the API server's requests by priority level from its
	// restart to the end of the window, rejected those it refused (429).
	requests, rejected map[string]float64
}

// runStorm sets up the scale benchmark's fleet, with the hub controller as
// its ServiceAccount, and restarts the hub API server twice with every
// agent connected: without Hostfleet's flow schemas, then with them.
func runStorm(clusters, hostsPer, infraPlanes int, hubBin string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fmt.Printf("\nstorm: %d clusters × %d hosts on %d infrastructure planes; the hub API server restarted (SIGKILL) with every agent connected, without then with Hostfleet's flow schemas\n",
		clusters, hostsPer, infraPlanes)
	b := &scaleBench{clusters: clusters, hostsPer: hostsPer, infraPlanes: infraPlanes, names: []string{"hub"}, hubAsServiceAccount: true}
	for i := 1; i <= infraPlanes; i++ {
		b.names = append(b.names, fmt.Sprintf("infra-%d", i))
	}
	began := time.Now()
	stop, err := b.start(ctx, hubBin)
	if err != nil {
		return err
	}
	defer stop()
	if err := b.setUpClusters(ctx); err != nil {
		return err
	}
	if err := b.startAgents(ctx); err != nil {
		return err
	}
	tenant, err := b.tenantConfig(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("  fleet up in %s\n", time.Since(began).Round(time.Second))
	var storms []storm
	for _, withSchemas := range []bool{false, true} {
		if withSchemas {
			if err := b.installFlowSchemas(ctx); err != nil {
				return err
			}
		}
		s, err := b.storm(ctx, tenant, withSchemas)
		if err != nil {
			return b.hubFailed(err)
		}
		storms = append(storms, s)
		printStorms(storms)
	}
	return nil
}

// tenantConfig is a tenant's user, allowed to read the claims of the
// benchmark's tenant namespace: neither exempt nor an agent.
func (b *scaleBench) tenantConfig(ctx context.Context) (*rest.Config, error) {
	const user = "tenant-fleet-user"
	rules := []rbacv1.PolicyRule{{APIGroups: []string{metal3api.GroupVersion.Group}, Resources: []string{"hostclaims"}, Verbs: []string{"get", "list"}}}
	for _, o := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: scaleNS, Name: "tenant"}, Rules: rules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: scaleNS, Name: "tenant"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}},
	} {
		if err := b.hub.Create(ctx, o); err != nil {
			return nil, err
		}
	}
	return b.f.AddUser("hub", user, "system:authenticated")
}

// hubKubeconfig is the kubeconfig the hub controller runs with: the
// administrator's, or (hubAsServiceAccount) its ServiceAccount's user, an
// administrator by binding but not exempt from priority and fairness.
func (b *scaleBench) hubKubeconfig(ctx context.Context) (string, error) {
	if !b.hubAsServiceAccount {
		return b.hubPlane.Kubeconfig, nil
	}
	if err := b.hub.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "hostfleet-hub-bench"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: hubServiceAccount}}}); err != nil {
		return "", err
	}
	cfg, err := b.f.AddUser("hub", hubServiceAccount, "system:serviceaccounts", "system:serviceaccounts:hostfleet-system", "system:authenticated")
	if err != nil {
		return "", err
	}
	path := filepath.Join(b.f.Dir, "hostfleet-hub.kubeconfig")
	return path, planes.WriteKubeconfig(path, cfg)
}

// installFlowSchemas applies Hostfleet's flow schemas, as the operator
// does, and waits until the API server uses them.
func (b *scaleBench) installFlowSchemas(ctx context.Context) error {
	docs, err := manifests.FlowControl()
	if err != nil {
		return err
	}
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return err
		}
		// Tried again: just after a restart, discovery may still lack the
		// CRDs' groups.
		if err := waitFor(ctx, time.Minute, "create "+u.GetName(), func() (bool, error) {
			err := b.hub.Create(ctx, u.DeepCopy())
			return err == nil || apierrors.IsAlreadyExists(err), nil
		}); err != nil {
			return err
		}
	}
	return waitFor(ctx, time.Minute, "the API server to use the flow schemas", func() (bool, error) {
		for _, name := range []string{"hostfleet-agents", "hostfleet-hub"} {
			fs := &flowcontrolv1.FlowSchema{}
			if err := b.hub.Get(ctx, client.ObjectKey{Name: name}, fs); err != nil {
				return false, err
			}
			c := findFlowCondition(fs.Status.Conditions, flowcontrolv1.FlowSchemaConditionDangling)
			if c == nil || c.Status != flowcontrolv1.ConditionFalse {
				return false, nil
			}
		}
		return true, nil
	})
}

func findFlowCondition(conds []flowcontrolv1.FlowSchemaCondition, t flowcontrolv1.FlowSchemaConditionType) *flowcontrolv1.FlowSchemaCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// storm restarts the hub API server, then for stormWindow after it answers
// has a tenant list the claims of its namespace one after the other and
// creates a claim a second, timed until the hub schedules it.
func (b *scaleBench) storm(ctx context.Context, tenant *rest.Config, withSchemas bool) (storm, error) {
	s := storm{flowSchemas: withSchemas}
	tc, err := client.New(tenant, client.Options{Scheme: b.hub.Scheme()})
	if err != nil {
		return s, err
	}
	if s.down, err = b.f.RestartAPIServer(ctx, "hub"); err != nil {
		return s, err
	}
	seen, err := b.watchScheduled(ctx)
	if err != nil {
		return s, err
	}
	wctx, stop := context.WithTimeout(ctx, stormWindow)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.tenant, s.early, s.tenantFailed = listLoop(wctx, tc) }()
	var probes map[string]time.Time
	go func() { defer wg.Done(); probes = b.probeLoop(wctx, withSchemas) }()
	wg.Wait()
	counts, err := flowRequests(ctx, b.hubPlane.Config)
	if err != nil {
		return s, err
	}
	s.requests, s.rejected = counts.dispatched, counts.rejected // since the restart
	s.scheduled, s.unscheduled = scheduledLatencies(ctx, probes, seen)
	// The probes go, so that the next storm's tenant lists as many claims.
	if err := b.hub.DeleteAllOf(ctx, &metal3api.HostClaim{}, client.InNamespace(scaleNS)); err != nil {
		return s, err
	}
	return s, waitFor(ctx, 2*time.Minute, "the probe claims to be released", func() (bool, error) {
		var list metal3api.HostClaimList
		err := b.hub.List(ctx, &list, client.InNamespace(scaleNS))
		return err == nil && len(list.Items) == 0, err
	})
}

// watchScheduled watches the claims of the tenant namespace and returns
// when it first saw each Scheduled, until ctx ends.
func (b *scaleBench) watchScheduled(ctx context.Context) (*sync.Map, error) {
	wc, err := client.NewWithWatch(b.hubPlane.Config, client.Options{Scheme: b.hub.Scheme()})
	if err != nil {
		return nil, err
	}
	w, err := wc.Watch(ctx, &metal3api.HostClaimList{}, client.InNamespace(scaleNS))
	if err != nil {
		return nil, err
	}
	seen := &sync.Map{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if c, ok := ev.Object.(*metal3api.HostClaim); ok && meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled) {
				seen.LoadOrStore(c.Name, time.Now())
			}
		}
	}()
	return seen, nil
}

// stormEarly is the start of the window, when the agents come back.
const stormEarly = 15 * time.Second

// listLoop lists the tenant's claims, one request after the other, until
// ctx ends; early are the latencies of the requests of the first
// stormEarly.
func listLoop(ctx context.Context, c client.Client) (lat, early []time.Duration, failed int) {
	began := time.Now()
	for ctx.Err() == nil {
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := c.List(rctx, &metal3api.HostClaimList{}, client.InNamespace(scaleNS))
		cancel()
		switch {
		case ctx.Err() != nil:
		case err != nil:
			failed++
		default:
			lat = append(lat, time.Since(start))
			if start.Sub(began) < stormEarly {
				early = append(early, time.Since(start))
			}
		}
	}
	return lat, early, failed
}

// probeLoop creates a claim a second (as the administrator) until ctx ends
// and returns when each was created.
func (b *scaleBench) probeLoop(ctx context.Context, withSchemas bool) map[string]time.Time {
	created := map[string]time.Time{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return created
		case <-tick.C:
		}
		name := fmt.Sprintf("storm-%t-%03d", withSchemas, i)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		start := time.Now()
		if b.hub.Create(cctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: scaleNS, Name: name}}) == nil {
			created[name] = start
		}
		cancel()
	}
}

// scheduledLatencies waits up to 30 s for the probes to be seen Scheduled
// and returns their created→Scheduled times and how many were not.
func scheduledLatencies(ctx context.Context, created map[string]time.Time, seen *sync.Map) ([]time.Duration, int) {
	var lat []time.Duration
	missing := 0
	_ = waitFor(ctx, 30*time.Second, "the probes to be scheduled", func() (bool, error) {
		lat, missing = nil, 0
		for name, at := range created {
			t, ok := seen.Load(name)
			if !ok {
				missing++
				continue
			}
			lat = append(lat, t.(time.Time).Sub(at))
		}
		return missing == 0, nil
	})
	return lat, missing
}

// printStorms prints the storms side by side.
func printStorms(ss []storm) {
	row := func(name string, f func(s storm) string) {
		fmt.Printf("  %-46s", name)
		for _, s := range ss {
			fmt.Printf("  %-44s", f(s))
		}
		fmt.Println()
	}
	row("", func(s storm) string { return onOff(s.flowSchemas) })
	row("API server down (restart)", func(s storm) string { return s.down.Round(100 * time.Millisecond).String() })
	row("tenant get hostclaims, first 15 s p50/p99/max", func(s storm) string {
		return fmt.Sprintf("%s / %s / %s", pct(s.early, 50), pct(s.early, 99), pct(s.early, 100))
	})
	row("tenant get hostclaims, 60 s p50/p99/max", func(s storm) string {
		return fmt.Sprintf("%s / %s / %s", pct(s.tenant, 50), pct(s.tenant, 99), pct(s.tenant, 100))
	})
	row("tenant requests answered / failed", func(s storm) string { return fmt.Sprintf("%d / %d", len(s.tenant), s.tenantFailed) })
	row("claims created → Scheduled p50 / p99 / max", func(s storm) string {
		return fmt.Sprintf("%s / %s / %s", pct(s.scheduled, 50), pct(s.scheduled, 99), pct(s.scheduled, 100))
	})
	row("claims not Scheduled 30 s after the window", func(s storm) string { return fmt.Sprint(s.unscheduled) })
	for _, s := range ss {
		fmt.Printf("  requests by priority level, %s: %s; rejected (429): %s\n", onOff(s.flowSchemas), levels(s.requests), levels(s.rejected))
	}
}

func onOff(flowSchemas bool) string {
	if flowSchemas {
		return "with Hostfleet's flow schemas"
	}
	return "without"
}

// pct is the p-th percentile of d (100: the largest), rounded.
func pct(d []time.Duration, p int) string {
	if len(d) == 0 {
		return "-"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := min(len(s)-1, len(s)*p/100)
	return s[i].Round(time.Millisecond).String()
}

// levels prints the counts of the levels that have any, largest first.
func levels(m map[string]float64) string {
	type kv struct {
		k string
		v float64
	}
	var out []kv
	for k, v := range m {
		if v >= 1 {
			out = append(out, kv{k, v})
		}
	}
	slices.SortFunc(out, func(a, b kv) int { return int(b.v - a.v) })
	s := ""
	for _, e := range out {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %.0f", e.k, e.v)
	}
	if s == "" {
		return "none"
	}
	return s
}
