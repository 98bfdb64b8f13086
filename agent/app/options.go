package app

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	"github.com/hostfleet/hostfleet/agent/firmwareimage"
	"github.com/hostfleet/hostfleet/hub/api/erase"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/election"
)

// Options are the agent's flags.
type Options struct {
	// HubKubeconfig reaches the hub (the add-on's hub identity).
	HubKubeconfig string
	// ManagedKubeconfig reaches the managed (infrastructure) cluster. Empty
	// means the in-cluster configuration, or $KUBECONFIG.
	ManagedKubeconfig string
	// ClusterName is the managed cluster's name on the hub.
	ClusterName string
	// Role is "infrastructure" (bind the claims placed on the cluster to
	// its BareMetalHosts) or "workload" (copy the tenant's claim labels to
	// the cluster's Nodes).
	Role string
	// LabelSyncInterval is the workload role's full resync: Node labels
	// edited or deleted by hand are restored within it.
	LabelSyncInterval time.Duration
	// HubName identifies the hub on the hosts the agent binds.
	HubName string
	// Concurrency is the number of claims reconciled at once.
	Concurrency int
	// RetryAfter is how often a claim with no host is looked at again.
	RetryAfter time.Duration
	// Resync is how often a bound claim is looked at again.
	Resync time.Duration
	// LocalClaims also binds upstream HostClaims on the managed cluster
	// itself: those the hub forwards (hostfleet.io/source-claim-uid, in the
	// forwarder's hf- namespaces) and those of LocalClaimNamespaces. Never
	// one another HostClaim controller (baremetal-operator's) serves.
	LocalClaims bool
	// VerifyFirmwareImages fetches each firmware image a restore flashes
	// and checks it against its baseline's checksum first.
	VerifyFirmwareImages bool
	// LocalClaimNamespaces are namespaces of the managed cluster whose own
	// HostClaims the agent serves too, with LocalClaims; it reads their
	// data secrets there and nowhere else.
	LocalClaimNamespaces []string
	// FenceTimeout, BreakerMaxPercent and BreakerWindow tune the healing of
	// claims whose hosts fail (claim.Healing).
	FenceTimeout      time.Duration
	BreakerMaxPercent int
	BreakerWindow     time.Duration
	// OrphanGrace is how long the claim holding a host must be gone before
	// the agent releases the host.
	OrphanGrace time.Duration
	// ClaimScope is where the agent watches hub claims: "tenants" (the
	// namespaces of the tenants whose cluster set holds its cluster, which is
	// all its hub identity may read) or "all" (cluster-wide, for a hub
	// identity that may list claims everywhere).
	ClaimScope string
	// ClaimWatch is how the infrastructure role reads its hub claims: "label"
	// (a watch of the claims labelled with its cluster, which the API server
	// filters per watcher after sending it every claim event) or "placed" (the
	// PlacedClaims the hub keeps in its cluster's namespace: only its own
	// claims' events).
	ClaimWatch string
	// ServedNamespaces, when not nil, are the hub namespaces whose claims the
	// agent watches. Run sets it from the Tenants with ClaimScope "tenants";
	// nil watches every namespace.
	ServedNamespaces []string
	// HostNamespaces limits the agent to the BareMetalHosts,
	// HostDeployPolicies and HardwareData of these namespaces of the
	// managed cluster (several hubs, or several agents, sharing one
	// cluster). Empty: every namespace.
	HostNamespaces []string
	// BMHDriver chooses the BareMetalHosts the agent drives through their
	// BMCs: "annotated" (hostfleet.io/driver: bmclib), "all", or "none".
	BMHDriver string
	// BMCNamespaces limits the BMC driver to the hosts of these namespaces,
	// where alone it reads BMC credentials (and, in Hosted mode, is granted
	// to). Empty: every namespace, which Hosted mode refuses.
	BMCNamespaces []string
	// BMCWorkers bounds the hosts driven at once; BMCTimeout each BMC call;
	// BMCPoll how often a settled host's power is read again.
	BMCWorkers int
	BMCTimeout time.Duration
	BMCPoll    time.Duration
	// BMCPowerWait is how long a power command has to land before it is
	// sent again; BMCSoftPowerOff how long a soft power-off has before the
	// host is forced off.
	BMCPowerWait    time.Duration
	BMCSoftPowerOff time.Duration
	// Erase is the cluster's erase policy, the least any claim's host
	// erases at release (None, Metadata, Full); EraseImage the http(s)
	// URL of the erase image the BMC driver boots by Redfish virtual
	// media; ErasePXE: IPMI hosts erase by booting once from the network;
	// EraseTimeout bounds an erase.
	Erase        string
	EraseImage   string
	ErasePXE     bool
	EraseTimeout time.Duration
	// Ipmitool, when set, drives ipmi:// BMCs through this ipmitool binary
	// instead of the native IPMI client.
	Ipmitool string
	// InventoryInterval bounds how often the HostInventory is written.
	InventoryInterval time.Duration
	// QPS and Burst limit the hub client on the client side; ManagedQPS
	// and ManagedBurst the managed cluster's, which carries the hosts'
	// writes (four for each host provisioned).
	QPS, ManagedQPS     float32
	Burst, ManagedBurst int
	// MetricsAddr and HealthAddr are listen addresses; "0" disables.
	MetricsAddr string
	HealthAddr  string
	// MetricsSecure serves metrics over HTTPS to callers that the API
	// server of the cluster the agent runs in (the managed cluster; in
	// Hosted mode the hosting cluster) authenticates and allows get on the
	// non-resource URL /metrics.
	MetricsSecure bool

	// HealthLease keeps the OCM add-on health Lease hostfleet-agent where
	// OCM reads it: in AgentNamespace on the managed cluster, or, in Hosted
	// mode, in HostingNamespace on the hosting cluster (HostingKubeconfig).
	HealthLease bool
	// HostingKubeconfig reaches the hosting cluster in Hosted mode; empty
	// means the in-cluster config. HostingNamespace is the agent's namespace
	// there (default $POD_NAMESPACE).
	HostingKubeconfig string
	HostingNamespace  string
	// LeaseOwner is a ServiceAccount in the health Lease's namespace (the
	// agent pod's) made owner of the agent's Leases there, so that
	// removing the add-on removes them even from a shared namespace.
	LeaseOwner string

	// LeaderElect runs one active agent per cluster: replicas wait on a
	// Lease named hostfleet-agent-<cluster> in AgentNamespace on the
	// managed cluster.
	LeaderElect bool
	// Election times the leader election.
	Election election.Timing
	// AgentNamespace holds the agent's objects on the managed cluster: its
	// Lease and, in Hosted mode, its ServiceAccount.
	AgentNamespace string

	// BootstrapManagedKubeconfig is a cluster-admin kubeconfig of the
	// managed cluster (Hosted mode), used once to create the agent's
	// least-privilege identity there.
	BootstrapManagedKubeconfig string
	// TokenDir keeps the identity's token; TokenTTL is each token's life.
	TokenDir string
	TokenTTL time.Duration

	// InProcess allows several agents in one process (tests); it is not a
	// flag. Their controllers then share metric names.
	InProcess bool
}

// NewOptions returns the defaults, which work on a laptop.
func NewOptions() *Options {
	return &Options{
		HubName:              "hub",
		Role:                 hostfleetv1alpha1.RoleInfrastructure,
		LabelSyncInterval:    time.Minute,
		Concurrency:          4,
		RetryAfter:           30 * time.Second,
		Resync:               time.Minute,
		InventoryInterval:    10 * time.Second,
		QPS:                  50,
		Burst:                100,
		ManagedQPS:           200,
		ManagedBurst:         400,
		MetricsAddr:          "0",
		MetricsSecure:        true,
		HealthAddr:           "0",
		LeaderElect:          true,
		Election:             election.Default(),
		HealthLease:          true,
		BMHDriver:            "annotated",
		ClaimScope:           "tenants",
		ClaimWatch:           defaultClaimWatch(),
		OrphanGrace:          5 * time.Minute,
		FenceTimeout:         2 * time.Minute,
		BreakerMaxPercent:    40,
		BreakerWindow:        time.Hour,
		BMCWorkers:           500,
		BMCTimeout:           30 * time.Second,
		Erase:                string(hostfleetv1alpha1.EraseNone),
		EraseTimeout:         time.Hour,
		BMCPoll:              time.Minute,
		BMCPowerWait:         bmcdriver.DefaultTiming.Wait,
		BMCSoftPowerOff:      bmcdriver.DefaultTiming.SoftOff,
		AgentNamespace:       defaultNamespace(),
		HostingNamespace:     os.Getenv("POD_NAMESPACE"),
		TokenTTL:             time.Hour,
		VerifyFirmwareImages: true,
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.HubKubeconfig, "hub-kubeconfig", o.HubKubeconfig, "kubeconfig of the hub (required)")
	fs.StringVar(&o.ManagedKubeconfig, "managed-kubeconfig", o.ManagedKubeconfig,
		"kubeconfig of the managed cluster; empty means in-cluster config or $KUBECONFIG")
	fs.StringVar(&o.ClusterName, "cluster-name", o.ClusterName, "name of the managed cluster on the hub (required)")
	fs.StringVar(&o.Role, "role", o.Role,
		"infrastructure (bind the claims placed on this cluster to its BareMetalHosts) or workload (copy the tenant's claim labels to this cluster's Nodes; the ManagedCluster is labelled hostfleet.io/tenant)")
	fs.DurationVar(&o.LabelSyncInterval, "label-sync-interval", o.LabelSyncInterval,
		"workload role: how often every Node's synced labels are compared again (labels edited or deleted on a Node are restored within it)")
	fs.StringVar(&o.HubName, "hub-name", o.HubName, "name of the hub, written on bound hosts")
	fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "claims reconciled at once")
	fs.DurationVar(&o.RetryAfter, "retry-after", o.RetryAfter, "how often a claim waiting for a host is looked at again")
	fs.DurationVar(&o.Resync, "resync", o.Resync, "how often a bound claim is looked at again (picks up changed hub secrets)")
	fs.BoolVar(&o.LocalClaims, "local-claims", o.LocalClaims,
		"also bind the upstream HostClaims the hub forwards to this cluster (and those of --local-claim-namespaces); "+
			"a claim baremetal-operator's HostClaim controller serves is left to it")
	fs.BoolVar(&o.VerifyFirmwareImages, "verify-firmware-images", o.VerifyFirmwareImages,
		"fetch each firmware image the release gate flashes and check it against its FirmwareBaseline's checksum first (the agent must reach the image URLs); a mismatch holds the host")
	fs.StringSliceVar(&o.LocalClaimNamespaces, "local-claim-namespaces", o.LocalClaimNamespaces,
		"with --local-claims: namespaces of this cluster whose own HostClaims the agent serves too (it reads their secrets there; default: none, only forwarded claims)")
	fs.DurationVar(&o.InventoryInterval, "inventory-interval", o.InventoryInterval,
		"the HostInventory on the hub is recomputed and, if it changed, written at most this often")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "client-side queries per second to the hub's API server (shared by the fleet)")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "client-side burst to the hub's API server")
	fs.Float32Var(&o.ManagedQPS, "managed-kube-api-qps", o.ManagedQPS,
		"client-side queries per second to the managed cluster's API server (4 writes per host provisioned: 500 hosts at once need about 150)")
	fs.IntVar(&o.ManagedBurst, "managed-kube-api-burst", o.ManagedBurst, "client-side burst to the managed cluster's API server")
	fs.DurationVar(&o.OrphanGrace, "orphan-grace", o.OrphanGrace,
		"a host whose claim has been gone (deleted with its finalizer forced off, lost with a hub restore) this long is released")
	fs.StringVar(&o.ClaimScope, "claim-scope", o.ClaimScope,
		"where hub claims are watched: tenants (the namespaces of the tenants whose cluster set holds this cluster, followed as they change) or all (cluster-wide; the hub identity must be allowed to list claims everywhere)")
	fs.StringVar(&o.ClaimWatch, "claim-watch", o.ClaimWatch,
		"how hub claims are read: label (a watch of the claims labelled with this cluster, woken by every claim of the fleet) or placed (the PlacedClaims the hub keeps in this cluster's namespace, woken only by its own claims; needs a hub that writes them)")
	fs.StringVar(&o.BMHDriver, "bmh-driver", o.BMHDriver,
		"BareMetalHosts the agent drives itself through their BMCs (no baremetal-operator): annotated (hostfleet.io/driver: bmclib), all, or none")
	fs.StringSliceVar(&o.HostNamespaces, "host-namespaces", o.HostNamespaces,
		"namespaces of the managed cluster whose BareMetalHosts, HostDeployPolicies and HardwareData the agent sees (default: all), for a cluster shared with other agents")
	fs.StringSliceVar(&o.BMCNamespaces, "bmc-namespaces", o.BMCNamespaces,
		"namespaces whose hosts the BMC driver drives, and where alone it reads BMC credentials (default: all; required in Hosted mode unless --bmh-driver=none)")
	fs.IntVar(&o.BMCWorkers, "bmc-workers", o.BMCWorkers,
		"hosts driven at once, and so BMCs spoken to at once (a worker mostly waits on its BMC's inventory or media insert, a few seconds each, and costs a goroutine: see docs/benchmarks.md)")
	fs.DurationVar(&o.BMCTimeout, "bmc-timeout", o.BMCTimeout, "bound on each BMC call")
	fs.DurationVar(&o.BMCPoll, "bmc-poll", o.BMCPoll, "how often the power of a settled driven host is read again")
	fs.DurationVar(&o.BMCPowerWait, "bmc-power-wait", o.BMCPowerWait,
		"how long a power command has to land (the BMC reporting the new state) before it is sent again; each re-send waits twice as long, at most 5m")
	fs.DurationVar(&o.BMCSoftPowerOff, "bmc-soft-power-off-timeout", o.BMCSoftPowerOff,
		"how long a soft power-off (GracefulShutdown) has before the host is forced off")
	o.addHostFlags(fs)
	fs.StringVar(&o.Ipmitool, "ipmitool", o.Ipmitool, "drive ipmi:// BMCs through this ipmitool binary instead of the built-in IPMI 2.0 client (default: built-in)")
	fs.BoolVar(&o.HealthLease, "health-lease", o.HealthLease,
		"keep the add-on health Lease hostfleet-agent where OCM reads it: in --agent-namespace on the managed cluster, or in Hosted mode in --hosting-namespace on the hosting cluster")
	fs.StringVar(&o.LeaseOwner, "lease-owner", o.LeaseOwner,
		"a ServiceAccount in the health Lease's namespace made owner of the agent's Leases, so that deleting it (disabling the add-on) deletes them; empty: none")
	fs.StringVar(&o.HostingKubeconfig, "hosting-kubeconfig", o.HostingKubeconfig,
		"Hosted mode: kubeconfig of the hosting cluster, where the health Lease lives (default: in-cluster config)")
	fs.StringVar(&o.HostingNamespace, "hosting-namespace", o.HostingNamespace,
		"Hosted mode: the agent's namespace on the hosting cluster, where the health Lease lives (default: $POD_NAMESPACE)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect one active agent per cluster with a Lease on the managed cluster")
	o.Election.AddFlags(fs)
	fs.StringVar(&o.AgentNamespace, "agent-namespace", o.AgentNamespace,
		"the agent's namespace on the managed cluster: its Lease and, in Hosted mode, its ServiceAccount (default: $POD_NAMESPACE, else hostfleet-agent)")
	fs.StringVar(&o.BootstrapManagedKubeconfig, "bootstrap-managed-kubeconfig", o.BootstrapManagedKubeconfig,
		"Hosted mode: a cluster-admin kubeconfig of the managed cluster, used once to create the agent's least-privilege ServiceAccount; "+
			"the agent then works with its own renewed token (exclusive with --managed-kubeconfig)")
	fs.StringVar(&o.TokenDir, "token-dir", o.TokenDir, "Hosted mode: where the agent keeps its managed cluster token (default: a directory under $TMPDIR)")
	fs.DurationVar(&o.TokenTTL, "token-ttl", o.TokenTTL, "Hosted mode: lifetime of each managed cluster token; renewed at 80%")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "metrics listen address; 0 disables")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"serve metrics over HTTPS, only to callers that the API server of the cluster the agent runs in (the managed cluster; in Hosted mode the hosting cluster) "+
			"authenticates and allows to get /metrics (false: plain HTTP to anyone)")
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, "healthz/readyz listen address; 0 disables")
}

// addHostFlags adds the flags of what happens to hosts at release and
// when they fail: erase and healing.
func (o *Options) addHostFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Erase, "erase", o.Erase,
		"the cluster's erase policy: what every host erases at least when its claim lets it go (None, Metadata or Full), whatever tenants ask")
	fs.StringVar(&o.EraseImage, "erase-image", o.EraseImage,
		"http(s) URL of the erase image the BMC driver boots by Redfish virtual media on a released host whose release requires an erase; the image erases the disks and powers the host off")
	fs.BoolVar(&o.ErasePXE, "erase-pxe", o.ErasePXE,
		"IPMI hosts the BMC driver drives erase by booting once from the network, where the cluster's PXE server serves the erase image")
	fs.DurationVar(&o.EraseTimeout, "erase-timeout", o.EraseTimeout, "how long an erase image has to power the host off before the erase has failed (the host then stays out of the pool)")
	fs.DurationVar(&o.FenceTimeout, "fence-timeout", o.FenceTimeout,
		"how long a failed host being replaced may take to be confirmed off; past it the fence is unconfirmed and the host is not replaced (unless its claim's policy is unfenced)")
	fs.IntVar(&o.BreakerMaxPercent, "breaker-max-percent", o.BreakerMaxPercent,
		"replacement of failed hosts pauses while more than this share of the cluster's bound hosts (and at least two) failed within --breaker-window")
	fs.DurationVar(&o.BreakerWindow, "breaker-window", o.BreakerWindow, "how far back hosts replaced count as failures for the breaker")
}

// Validate says everything that is wrong with the options.
func (o *Options) Validate() []error {
	var errs []error
	if o.HubKubeconfig == "" {
		errs = append(errs, errors.New("--hub-kubeconfig is required: the kubeconfig of the hub"))
	}
	if o.ClusterName == "" {
		errs = append(errs, errors.New("--cluster-name is required: the managed cluster's name on the hub"))
	} else if msgs := validation.IsDNS1123Label(o.ClusterName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--cluster-name %q: %v", o.ClusterName, msgs))
	}
	if msgs := validation.IsValidLabelValue(o.HubName); o.HubName == "" || len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--hub-name %q must be a non-empty label value: %v", o.HubName, msgs))
	}
	if o.Role != hostfleetv1alpha1.RoleInfrastructure && o.Role != hostfleetv1alpha1.RoleWorkload {
		errs = append(errs, fmt.Errorf("--role %q must be infrastructure or workload", o.Role))
	}
	if o.Role == hostfleetv1alpha1.RoleWorkload && o.ClaimScope != "tenants" {
		errs = append(errs, errors.New("--role=workload reads only its tenant's namespaces: --claim-scope must be tenants"))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("--concurrency %d must be at least 1", o.Concurrency))
	}
	if err := o.Election.Validate(); o.LeaderElect && err != nil {
		errs = append(errs, err)
	}
	if (o.LeaderElect || o.BootstrapManagedKubeconfig != "") && len(validation.IsDNS1123Label(o.AgentNamespace)) > 0 {
		errs = append(errs, fmt.Errorf("--agent-namespace %q must be a namespace name", o.AgentNamespace))
	}
	if o.BootstrapManagedKubeconfig != "" && o.HealthLease && len(validation.IsDNS1123Label(o.HostingNamespace)) > 0 {
		errs = append(errs, fmt.Errorf("--hosting-namespace %q must be a namespace name: in Hosted mode OCM reads the health Lease in the agent's namespace on the hosting cluster (or turn off --health-lease)", o.HostingNamespace))
	}
	if o.BootstrapManagedKubeconfig != "" && o.ManagedKubeconfig != "" {
		errs = append(errs, errors.New("--bootstrap-managed-kubeconfig and --managed-kubeconfig exclude each other: give the cluster-admin kubeconfig to bootstrap from, or the agent's own"))
	}
	if o.TokenTTL < 10*time.Minute {
		errs = append(errs, fmt.Errorf("--token-ttl %s must be at least 10m (the API server's minimum)", o.TokenTTL))
	}
	if o.QPS <= 0 || o.Burst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-qps %v and --kube-api-burst %d must be positive", o.QPS, o.Burst))
	}
	if o.ManagedQPS <= 0 || o.ManagedBurst < 1 {
		errs = append(errs, fmt.Errorf("--managed-kube-api-qps %v and --managed-kube-api-burst %d must be positive", o.ManagedQPS, o.ManagedBurst))
	}
	if o.ClaimScope != "tenants" && o.ClaimScope != "all" {
		errs = append(errs, fmt.Errorf("--claim-scope %q must be tenants or all", o.ClaimScope))
	}
	if o.ClaimWatch != "label" && o.ClaimWatch != "placed" {
		errs = append(errs, fmt.Errorf("--claim-watch (or $%s) %q must be label or placed", hostfleetv1alpha1.EnvClaimWatch, o.ClaimWatch))
	}
	switch o.BMHDriver {
	case "annotated", "all", "none":
	default:
		errs = append(errs, fmt.Errorf("--bmh-driver %q must be annotated, all or none", o.BMHDriver))
	}
	if len(o.LocalClaimNamespaces) > 0 && !o.LocalClaims {
		errs = append(errs, errors.New("--local-claim-namespaces needs --local-claims: they are where the agent serves local claims"))
	}
	if o.BootstrapManagedKubeconfig != "" && o.BMHDriver != "none" && len(o.BMCNamespaces) == 0 && o.Role != hostfleetv1alpha1.RoleWorkload {
		errs = append(errs, errors.New("--bmc-namespaces is required in Hosted mode with the BMC driver on: the agent is granted BMC credentials only in the namespaces it drives, never cluster-wide (or set --bmh-driver=none)"))
	}
	if _, err := erase.Parse(o.Erase); err != nil {
		errs = append(errs, fmt.Errorf("--erase %q must be None, Metadata or Full", o.Erase))
	}
	if u, err := url.Parse(o.EraseImage); o.EraseImage != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		errs = append(errs, fmt.Errorf("--erase-image %q must be an http:// or https:// URL the BMCs can fetch", o.EraseImage))
	}
	if o.BMCWorkers < 1 {
		errs = append(errs, fmt.Errorf("--bmc-workers %d must be at least 1", o.BMCWorkers))
	}
	if o.BreakerMaxPercent < 1 || o.BreakerMaxPercent > 100 {
		errs = append(errs, fmt.Errorf("--breaker-max-percent %d must be between 1 and 100", o.BreakerMaxPercent))
	}
	return append(errs, o.validateLists()...)
}

// validateLists checks the durations that must be at least a second and
// the namespace lists.
func (o *Options) validateLists() []error {
	var errs []error
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--label-sync-interval", o.LabelSyncInterval}, {"--retry-after", o.RetryAfter}, {"--resync", o.Resync},
		{"--inventory-interval", o.InventoryInterval}, {"--orphan-grace", o.OrphanGrace}, {"--bmc-timeout", o.BMCTimeout},
		{"--bmc-poll", o.BMCPoll}, {"--bmc-power-wait", o.BMCPowerWait}, {"--bmc-soft-power-off-timeout", o.BMCSoftPowerOff},
		{"--erase-timeout", o.EraseTimeout}, {"--fence-timeout", o.FenceTimeout}, {"--breaker-window", o.BreakerWindow}} {
		if d.v < time.Second {
			errs = append(errs, fmt.Errorf("%s %s must be at least 1s", d.flag, d.v))
		}
	}
	for _, l := range []struct {
		flag string
		v    []string
	}{{"--bmc-namespaces", o.BMCNamespaces}, {"--local-claim-namespaces", o.LocalClaimNamespaces}, {"--host-namespaces", o.HostNamespaces}} {
		for _, ns := range l.v {
			if len(validation.IsDNS1123Label(ns)) > 0 {
				errs = append(errs, fmt.Errorf("%s: %q is not a namespace name", l.flag, ns))
			}
		}
	}
	return errs
}

// defaultClaimWatch is $HOSTFLEET_CLAIM_WATCH (set by the add-on), else label.
func defaultClaimWatch() string {
	if v := os.Getenv(hostfleetv1alpha1.EnvClaimWatch); v != "" {
		return v
	}
	return "label"
}

func defaultNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "hostfleet-agent"
}

// firmwareImages verifies the images the release gate flashes; nil when
// --verify-firmware-images is off.
func (o *Options) firmwareImages() *firmwareimage.Checker {
	if !o.VerifyFirmwareImages {
		return nil
	}
	return &firmwareimage.Checker{}
}
