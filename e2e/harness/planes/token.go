package planes

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Token returns a one-hour token of the ServiceAccount ns/name on the
// plane, made if missing.
func (p *Plane) Token(ctx context.Context, ns, name string) (string, error) {
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
	} {
		if err := client.IgnoreAlreadyExists(p.Client.Create(ctx, o)); err != nil {
			return "", fmt.Errorf("token of %s/%s: %w", ns, name, err)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := p.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("token of %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}

// TokenWith is Token for a ServiceAccount that holds exactly rules,
// cluster-wide (a ClusterRole and binding named ns:name): no certificate,
// no administrator.
func (p *Plane) TokenWith(ctx context.Context, ns, name string, rules []rbacv1.PolicyRule) (string, error) {
	role := ns + ":" + name
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}},
	} {
		if err := client.IgnoreAlreadyExists(p.Client.Create(ctx, o)); err != nil {
			return "", fmt.Errorf("rights of %s/%s: %w", ns, name, err)
		}
	}
	return p.Token(ctx, ns, name)
}

// TokenConfig is the plane's address with only a bearer token.
func (p *Plane) TokenConfig(token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(p.Config)
	cfg.BearerToken = token
	return cfg
}
