package kubectl_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestMain(m *testing.M) { planes.Main(m) }

const ns = "tenant-acme"

// claim is a claim as the hub and the agents leave it: its labels, what
// it asks, and the conditions they wrote (type, status, reason, message).
type claim struct {
	name          string
	labels        map[string]string
	annotations   map[string]string
	image, on     bool
	poweredOn     bool
	host          string
	conditions    [][4]string
	stuck, advice string
}

// The stuck claims `why` must explain: each names the step it is stuck at
// and the advice on its reason.
var stuckClaims = []claim{
	{name: "no-host", conditions: [][4]string{{"Scheduled", "False", "NoCapacity", "no cluster has a free host matching {example.com/size=huge} for namespace tenant-acme: infra-1 (0 free matching hosts after 0 pending claims)"}},
		stuck: `Stuck at "scheduled" (NoCapacity)`, advice: "relax hostSelector"},
	{name: "outside-set", labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-9"},
		conditions: [][4]string{{"Scheduled", "False", "PinnedOutsideSet", "cluster infra-9 is not in the cluster set lab of tenant acme (infra-1)"}},
		stuck:      `Stuck at "scheduled" (PinnedOutsideSet)`, advice: "pin a cluster of the set"},
	{name: "wrong-password", labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, on: true, host: "server-0",
		conditions: [][4]string{{"Scheduled", "True", "Placed", "placed on infra-1"}, {"Associated", "True", "BareMetalHostAssociated", "bound"},
			{"Synchronized", "True", "Synchronized", "synced"},
			{"Ready", "False", "HostError", "host hosts/server-0 is in error (registration error): the BMC refused the username and password in its credentials Secret"}},
		stuck: `Stuck at "powered" (HostError)`, advice: "the BMC secret or address"},
	{name: "powering-on", labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, on: true, host: "server-1",
		conditions: [][4]string{{"Scheduled", "True", "Placed", "placed on infra-1"}, {"Associated", "True", "BareMetalHostAssociated", "bound"},
			{"Synchronized", "True", "Synchronized", "synced"},
			{"Ready", "False", "PowerChanging", "powering on since 2026-11-25T10:00:00.000Z: On sent once, last at 2026-11-25T10:00:00.000Z; the BMC reports PoweringOn"}},
		stuck: `Stuck at "powered" (PowerChanging)`, advice: "a soft power-off is forced after 3 min"},
	{name: "image-404", labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, image: true, on: true, poweredOn: true, host: "server-2",
		conditions: [][4]string{{"Scheduled", "True", "Placed", "placed on infra-1"}, {"Associated", "True", "BareMetalHostAssociated", "bound"},
			{"Synchronized", "True", "Synchronized", "synced"},
			{"Ready", "False", "HostError", "deploying failed"},
			{"Provisioned", "False", "HostError", "deploying to host hosts/server-2 failed (provisioning error): image http://images.example/os.iso: 404 Not Found; check spec.image"}},
		stuck: `Stuck at "provisioned" (HostError)`, advice: "fix what it names (the image URL"},
	{name: "no-node", labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, on: true, poweredOn: true, host: "server-3",
		conditions: [][4]string{{"Scheduled", "True", "Placed", "placed on infra-1"}, {"Associated", "True", "BareMetalHostAssociated", "bound"},
			{"Synchronized", "True", "Synchronized", "synced"}, {"Ready", "True", "Ready", "host hosts/server-3 is available and powered on"},
			{"NodeLabelsSynced", "False", "NodeNotFound", "no Node of apps runs on host hosts/server-3"}},
		stuck: `Stuck at "node labels" (NodeNotFound)`, advice: "annotate the claim hostfleet.io/node"},
	{name: "fwd-unbound", labels: map[string]string{hostfleetv1alpha1.LabelCluster: "edge", hostfleetv1alpha1.LabelKind: hostfleetv1alpha1.KindRemote}, on: true,
		conditions: [][4]string{{"Scheduled", "True", "Placed", "placed on edge"},
			{"Forwarded", "True", "TargetNotBound", "applied on edge as HostClaim hf-tenant-acme/fwd-unbound; not bound to a host: NoBareMetalHostAvailable"}},
		stuck: `Stuck at "forwarded" (TargetNotBound)`, advice: "as for NoBareMetalHostAvailable"},
	{name: "big-cpu", annotations: map[string]string{hostfleetv1alpha1.AnnotationHardware: "host.cpu.count >= 64 && host.memoryMiB >= 65536"},
		conditions: [][4]string{{"Scheduled", "False", "NoCapacity", "no cluster has a free host with the hardware asked"}},
		stuck:      `Stuck at "scheduled" (NoCapacity)`, advice: "relax hostSelector"},
}

// medium is the hardware of infra-1's inspected hosts.
var medium = hostfleetv1alpha1.HardwareView{CPU: hostfleetv1alpha1.HardwareCPU{Count: 48, Arch: "x86_64"}, MemoryMiB: 65536}

// readyClaim is bound, provisioned, powered and Ready.
var readyClaim = claim{name: "web-1", labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, image: true, on: true, poweredOn: true, host: "server-4",
	conditions: [][4]string{{"Scheduled", "True", "Placed", "placed on infra-1"}, {"Associated", "True", "BareMetalHostAssociated", "bound"},
		{"Synchronized", "True", "Synchronized", "synced"}, {"Provisioned", "True", "Provisioned", "provisioned"},
		{"Ready", "True", "Ready", "host hosts/server-4 is provisioned and powered on"}}}

var buildPlugin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "kubectl-hostfleet-")
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-hostfleet"), "../cmd/kubectl-hostfleet").CombinedOutput()
	if err != nil {
		return "", &exec.ExitError{Stderr: out}
	}
	return dir, nil
})

// kubectl runs the real kubectl with the plugin on PATH and KUBECONFIG
// set to kubeconfig (kubectl takes no flag before a plugin's name).
func kubectl(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	bin, err := planes.KubectlPath()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := buildPlugin()
	if err != nil {
		t.Fatalf("build kubectl-hostfleet: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// fleet is the hub with the tenant's claims, and a kubeconfig for the hub
// administrator and for alice, the tenant's admin.
func fleet(t *testing.T) (admin, alice string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	c := f.Plane("hub").Client
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "acme"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-other", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "other"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hostfleetv1alpha1.TenantAdminRole},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hostfleetv1alpha1.TenantAdminClusterRole},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab", MaxClaims: ptr.To[int32](9)}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		&hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "infra-1", Name: "infra-1"}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "infra-1"}},
		planes.Tenancy("infra-1", hostfleetv1alpha1.ServedTenant{Name: "acme", Namespaces: []string{ns}}),
		&addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "infra-1", Name: hostfleetv1alpha1.AddonName}},
	} {
		g.Expect(c.Create(ctx, o)).To(Succeed())
	}
	inv := &hostfleetv1alpha1.HostInventory{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, inv)).To(Succeed())
	size := map[string]string{"example.com/size": "medium"}
	hardware.Normalize(&medium)
	inv.Status = hostfleetv1alpha1.HostInventoryStatus{Total: 6, Available: 1, Pools: []hostfleetv1alpha1.HostPool{
		{Labels: size, Namespaces: []string{ns}, Profile: hardware.Profile(&medium), Total: 5, Available: 1},
		{Labels: size, Namespaces: []string{ns}, Total: 1}},
		Profiles: []hostfleetv1alpha1.HardwareProfile{{Name: hardware.Profile(&medium), Hardware: medium}}}
	g.Expect(c.Status().Update(ctx, inv)).To(Succeed())
	mca := &addonv1beta1.ManagedClusterAddOn{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: hostfleetv1alpha1.AddonName}, mca)).To(Succeed())
	mca.Status.Conditions = []metav1.Condition{{Type: addonv1beta1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionTrue,
		Reason: "ManagedClusterAddOnLeaseUpdated", Message: "hostfleet-agent add-on is available.", LastTransitionTime: metav1.Now()}}
	g.Expect(c.Status().Update(ctx, mca)).To(Succeed())
	tn := &hostfleetv1alpha1.Tenant{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "acme"}, tn)).To(Succeed())
	tn.Status.Claims, tn.Status.ReadyClaims = int32(len(stuckClaims)+1), 2
	tn.Status.Classes = []hostfleetv1alpha1.ClassUsage{{Name: "gpu", Claims: 1, MaxClaims: 2}, {Name: "big", MaxClaims: 4}}
	tn.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Registered", Message: "registered", LastTransitionTime: metav1.Now()}}
	g.Expect(c.Status().Update(ctx, tn)).To(Succeed())
	for _, cl := range append(stuckClaims, readyClaim) {
		create(t, c, ns, cl)
	}
	create(t, c, "tenant-other", claim{name: "theirs", labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}})
	g.Expect(c.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-host.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "HostClaim", Namespace: ns, Name: "no-host", UID: uidOf(t, c, "no-host")},
		Type:           corev1.EventTypeWarning, Reason: "NoCapacity", Message: "no cluster has a free host matching", LastTimestamp: metav1.Now()})).To(Succeed())

	dir := t.TempDir()
	admin, alice = filepath.Join(dir, "admin"), filepath.Join(dir, "alice")
	g.Expect(planes.WriteKubeconfig(admin, f.Plane("hub").Config)).To(Succeed())
	aliceCfg, err := f.AddUser("hub", "alice")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(planes.WriteKubeconfig(alice, aliceCfg)).To(Succeed())
	return admin, alice
}

func create(t *testing.T, c client.Client, namespace string, cl claim) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	hc := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: cl.name, Labels: cl.labels, Annotations: cl.annotations},
		Spec: metal3api.HostClaimSpec{PoweredOn: cl.on}}
	if cl.image {
		hc.Spec.Image = &metal3api.Image{URL: "http://images.example/os.iso"}
	}
	g.Expect(c.Create(ctx, hc)).To(Succeed())
	hc.Status.PoweredOn = cl.poweredOn
	if cl.host != "" {
		hc.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: cl.host}
	}
	for _, k := range cl.conditions {
		hc.Status.Conditions = append(hc.Status.Conditions, metav1.Condition{Type: k[0], Status: metav1.ConditionStatus(k[1]), Reason: k[2], Message: k[3],
			LastTransitionTime: metav1.Now()})
	}
	g.Expect(c.Status().Update(ctx, hc)).To(Succeed())
}

func uidOf(t *testing.T, c client.Client, name string) types.UID {
	t.Helper()
	hc := &metal3api.HostClaim{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, hc); err != nil {
		t.Fatal(err)
	}
	return hc.UID
}

func TestClaims(t *testing.T) {
	g := NewWithT(t)
	admin, alice := fleet(t)

	out, err := kubectl(t, admin, "hostfleet", "claims", "-A")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("kubectl hostfleet claims -A\n%s", out)
	g.Expect(lines(out)).To(ContainElements(
		MatchRegexp(`^NAMESPACE\s+CLAIM\s+TENANT\s+CLUSTER\s+HOST\s+POWER\s+READY\s+REASON\s+AGE$`),
		MatchRegexp(`^tenant-acme\s+web-1\s+acme\s+infra-1\s+server-4\s+on\s+True\s+Ready\s+\d+s$`),
		MatchRegexp(`^tenant-acme\s+no-host\s+acme\s+-\s+-\s+off\s+Unknown\s+NoCapacity\s+\d+s$`),
		MatchRegexp(`^tenant-acme\s+powering-on\s+acme\s+infra-1\s+server-1\s+off→on\s+False\s+PowerChanging\s+\d+s$`),
		MatchRegexp(`^tenant-acme\s+fwd-unbound\s+acme\s+edge\s+-\s+off\s+Unknown\s+-\s+\d+s$`),
		MatchRegexp(`^tenant-other\s+theirs\s+other\s+infra-1\s`),
	))

	// A tenant admin sees its own namespace, without the tenant (it may
	// not read namespaces), and is told what it may not do.
	out, err = kubectl(t, alice, "hostfleet", "claims", "-n", ns, "-o", "wide")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(lines(out)).To(ContainElements(
		MatchRegexp(`^NAMESPACE\s+CLAIM\s+TENANT\s+CLUSTER\s+HOST\s+POWER\s+READY\s+REASON\s+AGE\s+KIND\s+MESSAGE$`),
		MatchRegexp(`^tenant-acme\s+web-1\s+-\s+infra-1\s+server-4\s+on\s+True\s+Ready\s+\d+s\s+local\s+host hosts/server-4 is provisioned and powered on$`),
	))
	g.Expect(out).NotTo(ContainSubstring("theirs"))
	out, err = kubectl(t, alice, "hostfleet", "claims", "-n", "tenant-other")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("you may not list hostclaims in namespace tenant-other: ask the hub's administrator, or check with `kubectl auth can-i list hostclaims -n tenant-other`"))

	// Without the plugin: the columns of the hub's HostClaim CRD.
	out, err = kubectl(t, alice, "get", "hostclaims", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(lines(out)).To(ContainElements(
		MatchRegexp(`^NAME\s+CLUSTER\s+HOST\s+POWER\s+READY\s+REASON\s+AGE$`),
		MatchRegexp(`^web-1\s+infra-1\s+server-4\s+true\s+True\s+Ready\s+\d+s$`),
		// A missing value (status.poweredOn is omitted when false) is an
		// empty cell.
		MatchRegexp(`^powering-on\s+infra-1\s+server-1\s+False\s+PowerChanging\s+\d+s$`),
		MatchRegexp(`^no-host\s+\d+s$`),
		MatchRegexp(`^fwd-unbound\s+edge\s+\d+s$`),
	))

	out, err = kubectl(t, admin, "hostfleet", "claims", "-n", ns, "-o", "json")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring(`"name": "web-1"`))
	g.Expect(out).To(ContainSubstring(`"kind": "remote"`))
}

func TestWhy(t *testing.T) {
	admin, alice := fleet(t)
	for _, cl := range stuckClaims {
		t.Run(cl.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := kubectl(t, alice, "hostfleet", "why", cl.name, "-n", ns)
			g.Expect(err).NotTo(HaveOccurred(), out)
			t.Logf("kubectl hostfleet why %s\n%s", cl.name, out)
			g.Expect(out).To(ContainSubstring(cl.stuck))
			g.Expect(out).To(ContainSubstring(cl.advice))
			g.Expect(out).To(ContainSubstring(cl.conditions[len(cl.conditions)-1][3]), "the stuck step's message (the last condition)")
			g.Expect(out).To(ContainSubstring("Events (latest"))
		})
	}
	g := NewWithT(t)
	out, err := kubectl(t, alice, "hostfleet", "why", "no-host", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`Warning\s+NoCapacity\s+no cluster has a free host matching`))
	g.Expect(out).NotTo(ContainSubstring("Agent of"), "a tenant admin does not read the agent's add-on")

	out, err = kubectl(t, admin, "hostfleet", "why", "web-1", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("Nothing in the way: the claim is Ready."))
	g.Expect(out).To(ContainSubstring("Agent of infra-1: Available=True"))

	out, err = kubectl(t, alice, "hostfleet", "why", "nope", "-n", ns)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("no HostClaim nope in namespace tenant-acme: `kubectl hostfleet claims -n tenant-acme` lists them"))
}

// TestWhyHardware: `why` on a claim nothing meets names, per cluster, the
// closest hardware and what it lacks, for whoever may read the inventories.
func TestWhyHardware(t *testing.T) {
	g := NewWithT(t)
	admin, alice := fleet(t)
	out, err := kubectl(t, admin, "hostfleet", "why", "big-cpu", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("kubectl hostfleet why big-cpu\n%s", out)
	g.Expect(out).To(ContainSubstring("Hardware asked (hostfleet.io/hardware): host.cpu.count >= 64 && host.memoryMiB >= 65536\n" +
		"  infra-1: no host has it\n" +
		"    closest: 48 cores x86_64, 64 GiB, 0 disks (0 NVME), 0 Gb/s, no GPU (5 hosts): lacks host.cpu.count >= 64 (has 48)\n" +
		"    closest: not inspected (meets no hardware requirement) (1 hosts): lacks an inspection (no hardware known)\n"))
	out, err = kubectl(t, alice, "hostfleet", "why", "big-cpu", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("  per cluster: not shown (you may not list hostinventories in any namespace"))
}

// A claim over the tenant's maxClaims never exists: `why` on its name says
// the quota is full.
func TestWhyQuota(t *testing.T) {
	g := NewWithT(t)
	admin, _ := fleet(t)
	ctx := context.Background()
	c, err := client.New(configOf(t, admin), client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hostfleetv1alpha1.TenantQuota},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceName(hostfleetv1alpha1.QuotaClaims): resource.MustParse("8")}}}
	g.Expect(c.Create(ctx, q)).To(Succeed())
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceName(hostfleetv1alpha1.QuotaClaims): resource.MustParse("8")}}
	g.Expect(c.Status().Update(ctx, q)).To(Succeed())
	out, err := kubectl(t, admin, "hostfleet", "why", "web-9", "-n", ns)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("its tenant uses 8 of its 8 claims, maxClaims: a new claim is refused until one is deleted or maxClaims is raised"))
}

func TestFleet(t *testing.T) {
	g := NewWithT(t)
	admin, alice := fleet(t)
	out, err := kubectl(t, admin, "hostfleet", "fleet")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("kubectl hostfleet fleet\n%s", out)
	g.Expect(lines(out)).To(ContainElements(
		MatchRegexp(`^CLUSTER\s+AGENT\s+HOSTS AVAILABLE/TOTAL\s+POOLS \(AVAILABLE/TOTAL\)\s+TENANTS$`),
		MatchRegexp(`^infra-1\s+Available\s+1/6\s+example.com/size=medium \[v1-[0-9a-f]{12}\]: 1/5; example.com/size=medium: 0/1\s+acme$`),
		MatchRegexp(`^TENANT\s+CLUSTER SET\s+CLAIMS\s+READY\s+MAX CLAIMS\s+CLASSES \(CLAIMS/MAX\)\s+STATUS$`),
		MatchRegexp(`^acme\s+lab\s+9\s+2\s+9\s+gpu 1/2, big 0/4\s+Registered$`),
	))
	out, err = kubectl(t, admin, "hostfleet", "fleet", "--hardware")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Logf("kubectl hostfleet fleet --hardware\n%s", out)
	g.Expect(lines(out)).To(ContainElements(
		MatchRegexp(`^CLUSTER\s+PROFILE\s+HARDWARE\s+HOSTS AVAILABLE/TOTAL$`),
		MatchRegexp(`^infra-1\s+v1-[0-9a-f]{12}\s+48 cores x86_64, 64 GiB, 0 disks \(0 NVME\), 0 Gb/s, no GPU\s+1/5$`),
		MatchRegexp(`^infra-1\s+-\s+not inspected \(meets no hardware requirement\)\s+0/1$`),
	))
	out, err = kubectl(t, alice, "hostfleet", "fleet")
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("fleet is a hub administrator's view: you may not list hostinventories in any namespace"))
}

func TestNoKubeconfig(t *testing.T) {
	g := NewWithT(t)
	dir, err := buildPlugin()
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(filepath.Join(dir, "kubectl-hostfleet"), "claims")
	cmd.Env = []string{"HOME=" + t.TempDir(), "KUBECONFIG="}
	out, err := cmd.CombinedOutput()
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(out)).To(Equal("error: no kubeconfig: set KUBECONFIG or pass --kubeconfig with the hub's kubeconfig\n"))
}

func lines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

func configOf(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
