package planes_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestThreePlanes starts a hub and two infrastructure planes and checks that
// they are separate API servers, each serving every CRD, each reachable
// through its kubeconfig file.
func TestThreePlanes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now()
	f := planes.ForTest(t, "hub", "infra-1", "infra-2")
	t.Logf("three planes up, CRDs installed, in %s", time.Since(start).Round(10*time.Millisecond))

	hosts := map[string]bool{}
	for _, name := range f.Names() {
		p := f.Plane(name)
		hosts[p.Config.Host] = true

		// The kubeconfig file works on its own.
		cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		c, err := client.New(cfg, client.Options{Scheme: f.Scheme})
		g.Expect(err).NotTo(HaveOccurred())

		for _, list := range []client.ObjectList{
			&hostfleetv1alpha1.TenantList{}, &hostfleetv1alpha1.HostInventoryList{},
			&metal3api.BareMetalHostList{}, &metal3api.HostClaimList{}, &metal3api.HardwareDataList{}, &metal3api.HostDeployPolicyList{},
			&clusterv1.ManagedClusterList{}, &workv1.ManifestWorkList{},
		} {
			// The first list of a new CRD's resource waits about a second
			// for the API server's watch cache; later ones take milliseconds.
			g.Expect(c.List(ctx, list)).To(Succeed(), "%s serves %T", name, list)
		}
	}
	g.Expect(hosts).To(HaveLen(3), "three distinct API servers")

	// An object on one plane is not on another.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-on-infra-1"}}
	g.Expect(f.Plane("infra-1").Client.Create(ctx, ns)).To(Succeed())
	err := f.Plane("infra-2").Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

// TestAddUserIsNotAdmin: users added to a plane are authenticated but hold no
// rights until RBAC grants them, so security tests can act as tenants and agents.
func TestAddUserIsNotAdmin(t *testing.T) {
	g := NewWithT(t)
	f := planes.ForTest(t, "hub")
	cfg, err := f.AddUser("hub", "alice", "tenant-a-admins")
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	err = c.List(context.Background(), &metal3api.HostClaimList{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
}

// TestBMOStopsWithTheFleet: the baremetal-operator started against a plane is
// stopped when the fleet stops.
func TestBMOStopsWithTheFleet(t *testing.T) {
	g := NewWithT(t)
	f, err := planes.Start(context.Background(), planes.Options{Dir: t.TempDir()}, "infra-1")
	g.Expect(err).NotTo(HaveOccurred())
	bmo, err := f.StartBMO("infra-1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bmo.Exited()).To(BeFalse())
	g.Expect(f.Stop()).To(Succeed())
	g.Expect(bmo.Exited()).To(BeTrue())
}

// TestPauseAPIServer: a paused API server answers nothing until resumed,
// then answers with its data intact.
func TestPauseAPIServer(t *testing.T) {
	g := NewWithT(t)
	f := planes.ForTest(t, "hub")
	p := f.Plane("hub")
	ctx := context.Background()
	g.Expect(p.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}})).To(Succeed())
	g.Expect(p.PauseAPIServer()).To(Succeed())
	resumed := false
	defer func() {
		if !resumed {
			_ = p.ResumeAPIServer() // the plane goes back to the pool
		}
	}()
	// A request already on its way when the signal landed may still be
	// answered: the next ones are not.
	g.Eventually(func() error {
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return p.Client.Get(tctx, client.ObjectKey{Name: "kept"}, &corev1.Namespace{})
	}).WithTimeout(10*time.Second).Should(HaveOccurred(), "a paused API server answers nothing")
	g.Expect(p.ResumeAPIServer()).To(Succeed())
	resumed = true
	g.Eventually(func() error { return p.Client.Get(ctx, client.ObjectKey{Name: "kept"}, &corev1.Namespace{}) }).
		WithTimeout(30 * time.Second).Should(Succeed())
}

// TestRestoreEtcd saves a plane's etcd with etcdctl, changes the plane,
// restores the snapshot with etcdutl and finds the plane as it was saved,
// its resourceVersions past every one served before the restore, and a
// watch started before the restore told to list again.
func TestRestoreEtcd(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTestWith(t, planes.Options{Dir: t.TempDir()}, "hub") // not a shared plane: its processes are replaced
	p := f.Plane("hub")
	ns := func(name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	g.Expect(p.Client.Create(ctx, ns("saved"))).To(Succeed())
	snapshot := filepath.Join(t.TempDir(), "hub.db")
	g.Expect(p.SaveEtcd(ctx, snapshot)).To(Succeed())
	after := ns("after")
	g.Expect(p.Client.Create(ctx, after)).To(Succeed())
	wc, err := client.NewWithWatch(p.Config, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &corev1.NamespaceList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: after.ResourceVersion}})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	start := time.Now()
	g.Expect(f.RestoreEtcd(ctx, "hub", snapshot)).To(Succeed())
	t.Logf("etcd restored and the API server answering in %s", time.Since(start).Round(10*time.Millisecond))
	g.Expect(p.Client.Get(ctx, client.ObjectKey{Name: "saved"}, &corev1.Namespace{})).To(Succeed())
	g.Expect(apierrors.IsNotFound(p.Client.Get(ctx, client.ObjectKey{Name: "after"}, &corev1.Namespace{}))).To(BeTrue(), "created after the snapshot")
	again := ns("again")
	g.Expect(p.Client.Create(ctx, again)).To(Succeed())
	rv, err := strconv.ParseInt(again.ResourceVersion, 10, 64)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rv).To(BeNumerically(">", planes.RestoreBump), "revisions after a restore are past the snapshot's, bumped")
	// The watch from before the restore ends (or reports an error), and its
	// client lists again.
	g.Eventually(func() bool {
		select {
		case e, ok := <-w.ResultChan():
			return !ok || e.Type == watch.Error
		default:
			return false
		}
	}).WithTimeout(time.Minute).Should(BeTrue())
}
