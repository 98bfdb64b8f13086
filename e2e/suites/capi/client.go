// Package capi holds the Cluster API client suite: a client that uses
// Hostfleet the way Cluster API Provider Metal3 does with HostClaims on a
// remote cluster (one claim per Metal3Machine, made through a kubeconfig
// limited to one namespace of the hub), and the tests that build a
// tenant's cluster with it. The client is written from that provider's
// HostClaim behaviour (baremetal/metal3machine_host_manager.go of its
// HostClaim branch), not imported: no such module is published.
//
// The client keeps its Metal3Machines as ConfigMaps, and the data it
// renders for them as Secrets, in a namespace of a management cluster: a
// `clusterctl move` recreates them there, and a new client carries on.
package capi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Names Cluster API and its Metal3 provider use.
const (
	ClusterNameLabel    = "cluster.x-k8s.io/cluster-name"
	NodeReuseLabel      = "infrastructure.cluster.x-k8s.io/node-reuse"
	NodeReuseCleared    = "infrastructure.cluster.x-k8s.io/node-reuse-cleared-at"
	HostClaimAnnotation = "metal3.io/hostclaim"
	PausedAnnotationKey = "metal3.io/capm3"
	MachineAPIVersion   = "infrastructure.cluster.x-k8s.io/v1beta1"
	RemoteMachineKind   = "RemoteMetal3Machine"
	machineLabel        = "capi.hostfleet.io/metal3machine"
)

// ErrWaiting is a pass that has to be made again later (the provider's
// transient errors): the claim is not there yet.
var ErrWaiting = errors.New("waiting")

// Machine is a Metal3Machine as the client keeps it: its spec, and the
// status the provider writes.
type Machine struct {
	Name         string                 `json:"name"`
	Image        metal3api.Image        `json:"image"`
	HostSelector metal3api.HostSelector `json:"hostSelector"`
	// NodeReuse is the pool (MachineDeployment) whose claims are kept for
	// the next machine when one is deleted; empty: no node reuse.
	NodeReuse string `json:"nodeReuse,omitempty"`

	// HostClaim is the claim the machine uses (annotation metal3.io/hostclaim).
	HostClaim string `json:"hostClaim,omitempty"`
	// UserData and MetaData name the Secrets rendered for the machine in
	// the management cluster, once its claim is bound.
	UserData string `json:"userData,omitempty"`
	MetaData string `json:"metaData,omitempty"`
	// ProviderID and Addresses, from the claim once it is Ready.
	ProviderID string   `json:"providerID,omitempty"`
	Addresses  []string `json:"addresses,omitempty"`
	Hostname   string   `json:"hostname,omitempty"`
	Ready      bool     `json:"ready"`
}

// Client is the provider's machine manager for one cluster: Mgmt holds the
// Metal3Machines in Namespace; Remote is the hub, reached with a tenant
// admin's kubeconfig, where the claims live in RemoteNamespace.
type Client struct {
	Mgmt            client.Client
	Namespace       string
	Remote          client.Client
	RemoteNamespace string
	Cluster         string
	// Paused and Deleting are the Cluster's state.
	Paused, Deleting bool
}

// Create makes a Metal3Machine.
func (cl *Client) Create(ctx context.Context, m Machine) error {
	return cl.save(ctx, &m, true)
}

// Get reads a Metal3Machine.
func (cl *Client) Get(ctx context.Context, name string) (*Machine, error) {
	cm := &corev1.ConfigMap{}
	if err := cl.Mgmt.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: name}, cm); err != nil {
		return nil, err
	}
	m := &Machine{}
	return m, json.Unmarshal([]byte(cm.Data["machine"]), m)
}

func (cl *Client) save(ctx context.Context, m *Machine, create bool) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: m.Name,
		Labels: map[string]string{machineLabel: cl.Cluster}}, Data: map[string]string{"machine": string(b)}}
	if create {
		return cl.Mgmt.Create(ctx, cm)
	}
	return cl.Mgmt.Update(ctx, cm)
}

// Reconcile makes one pass over a machine, as the provider's controller
// does: pause or unpause its claim with the cluster; associate (make the
// claim, or take a reusable one); render the machine's data from the
// claim's status and HardwareData; hand the data to the claim and power it
// on; read Ready, the host's identity and the addresses back.
func (cl *Client) Reconcile(ctx context.Context, name string) (*Machine, error) {
	m, err := cl.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	c, err := cl.claim(ctx, m)
	if err != nil {
		return m, err
	}
	if cl.Paused {
		return m, cl.setPause(ctx, c, true)
	}
	if err := cl.setPause(ctx, c, false); err != nil {
		return m, err
	}
	if c == nil {
		if c, err = cl.associate(ctx, m); err != nil {
			return m, err
		}
		m.HostClaim = c.Name
		if err := cl.save(ctx, m, false); err != nil {
			return m, err
		}
	}
	if err := cl.render(ctx, m, c); err != nil {
		return m, err
	}
	if err := cl.setHostSpec(ctx, m, c); err != nil {
		return m, err
	}
	cl.readBack(ctx, m, c)
	return m, cl.save(ctx, m, false)
}

// claim is the machine's claim, or nil.
func (cl *Client) claim(ctx context.Context, m *Machine) (*metal3api.HostClaim, error) {
	if m.HostClaim == "" {
		return nil, nil
	}
	c := &metal3api.HostClaim{}
	err := cl.Remote.Get(ctx, client.ObjectKey{Namespace: cl.RemoteNamespace, Name: m.HostClaim}, c)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c, err
}

// setPause sets or removes the pause annotation on the claim; it removes
// only the provider's own (a pause a person set stays).
func (cl *Client) setPause(ctx context.Context, c *metal3api.HostClaim, pause bool) error {
	if c == nil {
		return nil
	}
	v, paused := c.Annotations[metal3api.PausedAnnotation]
	if pause == paused || (!pause && (v != PausedAnnotationKey || c.Labels[ClusterNameLabel] != cl.Cluster)) {
		return nil
	}
	orig := c.DeepCopy()
	if pause {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[metal3api.PausedAnnotation] = PausedAnnotationKey
	} else {
		delete(c.Annotations, metal3api.PausedAnnotation)
	}
	return cl.Remote.Patch(ctx, c, client.MergeFrom(orig))
}

// associate takes a claim for the machine: with node reuse, a claim of its
// pool that no machine consumes and whose host is available again (waiting
// while one is still being cleaned); else a new claim named after the
// machine, powered off, consumed by it.
func (cl *Client) associate(ctx context.Context, m *Machine) (*metal3api.HostClaim, error) {
	if m.NodeReuse != "" {
		var pool metal3api.HostClaimList
		if err := cl.Remote.List(ctx, &pool, client.InNamespace(cl.RemoteNamespace), client.MatchingLabels{NodeReuseLabel: m.NodeReuse}); err != nil {
			return nil, err
		}
		future := false
		for i := range pool.Items {
			c := &pool.Items[i]
			switch {
			case c.Spec.ConsumerRef != nil && c.Spec.ConsumerRef.Name == m.Name:
				return c, nil
			case c.Spec.ConsumerRef != nil:
			case meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionAvailableForProvisioning):
				orig := c.DeepCopy()
				c.Spec.ConsumerRef = cl.consumerRef(m)
				delete(c.Annotations, NodeReuseCleared)
				c.Spec.Image, c.Spec.HostSelector = &m.Image, m.HostSelector
				return c, cl.Remote.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
			default:
				future = true
			}
		}
		if future {
			return nil, fmt.Errorf("%w: a claim of pool %s is being cleaned for reuse", ErrWaiting, m.NodeReuse)
		}
	}
	c := &metal3api.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: cl.RemoteNamespace, Name: m.Name, Labels: map[string]string{ClusterNameLabel: cl.Cluster}},
		Spec:       metal3api.HostClaimSpec{HostSelector: m.HostSelector, Image: &m.Image, ConsumerRef: cl.consumerRef(m)},
	}
	if m.NodeReuse != "" {
		c.Labels[NodeReuseLabel] = m.NodeReuse
	}
	return c, cl.Remote.Create(ctx, c)
}

func (cl *Client) consumerRef(m *Machine) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: MachineAPIVersion, Kind: RemoteMachineKind, Namespace: cl.Namespace, Name: m.Name}
}

// render makes the machine's user data and metadata once its claim is
// bound, from the claim's status, the host's identity and its HardwareData
// (the provider's Metal3Data, simplified): the hostname, the providerID
// and the first NIC address.
func (cl *Client) render(ctx context.Context, m *Machine, c *metal3api.HostClaim) error {
	if m.UserData != "" && m.MetaData != "" {
		return nil
	}
	uid := c.Annotations[hostfleetv1alpha1.AnnotationHostUID]
	if !meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated) || c.Status.HardwareData == nil || uid == "" {
		return fmt.Errorf("%w: claim %s not bound yet", ErrWaiting, c.Name)
	}
	hw := &metal3api.HardwareData{}
	if err := cl.Remote.Get(ctx, client.ObjectKey{Namespace: c.Status.HardwareData.Namespace, Name: c.Status.HardwareData.Name}, hw); err != nil {
		return fmt.Errorf("read the HardwareData of claim %s: %w", c.Name, err)
	}
	m.Addresses, m.Hostname = addresses(hw), m.Name
	if d := hw.Spec.HardwareDetails; d != nil && d.Hostname != "" {
		m.Hostname = d.Hostname
	}
	metaData, err := json.Marshal(map[string]string{"local-hostname": m.Hostname, "instance-id": uid, "providerid": "metal3://" + uid})
	if err != nil {
		return err
	}
	for _, s := range []struct {
		name, key string
		data      []byte
	}{
		{m.Name + "-metadata", "metaData", metaData},
		{m.Name + "-userdata", "userData", []byte("#cloud-config\nhostname: " + m.Hostname + "\n")},
	} {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: s.name}, Data: map[string][]byte{s.key: s.data}}
		if err := cl.Mgmt.Create(ctx, secret); client.IgnoreAlreadyExists(err) != nil {
			return err
		}
	}
	m.MetaData, m.UserData = m.Name+"-metadata", m.Name+"-userdata"
	return nil
}

// addresses are the NIC addresses of a HardwareData.
func addresses(hw *metal3api.HardwareData) []string {
	var out []string
	if hw.Spec.HardwareDetails != nil {
		for _, n := range hw.Spec.HardwareDetails.NIC {
			if n.IP != "" {
				out = append(out, n.IP)
			}
		}
	}
	return out
}

// setHostSpec copies the rendered data next to the claim
// (<claim>-userdata, <claim>-metadata), names them in the claim and powers
// it on; until they exist, the claim stays powered off.
func (cl *Client) setHostSpec(ctx context.Context, m *Machine, c *metal3api.HostClaim) error {
	orig := c.DeepCopy()
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels[ClusterNameLabel] = cl.Cluster
	c.Spec.ConsumerRef = cl.consumerRef(m)
	for _, s := range []struct {
		from, role string
		ref        **corev1.SecretReference
	}{{m.UserData, "userdata", &c.Spec.UserData}, {m.MetaData, "metadata", &c.Spec.MetaData}} {
		local := &corev1.Secret{}
		if err := cl.Mgmt.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: s.from}, local); err != nil {
			return err
		}
		remote := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cl.RemoteNamespace, Name: c.Name + "-" + s.role}, Data: local.Data}
		err := cl.Remote.Create(ctx, remote)
		if apierrors.IsAlreadyExists(err) {
			err = cl.Remote.Update(ctx, remote)
		}
		if err != nil {
			return err
		}
		*s.ref = &corev1.SecretReference{Name: remote.Name, Namespace: cl.RemoteNamespace}
	}
	c.Spec.PoweredOn = true
	return cl.Remote.Patch(ctx, c, client.MergeFrom(orig))
}

// readBack sets the machine Ready with its providerID (made from the
// host's UID) once the claim is Ready.
func (cl *Client) readBack(_ context.Context, m *Machine, c *metal3api.HostClaim) {
	m.Ready = meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionReady)
	if uid := c.Annotations[hostfleetv1alpha1.AnnotationHostUID]; m.Ready && uid != "" {
		m.ProviderID = "metal3://" + uid
	}
}

// Delete makes one pass at deleting a machine; done once its claim is
// released. With node reuse (and the cluster not being deleted) the claim
// is kept, cleared of image, data and power and of its consumer, for the
// next machine of the pool; otherwise it is deleted.
func (cl *Client) Delete(ctx context.Context, name string) (done bool, _ error) {
	m, err := cl.Get(ctx, name)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	c, err := cl.claim(ctx, m)
	if err != nil {
		return false, err
	}
	if c == nil {
		return true, cl.forget(ctx, m)
	}
	orig := c.DeepCopy()
	if m.NodeReuse != "" && !cl.Deleting {
		if c.Spec.ConsumerRef != nil && c.Spec.ConsumerRef.Name == m.Name {
			c.Spec.Image, c.Spec.UserData, c.Spec.NetworkData, c.Spec.MetaData = nil, nil, nil, nil
			c.Spec.PoweredOn, c.Spec.ConsumerRef = false, nil
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[NodeReuseCleared] = time.Now().UTC().Format(time.RFC3339)
			if err := cl.Remote.Patch(ctx, c, client.MergeFrom(orig)); err != nil {
				return false, err
			}
		}
		return true, cl.forget(ctx, m)
	}
	if c.Spec.ConsumerRef != nil {
		c.Spec.ConsumerRef = nil
		if err := cl.Remote.Patch(ctx, c, client.MergeFrom(orig)); err != nil {
			return false, err
		}
	}
	if err := cl.Remote.Delete(ctx, c); client.IgnoreNotFound(err) != nil {
		return false, err
	}
	return false, fmt.Errorf("%w: claim %s is being deleted", ErrWaiting, c.Name)
}

// forget deletes the machine and its rendered data from the management
// cluster.
func (cl *Client) forget(ctx context.Context, m *Machine) error {
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: m.Name + "-userdata"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: m.Name + "-metadata"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: m.Name}},
	} {
		if err := cl.Mgmt.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// Move is a `clusterctl move` of the client's own objects: its machines
// and their rendered data are read, deleted and made again (new objects,
// as on a new management cluster), and a new client, with the cluster
// still paused, carries on. The claims on the hub are not touched.
func Move(ctx context.Context, from *Client) (*Client, error) {
	var machines corev1.ConfigMapList
	if err := from.Mgmt.List(ctx, &machines, client.InNamespace(from.Namespace), client.MatchingLabels{machineLabel: from.Cluster}); err != nil {
		return nil, err
	}
	var objs []client.Object
	for i := range machines.Items {
		cm := &machines.Items[i]
		objs = append(objs, cm)
		for _, suffix := range []string{"-userdata", "-metadata"} {
			s := &corev1.Secret{}
			err := from.Mgmt.Get(ctx, client.ObjectKey{Namespace: from.Namespace, Name: cm.Name + suffix}, s)
			if err == nil {
				objs = append(objs, s)
			} else if !apierrors.IsNotFound(err) {
				return nil, err
			}
		}
	}
	for _, o := range objs {
		if err := from.Mgmt.Delete(ctx, o); err != nil {
			return nil, fmt.Errorf("move: delete %s: %w", o.GetName(), err)
		}
		o.SetResourceVersion("")
		o.SetUID("")
		o.SetCreationTimestamp(metav1.Time{})
		o.SetManagedFields(nil)
		if err := from.Mgmt.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("move: make %s again: %w", o.GetName(), err)
		}
	}
	to := *from
	to.Paused = true
	return &to, nil
}
