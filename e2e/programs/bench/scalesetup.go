package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/addon"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// start starts the planes and the hub controller, in its own process: its
// CPU and memory are its own. stop stops them.
func (b *scaleBench) start(ctx context.Context, hubBin string) (stop func(), _ error) {
	f, stopPlanes, err := startPlanes(ctx, b.names...)
	if err != nil {
		return nil, err
	}
	b.f, b.hubPlane = f, f.Plane("hub")
	b.hub = b.hubPlane.Client
	kubeconfig, err := b.hubKubeconfig(ctx)
	if err != nil {
		stopPlanes()
		return nil, err
	}
	b.hubCmd = exec.Command(hubBin, "--kubeconfig", kubeconfig, "--addon-manager=false", "--leader-elect=false",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--pprof-bind-address="+*hubPprof,
		fmt.Sprintf("--placed-claims=%t", *scaleClaimWatch == "placed"))
	b.hubCmd.Stdout, b.hubCmd.Stderr = &b.hubOut, &b.hubOut
	var logFile *os.File
	if *keepLogs {
		// Its decisions too (V(1)), beside the planes' logs.
		b.hubCmd.Args = append(b.hubCmd.Args, "--zap-log-level=debug")
		if logFile, err = os.Create(filepath.Join(f.Dir, "hostfleet-hub.log")); err != nil {
			stopPlanes()
			return nil, err
		}
		b.hubCmd.Stdout, b.hubCmd.Stderr = io.MultiWriter(&b.hubOut, logFile), io.MultiWriter(&b.hubOut, logFile)
	}
	if err := b.hubCmd.Start(); err != nil {
		stopPlanes()
		return nil, fmt.Errorf("start %s (make bench-scale builds it): %w", hubBin, err)
	}
	return func() {
		_ = b.hubCmd.Process.Signal(syscall.SIGTERM)
		_ = b.hubCmd.Wait()
		if logFile != nil {
			_ = logFile.Close()
		}
		stopPlanes()
	}, nil
}

// setUpClusters makes the tenant, and every cluster with its add-on
// identity on the hub and its hosts on an infrastructure plane; then waits
// for the hub to count them.
func (b *scaleBench) setUpClusters(ctx context.Context) error {
	fmt.Printf("  %d clusters: ManagedClusters, add-on identities, hosts\n", b.clusters)
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: scaleTenant}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "fleet"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNS, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: scaleTenant}}},
	} {
		if err := b.hub.Create(ctx, o); err != nil {
			return err
		}
	}
	kube, err := kubernetes.NewForConfig(b.hubPlane.Config)
	if err != nil {
		return err
	}
	b.agentCfgs = make([]*rest.Config, b.clusters)
	// The first cluster alone: it creates the ClusterRoles all share.
	if err := b.setUpCluster(ctx, kube, 0); err != nil {
		return err
	}
	if err := parallel(b.clusters-1, 16, func(i int) error { return b.setUpCluster(ctx, kube, i+1) }); err != nil {
		return err
	}
	if err := waitFor(ctx, 5*time.Minute, "the tenant to count every cluster", func() (bool, error) {
		t := &hostfleetv1alpha1.Tenant{}
		if err := b.hub.Get(ctx, client.ObjectKey{Name: scaleTenant}, t); err != nil {
			return false, err
		}
		return len(t.Status.Clusters) == b.clusters, nil
	}); err != nil {
		return b.hubFailed(err)
	}
	if err := waitFor(ctx, 5*time.Minute, "every cluster's ClusterTenancy to name the tenant", func() (bool, error) {
		var list hostfleetv1alpha1.ClusterTenancyList
		if err := b.hub.List(ctx, &list); err != nil {
			return false, err
		}
		n := 0
		for i := range list.Items {
			if list.Items[i].Tenant(hostfleetv1alpha1.RoleInfrastructure, scaleTenant) != nil {
				n++
			}
		}
		return n == b.clusters, nil
	}); err != nil {
		return b.hubFailed(err)
	}
	return nil
}

// setUpCluster makes cluster i: its ManagedCluster (accepted, Available),
// what OCM's registration does for the add-on's CSR identity, and its
// namespace, policy and available hosts on its infrastructure plane.
func (b *scaleBench) setUpCluster(ctx context.Context, kube kubernetes.Interface, i int) error {
	name := b.clusterName(i)
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "fleet"}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	for _, o := range []client.Object{mc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}} {
		if err := b.hub.Create(ctx, o); err != nil {
			return err
		}
	}
	if err := planes.SetClusterAvailable(ctx, b.hub, name, metav1.ConditionTrue); err != nil {
		return err
	}
	if *scaleOCMBindings {
		if err := ocmRegistrationRBAC(ctx, b.hub, name); err != nil {
			return err
		}
	}
	mca := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: hostfleetv1alpha1.AddonName}}
	if err := b.hub.Create(ctx, mca); err != nil {
		return err
	}
	subject := addonv1beta1.KubeClientSubject{BaseSubject: addonv1beta1.BaseSubject{
		User: hostfleetv1alpha1.AgentHubUser(name), Groups: []string{hostfleetv1alpha1.AgentHubGroup(name), hostfleetv1alpha1.AgentSharedGroup}}}
	mca.Status.Registrations = []addonv1beta1.RegistrationConfig{{Type: addonv1beta1.KubeClient,
		KubeClient: &addonv1beta1.KubeClientConfig{Subject: subject}}}
	if err := addon.Permissions(kube)(ctx, mc, mca); err != nil {
		return err
	}
	cfg, err := b.f.AddUser("hub", subject.User, append(subject.Groups, "system:authenticated")...)
	if err != nil {
		return err
	}
	b.agentCfgs[i] = cfg // each i is its own slot
	infra := b.infraOf(i).Client
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "tenants"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{Names: []string{scaleNS}}}},
	} {
		if err := infra.Create(ctx, o); err != nil {
			return err
		}
	}
	for h := 0; h < b.hostsPer; h++ {
		bmh := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: fmt.Sprintf("h%02d", h)},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://10.%d.%d.%d", i/250, i%250, h), CredentialsName: "bmc"}}}
		if err := infra.Create(ctx, bmh); err != nil {
			return err
		}
		if err := planes.MarkAvailable(ctx, infra, bmh); err != nil {
			return err
		}
	}
	return nil
}

// startAgents runs every cluster's agent in this process, each with its
// cluster's hub identity, and waits for their HostInventories.
func (b *scaleBench) startAgents(ctx context.Context) error {
	fmt.Printf("  %d agents in this process, each with its cluster's hub identity\n", b.clusters)
	agentErrs := make(chan error, b.clusters)
	for i := 0; i < b.clusters; i++ {
		name := b.clusterName(i)
		o := app.NewOptions()
		o.ClusterName, o.ServedNamespaces, o.HostNamespaces = name, []string{scaleNS}, []string{name}
		o.BMHDriver, o.LeaderElect, o.HealthLease, o.InProcess = "none", false, false, true
		o.MetricsAddr, o.HealthAddr = "0", "0"
		o.Concurrency = 1
		o.ClaimWatch = *scaleClaimWatch
		managedCfg := rest.CopyConfig(b.infraOf(i).Config)
		hubCfg := rest.CopyConfig(b.agentCfgs[i])
		hubCfg.QPS, hubCfg.Burst = o.QPS, o.Burst
		managedCfg.QPS, managedCfg.Burst = o.ManagedQPS, o.ManagedBurst
		a, err := app.New(ctx, hubCfg, managedCfg, o)
		if err != nil {
			return fmt.Errorf("agent %s: %w", name, err)
		}
		go func() {
			if err := a.Manager.Start(ctx); err != nil && ctx.Err() == nil {
				agentErrs <- fmt.Errorf("agent %s: %w", name, err)
			}
		}()
	}
	return waitFor(ctx, 10*time.Minute, "every cluster's HostInventory", func() (bool, error) {
		select {
		case err := <-agentErrs:
			return false, err
		default:
		}
		var invs hostfleetv1alpha1.HostInventoryList
		if err := b.hub.List(ctx, &invs); err != nil {
			return false, err
		}
		full := 0
		for _, inv := range invs.Items {
			if int(inv.Status.Available) == b.hostsPer {
				full++
			}
		}
		return full == b.clusters, nil
	})
}

// scaleOCMBindings makes each cluster's ClusterRole and ClusterRoleBinding
// as OCM's registration does on a real hub: RBAC walks every
// ClusterRoleBinding for each request no earlier one allows, so they cost
// each agent's and the hub controller's request more as the fleet grows.
var scaleOCMBindings = flag.Bool("scale-ocm-bindings", true, "scale: make each cluster's ClusterRole and ClusterRoleBinding open-cluster-management:managedcluster:<cluster>, as OCM's registration does on a real hub (RBAC walks every ClusterRoleBinding for each request no earlier one allows)")

// ocmRegistrationRBAC is what OCM's registration makes on the hub for an
// accepted cluster's registration agent (pkg/registration/hub/manifests/rbac).
func ocmRegistrationRBAC(ctx context.Context, hub client.Client, cluster string) error {
	name := "open-cluster-management:managedcluster:" + cluster
	labels := map[string]string{"open-cluster-management.io/cluster-name": cluster}
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get", "list", "watch"}},
			{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclusters"}, ResourceNames: []string{cluster}, Verbs: []string{"get", "list", "update", "watch"}},
			{APIGroups: []string{clusterv1.GroupName}, Resources: []string{"managedclusters/status"}, ResourceNames: []string{cluster}, Verbs: []string{"patch", "update"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{
				{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:open-cluster-management:" + cluster},
				{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "open-cluster-management:" + cluster},
			}},
	} {
		if err := hub.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}
