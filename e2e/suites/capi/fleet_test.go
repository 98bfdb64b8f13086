package capi_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/agents"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/hardwarecopy"
	"github.com/hostfleet/hostfleet/hub/scheduler"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

const (
	tenantNS = "tenant-a"
	rack     = "rack.example.com/rack"
	drivenNS = "driven" // hosts the agent's BMC driver drives (Redfish emulators)
	machines = 3
)

var infraClusters = []string{"infra-1"}

// bmoNS is the namespace of the i-th host baremetal-operator drives.
func bmoNS(i int) string { return fmt.Sprintf("bmo-%d", i) }

// fleet is a hub; an infrastructure cluster with three hosts
// baremetal-operator drives (one operator per host, each in its namespace,
// so that test mode's one power flag per operator serves one host) and
// three hosts the agent's BMC driver drives through emulated Redfish BMCs;
// tenant a's workload cluster wl; and a management cluster mgmt where the
// Cluster API client keeps its machines.
// Every agent runs in this process. Alice is tenant a's admin: the client
// reaches the hub with her kubeconfig and nothing more.
type fleet struct {
	f               *planes.Fleet
	hub, mgmt, wl   client.Client
	infra           map[string]client.Client
	alice           client.Client
	aliceCfg        *rest.Config
	isoURL, diskURL string
	// started is when each followed machine was created.
	mu      sync.Mutex
	started map[string]time.Time
}

func newFleet(t *testing.T, g *WithT) *fleet {
	ctx := context.Background()
	f := planes.ForTest(t, append([]string{"hub", "mgmt", "wl"}, infraClusters...)...)
	fl := &fleet{f: f, hub: f.Plane("hub").Client, mgmt: f.Plane("mgmt").Client, wl: f.Plane("wl").Client, infra: map[string]client.Client{},
		diskURL: "http://images.example/os.qcow2", started: map[string]time.Time{}}
	f.HubForTest(t, "hub", func(mgr ctrl.Manager) error {
		if err := (&scheduler.Reconciler{Client: mgr.GetClient(), Deadline: 5 * time.Minute}).SetupWithManager(context.Background(), mgr, setup.Options{}); err != nil {
			return err
		}
		return (&hardwarecopy.Reconciler{Client: mgr.GetClient()}).SetupWithManager(context.Background(), mgr, setup.Options{})
	})
	fl.tenants(t, g)
	iso := redfish.ImageServer()
	t.Cleanup(iso.Close)
	fl.isoURL = iso.URL + "/live.iso"

	for _, cluster := range infraClusters {
		fl.infra[cluster] = f.Plane(cluster).Client
		for i := range machines {
			fl.hosts(t, g, cluster, i)
			f.StartBMOForTest(t, cluster, bmoNS(i))
		}
		startAgent(t, g, f.Plane("hub").Config, f.Plane(cluster).Config, cluster, func(o *app.Options) {
			o.BMCNamespaces, o.BMCPoll, o.BMCTimeout = []string{drivenNS}, 2*time.Second, 5*time.Second
		})
		for i := range machines {
			for _, key := range []client.ObjectKey{{Namespace: bmoNS(i), Name: fmt.Sprintf("bmo-%d", i)}, {Namespace: drivenNS, Name: fmt.Sprintf("rf-%d", i)}} {
				g.Eventually(func(g Gomega) {
					h := &metal3api.BareMetalHost{}
					g.Expect(fl.infra[cluster].Get(ctx, key, h)).To(Succeed())
					g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateAvailable), key.String())
				}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
			}
		}
	}
	served, err := app.ServedNamespaces(ctx, fl.hub, "wl", hostfleetv1alpha1.RoleWorkload)
	g.Expect(err).NotTo(HaveOccurred())
	startAgent(t, g, f.Plane("hub").Config, f.Plane("wl").Config, "wl", func(o *app.Options) {
		o.Role, o.LabelSyncInterval, o.ServedNamespaces = hostfleetv1alpha1.RoleWorkload, 5*time.Second, served
	})
	return fl
}

// tenants registers tenant a (admin alice, set lab: the three
// infrastructure clusters; workload cluster wl; rack labels synced) and
// tenant b (set other), and makes alice's client.
func (fl *fleet) tenants(t *testing.T, g *WithT) {
	ctx := context.Background()
	objs := []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "wl", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wl"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
			LabelSyncPrefixes: []string{"rack.example.com", "kind.example.com"},
			Admins:            []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "other"}},
	}
	for _, c := range infraClusters {
		objs = append(objs, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}})
	}
	for _, o := range objs {
		g.Expect(fl.hub.Create(ctx, o)).To(Succeed(), "create %T %s", o, o.GetName())
	}
	g.Expect(planes.AcceptCluster(ctx, fl.hub, "wl")).To(Succeed())
	g.Eventually(func(g Gomega) {
		a := &hostfleetv1alpha1.Tenant{}
		g.Expect(fl.hub.Get(ctx, client.ObjectKey{Name: "a"}, a)).To(Succeed())
		g.Expect(a.Status.Clusters).To(Equal(infraClusters))
		g.Expect(a.Status.WorkloadClusters).To(Equal([]string{"wl"}))
		g.Expect(status(a.Status.Conditions, hostfleetv1alpha1.ConditionReady)).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	cfg, err := fl.f.AddUser("hub", "alice", "system:authenticated")
	g.Expect(err).NotTo(HaveOccurred())
	fl.aliceCfg = cfg
	fl.alice, err = client.New(cfg, client.Options{Scheme: planes.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fl.mgmt.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "capi"}})).To(Succeed())
}

// hosts makes the cluster's i-th pair of hosts (rack r<i>): bmo-<i>, which
// baremetal-operator drives, and rf-<i>, which the agent drives through a
// Redfish BMC whose system reports a hostname and an address; and policies
// admitting tenant a's namespaces.
func (fl *fleet) hosts(t *testing.T, g *WithT, cluster string, i int) {
	ctx := context.Background()
	infra := fl.infra[cluster]
	hw := redfish.DefaultHardware(fmt.Sprintf("RF%04d", i))
	hw.HostName, hw.NICs[0].IP = fmt.Sprintf("node-rf-%d", i), fmt.Sprintf("192.0.2.%d", 10+i)
	b := redfish.Start(redfish.Options{Username: "admin", Password: "secret", Hardware: hw})
	t.Cleanup(b.Close)
	labels := func(kind string) map[string]string {
		return map[string]string{kindLabel: kind, rack: fmt.Sprintf("r%d", i)}
	}
	namespaces := []string{bmoNS(i)}
	if i == 0 {
		namespaces = append(namespaces, drivenNS)
	}
	var objs []client.Object
	for _, ns := range namespaces {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bmc"}, StringData: map[string]string{"username": "admin", "password": "secret"}},
			&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-a"},
				Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{
					HasLabels: []metal3api.NameValuePair{{Name: hostfleetv1alpha1.LabelTenant, Value: "a"}}}}})
	}
	objs = append(objs,
		&metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: bmoNS(i), Name: fmt.Sprintf("bmo-%d", i), Labels: labels("bmo")},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 6230+i), CredentialsName: "bmc"},
				BootMACAddress: fmt.Sprintf("00:11:22:33:44:%02x", i)}},
		&metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: drivenNS, Name: fmt.Sprintf("rf-%d", i), Labels: labels("bmc"),
			Annotations: map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{
				Address: "redfish-virtualmedia+http://" + b.HostPort() + redfish.SystemPath, CredentialsName: "bmc"},
				BootMACAddress: fmt.Sprintf("00:11:22:33:55:%02x", i)}})
	for _, o := range objs {
		g.Expect(infra.Create(ctx, o)).To(Succeed(), "create %T %s on %s", o, o.GetName(), cluster)
	}
}

// startAgent runs an agent in this process until the test ends.
func startAgent(t *testing.T, _ *WithT, hubCfg, managedCfg *rest.Config, cluster string, opt func(*app.Options)) {
	agents.ForTest(t, hubCfg, managedCfg, cluster, func(o *app.Options) {
		o.Resync, o.InventoryInterval = 5*time.Second, time.Second
		if opt != nil {
			opt(o)
		}
	})
}

// status is a condition's status, or "" when it has none.
func status(conds []metav1.Condition, t string) metav1.ConditionStatus {
	for _, c := range conds {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}
