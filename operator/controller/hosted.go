package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
)

const (
	// HubKubeconfigSecret is the Secret, in a Hosted hub's namespace on the
	// hosting cluster, with the hub controllers' own kubeconfig: a
	// TokenRequest token of their ServiceAccount on the hub, renewed before
	// it expires.
	HubKubeconfigSecret = "hostfleet-hub-kubeconfig"
	// AnnotationTokenExpires is when that token expires (RFC 3339).
	AnnotationTokenExpires = "operator.hostfleet.io/token-expires"
	// AnnotationTokenIssued is when it was issued (RFC 3339).
	AnnotationTokenIssued = "operator.hostfleet.io/token-issued"
	// TokenPath is where the hub's container reads the token.
	TokenPath = "/var/run/hub/token"
)

// NewHubClient is a client of the hub from an administrator's kubeconfig.
func NewHubClient(kubeconfig []byte, scheme *runtime.Scheme) (client.Client, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// hub is a client of the hub: the operator's own in Default mode; in Hosted
// mode one from the external-hub-kubeconfig Secret in the HostfleetHub's
// namespace, checked by asking the hub who it is. The error says what to fix.
func (r *Reconciler) hub(ctx context.Context, h *operatorv1alpha1.HostfleetHub) (client.Client, error) {
	if h.Spec.DeployOption.Mode != operatorv1alpha1.ModeHosted {
		return r.Client, nil
	}
	ns := Namespace(h)
	s := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: operatorv1alpha1.ExternalHubKubeconfig}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the Hosted mode needs Secret %s/%s with a \"kubeconfig\" key that reaches the hub as an administrator: create the namespace %s and the Secret on this cluster (kubectl -n %s create secret generic %s --from-file=kubeconfig=<file>)",
				ns, operatorv1alpha1.ExternalHubKubeconfig, ns, ns, operatorv1alpha1.ExternalHubKubeconfig)
		}
		return nil, fmt.Errorf("read Secret %s/%s: %w", ns, operatorv1alpha1.ExternalHubKubeconfig, err)
	}
	data := s.Data["kubeconfig"]
	if len(data) == 0 {
		return nil, fmt.Errorf("secret %s/%s has no \"kubeconfig\" key: put the hub's administrator kubeconfig there", ns, operatorv1alpha1.ExternalHubKubeconfig)
	}
	newClient := r.HubClient
	if newClient == nil {
		newClient = NewHubClient
	}
	c, err := newClient(data, r.Scheme)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: the kubeconfig is not usable: %w", ns, operatorv1alpha1.ExternalHubKubeconfig, err)
	}
	self := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, self); err != nil {
		return nil, fmt.Errorf("secret %s/%s: the hub does not answer through the kubeconfig (check its server, CA and credentials): %w",
			ns, operatorv1alpha1.ExternalHubKubeconfig, err)
	}
	return c, nil
}

// hostedToken keeps, in the Hosted hub's namespace on the hosting cluster,
// the kubeconfig of the hub controllers' ServiceAccount on the hub: a
// TokenRequest token (never the administrator's credentials), renewed at 80%
// of its life. It returns when to renew.
func (r *Reconciler) hostedToken(ctx context.Context, h *operatorv1alpha1.HostfleetHub, hub client.Client) (time.Duration, error) {
	ns := Namespace(h)
	now := time.Now()
	s := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: HubKubeconfigSecret}, s)
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("read Secret %s/%s: %w", ns, HubKubeconfigSecret, err)
	}
	if err == nil {
		issued, err1 := time.Parse(time.RFC3339, s.Annotations[AnnotationTokenIssued])
		expires, err2 := time.Parse(time.RFC3339, s.Annotations[AnnotationTokenExpires])
		if errors.Join(err1, err2) == nil {
			renew := issued.Add(expires.Sub(issued) * 8 / 10)
			if now.Before(renew) && len(s.Data["token"]) > 0 {
				return renew.Sub(now), nil
			}
		}
	}
	ext := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: operatorv1alpha1.ExternalHubKubeconfig}, ext); err != nil {
		return 0, err
	}
	kc, err := hubKubeconfig(ext.Data["kubeconfig"])
	if err != nil {
		return 0, fmt.Errorf("secret %s/%s: %w", ns, operatorv1alpha1.ExternalHubKubeconfig, err)
	}
	seconds := int64(r.TokenTTL / time.Second)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: hubSideNamespace(h), Name: HubName}}
	if err := hub.SubResource("token").Create(ctx, sa, tr); err != nil {
		return 0, fmt.Errorf("token of ServiceAccount %s on the hub: %w", klog.KObj(sa), err)
	}
	expires := tr.Status.ExpirationTimestamp.Time
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: HubKubeconfigSecret, Labels: labels(h, r.Release),
			Annotations: map[string]string{AnnotationTokenIssued: now.UTC().Format(time.RFC3339), AnnotationTokenExpires: expires.UTC().Format(time.RFC3339)}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"kubeconfig": kc, "token": []byte(tr.Status.Token)},
	}
	if err := apply(ctx, r.Client, r.Scheme, secret); err != nil {
		return 0, err
	}
	return expires.Sub(now) * 8 / 10, nil
}

// hubKubeconfig is a kubeconfig with the external kubeconfig's server and
// CA, whose credentials are the token file the hub's container mounts.
func hubKubeconfig(external []byte) ([]byte, error) {
	cfg, err := clientcmd.Load(external)
	if err != nil {
		return nil, err
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	if cur == nil {
		return nil, fmt.Errorf("the kubeconfig has no current context")
	}
	cluster := cfg.Clusters[cur.Cluster]
	if cluster == nil {
		return nil, fmt.Errorf("the kubeconfig's current context names no cluster")
	}
	out := clientcmdapi.NewConfig()
	out.Clusters["hub"] = &clientcmdapi.Cluster{Server: cluster.Server, CertificateAuthorityData: cluster.CertificateAuthorityData,
		CertificateAuthority: cluster.CertificateAuthority, TLSServerName: cluster.TLSServerName}
	out.AuthInfos["hostfleet-hub"] = &clientcmdapi.AuthInfo{TokenFile: TokenPath}
	out.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "hostfleet-hub"}
	out.CurrentContext = "hub"
	return clientcmd.Write(*out)
}
