package hosted

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
)

// Identity is where the agent's identity lives on the managed cluster and
// where its token is kept locally.
type Identity struct {
	// Namespace holds the hostfleetv1alpha1.AgentServiceAccount and the namespaced Role.
	Namespace string
	// Name names the ClusterRole, Role and bindings (one agent per
	// managed cluster: "hostfleet-agent").
	Name string
	// TokenFile is where the current token is written; clients read it
	// again as it changes.
	TokenFile string
	// TTL is the lifetime asked for each token (at least 10 minutes).
	TTL time.Duration
	// Features select the agent's optional rights on the managed cluster
	// (permissions.AgentManagedCluster).
	Features permissions.Features
	// BMCNamespaces are the namespaces whose hosts the BMC driver drives:
	// in each, a Role lets the agent read BMC credentials
	// (permissions.AgentBMCNamespace). Nowhere else.
	BMCNamespaces []string
	// LocalClaimNamespaces are the namespaces whose local claims it serves:
	// in each, a Role lets it read their data secrets.
	LocalClaimNamespaces []string
}

// Bootstrap creates or updates the agent's hostfleetv1alpha1.AgentServiceAccount, roles and bindings
// with the bootstrap (cluster-admin) config, and writes a first token. The
// bootstrap config is not used again.
func Bootstrap(ctx context.Context, bootstrap *rest.Config, id Identity) error {
	cs, err := kubernetes.NewForConfig(bootstrap)
	if err != nil {
		return err
	}
	labels := map[string]string{"app.kubernetes.io/managed-by": "hostfleet-agent"}
	meta := func(ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: id.Name, Namespace: ns, Labels: labels}
	}
	// The cluster-scoped role and binding belong to the agent's namespace:
	// whoever removes the namespace (disabling the add-on does) removes them.
	var owner []metav1.OwnerReference
	clusterMeta := func() metav1.ObjectMeta {
		m := meta("")
		m.OwnerReferences = owner
		return m
	}
	// The Roles in other namespaces (BMC credentials, local claims'
	// secrets) cannot be owned by the agent's namespace: they carry the
	// agent's label instead.
	grantMeta := func(g permissions.NamespaceGrant) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: g.Role, Namespace: g.Namespace, Labels: labels}
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: hostfleetv1alpha1.AgentServiceAccount, Namespace: id.Namespace}}
	steps := []func() error{
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: id.Namespace, Labels: labels}}, metav1.CreateOptions{})
			if err := ignoreExists(err); err != nil {
				return err
			}
			ns, err := cs.CoreV1().Namespaces().Get(ctx, id.Namespace, metav1.GetOptions{})
			if err != nil {
				return err
			}
			owner = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID}}
			return nil
		},
		func() error {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.AgentServiceAccount, Namespace: id.Namespace, Labels: labels}}
			_, err := cs.CoreV1().ServiceAccounts(id.Namespace).Create(ctx, sa, metav1.CreateOptions{})
			return ignoreExists(err)
		},
		func() error {
			return upsert(ctx, cs.RbacV1().ClusterRoles(), &rbacv1.ClusterRole{ObjectMeta: clusterMeta(), Rules: permissions.AgentManagedCluster(id.Features)})
		},
		func() error {
			return upsert(ctx, cs.RbacV1().ClusterRoleBindings(), &rbacv1.ClusterRoleBinding{ObjectMeta: clusterMeta(), Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: id.Name}})
		},
		func() error {
			return upsert(ctx, cs.RbacV1().Roles(id.Namespace), &rbacv1.Role{ObjectMeta: meta(id.Namespace), Rules: permissions.AgentOwnNamespace()})
		},
		func() error {
			return upsert(ctx, cs.RbacV1().RoleBindings(id.Namespace), &rbacv1.RoleBinding{ObjectMeta: meta(id.Namespace), Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: id.Name}})
		},
	}
	for _, g := range permissions.AgentNamespaceGrants(id.BMCNamespaces, id.LocalClaimNamespaces) {
		steps = append(steps,
			func() error {
				return upsert(ctx, cs.RbacV1().Roles(g.Namespace), &rbacv1.Role{ObjectMeta: grantMeta(g), Rules: g.Rules})
			},
			func() error {
				return upsert(ctx, cs.RbacV1().RoleBindings(g.Namespace), &rbacv1.RoleBinding{ObjectMeta: grantMeta(g), Subjects: subject,
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: g.Role}})
			})
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("bootstrap the agent's identity on the managed cluster: %w", err)
		}
	}
	_, err = id.renew(ctx, cs)
	return err
}

// Config is the managed cluster's config for the agent's identity: the
// bootstrap config's server and CA, and the token file, which client-go
// reads again when it changes.
func (id Identity) Config(bootstrap *rest.Config) *rest.Config {
	cfg := rest.AnonymousClientConfig(bootstrap)
	cfg.BearerTokenFile = id.TokenFile
	cfg.QPS, cfg.Burst = bootstrap.QPS, bootstrap.Burst
	return cfg
}

// renew asks for a new token and writes it atomically; it returns when the
// token expires.
func (id Identity) renew(ctx context.Context, cs kubernetes.Interface) (time.Time, error) {
	ttl := int64(id.TTL.Seconds())
	tr, err := cs.CoreV1().ServiceAccounts(id.Namespace).CreateToken(ctx, hostfleetv1alpha1.AgentServiceAccount,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("request a token for %s/%s: %w", id.Namespace, hostfleetv1alpha1.AgentServiceAccount, err)
	}
	if err := os.MkdirAll(filepath.Dir(id.TokenFile), 0o700); err != nil {
		return time.Time{}, err
	}
	tmp := id.TokenFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(tr.Status.Token), 0o600); err != nil {
		return time.Time{}, err
	}
	if err := os.Rename(tmp, id.TokenFile); err != nil {
		return time.Time{}, err
	}
	return tr.Status.ExpirationTimestamp.Time, nil
}

// Refresher renews the token with the agent's own identity before it
// expires: at 80% of its life, or every Every if set (tests).
type Refresher struct {
	Identity Identity
	// Config is Identity.Config(...): the agent's own identity.
	Config *rest.Config
	Every  time.Duration
}

// NeedLeaderElection is false: every replica needs a valid token.
func (r *Refresher) NeedLeaderElection() bool { return false }

// Start renews until ctx is done; a failed renewal is retried every 10 s.
func (r *Refresher) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("token")
	cs, err := kubernetes.NewForConfig(r.Config)
	if err != nil {
		return err
	}
	next := r.wait(time.Now().Add(r.Identity.TTL))
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(next):
		}
		exp, err := r.Identity.renew(ctx, cs)
		if err != nil {
			log.Error(err, "renew the managed cluster token; retrying in 10s")
			next = 10 * time.Second
			continue
		}
		next = r.wait(exp)
		log.V(1).Info("renewed the managed cluster token", "expires", exp)
	}
}

func (r *Refresher) wait(expiry time.Time) time.Duration {
	if r.Every > 0 {
		return r.Every
	}
	return time.Until(expiry) * 4 / 5
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// upserter is the subset of typed clients upsert needs.
type upserter[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// upsert creates obj, or replaces it (rules and subjects are ours) if it exists.
func upsert[T any](ctx context.Context, c upserter[T], obj T) error {
	if _, err := c.Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err := c.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}
