package app

import (
	"context"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"open-cluster-management.io/addon-framework/pkg/lease"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/agent/claim"
	"github.com/hostfleet/hostfleet/agent/firmwaregate"
	"github.com/hostfleet/hostfleet/agent/heal"
	"github.com/hostfleet/hostfleet/agent/maintenance"
	"github.com/hostfleet/hostfleet/agent/metrics"
	"github.com/hostfleet/hostfleet/agent/placedcache"
	"github.com/hostfleet/hostfleet/agent/servedtenants"
	"github.com/hostfleet/hostfleet/hub/api/erase"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/fence"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// setupControllers adds the claim and orphan controllers (hub claims, and
// local ones with --local-claims), the maintenance controller and the BMC
// driver, all writing hosts through the agent's one fence, and returns
// whether the cache shows every host write of the claim controllers.
func setupControllers(ctx context.Context, mgr ctrl.Manager, managed cluster.Cluster, o *Options, writes *fence.Fence) (func(context.Context) bool, error) {
	if err := claim.IndexHosts(ctx, managed); err != nil {
		return nil, err
	}
	hostEvents := managed.GetEventRecorder("hostfleet-agent")
	eraser := bmcdriver.Eraser{Image: o.EraseImage, PXE: o.ErasePXE, Timeout: o.EraseTimeout}
	minErase, _ := erase.Parse(o.Erase) // validated
	erases := claim.Erase{Min: minErase, Support: eraser.Supports}
	if o.BMHDriver != "none" {
		erases.Driven = func(h *metal3api.BareMetalHost) bool {
			return bmcdriver.DrivenIn(h, o.BMHDriver == "all", o.BMCNamespaces)
		}
	}
	claims := &claim.Reconciler{
		Claims:        mgr.GetClient(),
		ClaimReader:   mgr.GetAPIReader(),
		Managed:       managed.GetClient(),
		ManagedReader: managed.GetAPIReader(),
		Recorder:      mgr.GetEventRecorder("hostfleet-agent"),
		Consumer:      binder.HubConsumer(o.HubName),
		ClusterName:   o.ClusterName,
		RetryAfter:    o.RetryAfter,
		Resync:        o.Resync,
		Erase:         erases,
		Healing: claim.Healing{FenceTimeout: o.FenceTimeout,
			Breaker: heal.Breaker{MaxPercent: o.BreakerMaxPercent, Window: o.BreakerWindow}},
		Fence: writes,
	}
	reconcilers := []*claim.Reconciler{claims}
	if o.LocalClaims {
		// Upstream HostClaims on the managed cluster itself (forwarded
		// claims arrive this way), bound by the same code.
		local := *claims
		local.Claims, local.ClaimReader, local.Recorder, local.Consumer = managed.GetClient(), managed.GetAPIReader(), hostEvents, binder.LocalConsumer()
		local.Hub, local.HubReader, local.LocalNamespaces = mgr.GetClient(), mgr.GetAPIReader(), o.LocalClaimNamespaces
		reconcilers = append(reconcilers, &local)
	}
	for _, r := range reconcilers {
		if err := r.SetupWithManager(ctx, mgr, setup.Options{Managed: managed, Concurrency: o.Concurrency}); err != nil {
			return nil, fmt.Errorf("claim controller (%s): %w", r.Serving(), err)
		}
		if err := (&claim.Orphans{Reconciler: r, Grace: o.OrphanGrace, HostRecorder: hostEvents}).SetupWithManager(ctx, mgr, setup.Options{Managed: managed}); err != nil {
			return nil, fmt.Errorf("orphaned host controller (%s): %w", r.Serving(), err)
		}
	}
	if err := (&maintenance.Reconciler{Hub: mgr.GetClient(), Managed: managed.GetClient(), Fence: writes, ClusterName: o.ClusterName, LocalClaims: o.LocalClaims}).
		SetupWithManager(ctx, mgr, setup.Options{Managed: managed}); err != nil {
		return nil, fmt.Errorf("maintenance controller: %w", err)
	}
	baselines := func(ctx context.Context) ([]hostfleetv1alpha1.FirmwareBaseline, error) {
		ct, err := servedtenants.Get(ctx, mgr.GetClient(), o.ClusterName)
		return ct.Baselines(), err
	}
	images := o.firmwareImages() // one cache of verified images for both gates
	if err := (&firmwaregate.Reconciler{Client: managed.GetClient(), Baselines: baselines, Images: images, Driven: erases.Driven, Recorder: hostEvents, Fence: writes}).
		SetupWithManager(ctx, mgr, setup.Options{Managed: managed}); err != nil {
		return nil, fmt.Errorf("release gate: %w", err)
	}
	if o.BMHDriver != "none" {
		if err := (&bmcdriver.Reconciler{Client: managed.GetClient(), Secrets: managed.GetAPIReader(), All: o.BMHDriver == "all", Namespaces: o.BMCNamespaces,
			Poll: o.BMCPoll, Recorder: hostEvents, Eraser: eraser, Fence: writes,
			Baselines: baselines,
			Images:    images,
			Power:     bmcdriver.Timing{Wait: o.BMCPowerWait, SoftOff: o.BMCSoftPowerOff},
			BMC: bmc.Options{Timeout: o.BMCTimeout, IpmitoolPath: o.Ipmitool, Logger: ctrl.Log.WithName("bmc"),
				Observe: metrics.ObserveBMC(o.ClusterName)},
		}).SetupWithManager(ctx, mgr, setup.Options{Managed: managed, Concurrency: o.BMCWorkers}); err != nil {
			return nil, fmt.Errorf("BMC driver: %w", err)
		}
	}
	return func(ctx context.Context) bool {
		for _, r := range reconcilers {
			if !r.HostWritesSeen(ctx) {
				return false
			}
		}
		return true
	}, nil
}

// addHealthLease keeps the add-on's health Lease (every replica keeps it
// while the managed cluster answers), where OCM's registration agent reads
// it: on the managed cluster, or in Hosted mode on the hosting cluster.
func addHealthLease(mgr ctrl.Manager, hubCfg, managedCfg *rest.Config, o *Options) error {
	leaseCfg, leaseNS := managedCfg, o.AgentNamespace
	if o.BootstrapManagedKubeconfig != "" {
		cfg, err := kubeconfigOrDefault(o.HostingKubeconfig, "hosting cluster")
		if err != nil {
			return err
		}
		leaseCfg, leaseNS = cfg, o.HostingNamespace
	}
	kube, err := kubernetes.NewForConfig(leaseCfg)
	if err != nil {
		return err
	}
	updater := lease.NewLeaseUpdater(kube, hostfleetv1alpha1.AddonName, leaseNS).WithHubLeaseConfig(hubCfg, o.ClusterName)
	if err := mgr.Add(healthLease{updater}); err != nil {
		return err
	}
	if o.LeaseOwner != "" {
		leases := []string{hostfleetv1alpha1.AddonName}
		if o.LeaderElect && o.BootstrapManagedKubeconfig == "" {
			leases = append(leases, leaderElectionID(o.ClusterName)) // beside it, in the same namespace
		}
		if err := mgr.Add(leaseOwner{client: kube, namespace: leaseNS, serviceAccount: o.LeaseOwner, leases: leases, every: 5 * time.Second}); err != nil {
			return err
		}
	}
	return nil
}

// leaderElectionID names the agent replicas' leader election Lease on the
// managed cluster, in the agent's namespace.
func leaderElectionID(cluster string) string { return hostfleetv1alpha1.AddonName + "-" + cluster }

// healthLease keeps the add-on's health Lease on every replica.
type healthLease struct{ lease.LeaseUpdater }

// readsPlaced says whether the agent reads its hub claims from the
// PlacedClaims of its cluster's namespace.
func readsPlaced(o *Options) bool {
	return o.Role != hostfleetv1alpha1.RoleWorkload && o.ClaimWatch == "placed"
}

// placedSource is where an agent with --claim-watch=placed reads its hub
// claims: the PlacedClaims of its cluster's namespace, of the claims in
// the namespaces it serves.
func placedSource(hubCfg *rest.Config, scheme *runtime.Scheme, o *Options) (*placedcache.Source, error) {
	hc, err := rest.HTTPClientFor(hubCfg)
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	mapper, err := NewRESTMapper(hubCfg, hc)
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(hubCfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("hub client: %w", err)
	}
	return &placedcache.Source{Client: c, Cluster: o.ClusterName, Namespaces: o.ServedNamespaces}, nil
}

func (h healthLease) Start(ctx context.Context) error {
	h.LeaseUpdater.Start(ctx)
	return nil
}

func (healthLease) NeedLeaderElection() bool { return false }
