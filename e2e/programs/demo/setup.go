package demo

import (
	"context"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/ipmisim"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func setUpHub(ctx context.Context, hub client.Client) error {
	objs := []client.Object{&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}}}
	for _, name := range append(append([]string(nil), infras...), edge) {
		objs = append(objs,
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "lab"}},
				Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	// apps runs acme's workloads: a workload cluster of tenant acme.
	objs = append(objs,
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: apps, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "acme"}},
			Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: apps}})
	if err := create(ctx, hub, objs...); err != nil {
		return err
	}
	// A labelled cluster is a workload cluster once accepted and joined.
	return planes.AcceptCluster(ctx, hub, apps)
}

// InfraHosts are the objects of an infrastructure cluster whose hosts a
// baremetal-operator in test mode drives: namespace hosts, the BMC secret, a
// HostDeployPolicy admitting claims from tenant-* namespaces, and two hosts
// (server-0 medium, server-1 large) in rack r<index+1>.
//
// Every host starts online, and every claim the demo makes on these hosts is
// powered on: baremetal-operator's test mode keeps one power flag for all the
// hosts it drives, so a host kept off and a host kept on would switch each
// other at every periodic refresh, and a claim's Ready would blink.
func InfraHosts(index int) []client.Object {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "bmc"}, StringData: map[string]string{"username": "admin", "password": "password"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "tenants"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"}}},
	}
	for i, size := range []string{"medium", "large"} {
		objs = append(objs, &metal3api.BareMetalHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("server-%d", i),
				Labels: map[string]string{"example.com/rack": fmt.Sprintf("r%d", index+1), "example.com/size": size, "example.com/site": "core"}},
			Spec: metal3api.BareMetalHostSpec{
				BMC:            metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 16230+10*index+i), CredentialsName: "bmc"},
				BootMACAddress: fmt.Sprintf("00:5a:%02x:00:00:%02x", index, i),
				Online:         true,
			},
		})
	}
	return objs
}

func setUpInfra(ctx context.Context, c client.Client, index int) error {
	return create(ctx, c, InfraHosts(index)...)
}

// setUpEdge: two hosts that no baremetal-operator manages, each annotated
// for the agent's BMC driver: a Redfish one (virtual media) and an IPMI one.
func setUpEdge(ctx context.Context, c client.Client, rf *redfish.BMC, sim *ipmisim.BMC) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "bmc"}, StringData: map[string]string{"username": "admin", "password": "password"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "tenants"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"}}},
		// Claims forwarded from the hub arrive in namespaces labelled with
		// their tenant.
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "forwarded-acme"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{
				HasLabels: []metal3api.NameValuePair{{Name: hostfleetv1alpha1.LabelTenant, Value: "acme"}}}}},
	}
	for i, h := range []struct{ size, address string }{
		{"medium", "redfish-virtualmedia://" + rf.HostPort() + redfish.SystemPath},
		{"large", "ipmi://" + sim.Address()},
	} {
		objs = append(objs, &metal3api.BareMetalHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("server-%d", i),
				Labels:      map[string]string{"example.com/rack": "r3", "example.com/size": h.size, "example.com/site": "edge"},
				Annotations: map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}},
			Spec: metal3api.BareMetalHostSpec{
				BMC: metal3api.BMCDetails{Address: h.address, CredentialsName: "bmc", DisableCertificateVerification: true},
			},
		})
	}
	return create(ctx, c, objs...)
}

func createTenant(ctx context.Context, hub client.Client) error {
	return create(ctx, hub, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: hostfleetv1alpha1.TenantSpec{
		Namespaces: []string{"tenant-acme"}, ClusterSet: "lab", LabelSyncPrefixes: []string{"example.com"}, MaxClaims: ptr.To[int32](5),
		Erase:  hostfleetv1alpha1.EraseMetadata,
		Admins: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}})
}

func createClaims(ctx context.Context, hub client.Client, liveURL string) error {
	objs := []client.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "web-userdata"},
		StringData: map[string]string{"userData": "#cloud-config\npackages: [nginx]\n"}}}
	for _, c := range claims {
		claim := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: c.name}}
		if c.cluster != "" {
			claim.Labels = map[string]string{hostfleetv1alpha1.LabelCluster: c.cluster}
		}
		switch {
		case c.image == liveISO:
			claim.Spec.PoweredOn = true
			claim.Spec.Image = &metal3api.Image{URL: liveURL, DiskFormat: ptr.To("live-iso")}
		case c.image != "":
			claim.Spec.PoweredOn = true
			claim.Spec.Image = &metal3api.Image{URL: c.image, Checksum: c.image + ".sha256sum"}
			claim.Spec.UserData = &corev1.SecretReference{Name: "web-userdata"}
		default:
			// Power only: the IPMI host, and db-1 on a baremetal-operator
			// host (all of those stay on: see InfraHosts).
			claim.Spec.PoweredOn = true
		}
		if c.size != "" {
			claim.Spec.HostSelector.MatchLabels = map[string]string{"example.com/size": c.size}
		}
		if c.cluster == "" {
			// Left to the scheduler: among the baremetal-operator clusters'
			// hosts. The scheduler does not know that the edge's hosts
			// (the agent's BMC driver) boot live ISOs only, and whichever
			// cluster publishes free hosts first would do.
			claim.Spec.HostSelector.MatchLabels["example.com/site"] = "core"
		}
		objs = append(objs, claim)
	}
	return create(ctx, hub, objs...)
}

func create(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// poll asks cond every half second until it holds, ctx ends or timeout
// passes; an error from cond is retried, and reported if time runs out.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return err == nil && ok, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		if last != nil {
			return last
		}
		return fmt.Errorf("timed out after %s", timeout)
	}
	return err
}
