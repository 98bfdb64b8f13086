package addon

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// AddonDNSName is the one DNS name OCM's registration agent puts in an
// add-on's CSR.
const AddonDNSName = hostfleetv1alpha1.AddonName + ".addon.open-cluster-management.io"

// usages a client certificate of the agent may carry; client auth is
// required.
var allowedUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}

// CheckCSR says why a CertificateSigningRequest labelled for the add-on on
// cluster must not be approved, or nil when it is exactly what the cluster's
// own registration agent asks for its agent: requested by that registration
// agent (user "system:open-cluster-management:<cluster>:<name>" in group
// "system:open-cluster-management:<cluster>"), for the kube-apiserver client
// signer with client usages only, with the agent's exact common name and
// exactly its two organizations, and no other name than the add-on's DNS
// name OCM's registration agent adds.
func CheckCSR(cluster string, csr *certificatesv1.CertificateSigningRequest) error {
	prefix := hostfleetv1alpha1.RegistrationGroup(cluster) + ":"
	name, ok := strings.CutPrefix(csr.Spec.Username, prefix)
	if !ok || name == "" || strings.Contains(name, ":") {
		return fmt.Errorf("requester %q is not cluster %s's registration agent", csr.Spec.Username, cluster)
	}
	if !slices.Contains(csr.Spec.Groups, hostfleetv1alpha1.RegistrationGroup(cluster)) {
		return fmt.Errorf("requester %q is not in group %s", csr.Spec.Username, hostfleetv1alpha1.RegistrationGroup(cluster))
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return fmt.Errorf("signer %q is not %s", csr.Spec.SignerName, certificatesv1.KubeAPIServerClientSignerName)
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageClientAuth) {
		return errors.New("usages lack client auth")
	}
	for _, u := range csr.Spec.Usages {
		if !slices.Contains(allowedUsages, u) {
			return fmt.Errorf("usage %q is not for a client certificate", u)
		}
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return errors.New("request is not a PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	if want := hostfleetv1alpha1.AgentHubUser(cluster); req.Subject.CommonName != want {
		return fmt.Errorf("common name %q is not %q", req.Subject.CommonName, want)
	}
	want := []string{hostfleetv1alpha1.AgentHubGroup(cluster), hostfleetv1alpha1.AgentSharedGroup}
	got := slices.Sorted(slices.Values(req.Subject.Organization))
	if slices.Sort(want); !slices.Equal(got, want) {
		return fmt.Errorf("organizations %v are not exactly %v", req.Subject.Organization, want)
	}
	// OCM's registration agent names the add-on's DNS name, and nothing else.
	if len(req.DNSNames) > 1 || (len(req.DNSNames) == 1 && req.DNSNames[0] != AddonDNSName) ||
		len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return fmt.Errorf("request names hosts, addresses or URIs %v %v %v %v: a client certificate of the agent names at most %s",
			req.DNSNames, req.IPAddresses, req.EmailAddresses, req.URIs, AddonDNSName)
	}
	if len(req.Subject.OrganizationalUnit)+len(req.Subject.Country)+len(req.Subject.Locality)+len(req.Subject.Province)+
		len(req.Subject.StreetAddress)+len(req.Subject.PostalCode)+len(req.Subject.ExtraNames) > 0 || req.Subject.SerialNumber != "" {
		return errors.New("subject has fields besides the common name and organizations")
	}
	return nil
}

// approveCSR is the add-on's CSR approval check: CheckCSR, with every
// refusal logged with its reason (the CSR stays pending for a person).
func approveCSR(ctx context.Context, cluster *clusterv1.ManagedCluster, _ *addonv1beta1.ManagedClusterAddOn, csr *certificatesv1.CertificateSigningRequest) bool {
	log := ctrl.LoggerFrom(ctx).WithName("addon")
	if err := CheckCSR(cluster.Name, csr); err != nil {
		log.Info("CSR not approved", "csr", csr.Name, "cluster", cluster.Name, "why", err.Error())
		return false
	}
	log.V(1).Info("CSR approved", "csr", csr.Name, "cluster", cluster.Name)
	return true
}

// Subjects are the hub subjects to bind for the identity a cluster's agent
// registered with, as the ManagedClusterAddOn's status says, or an error
// that says why that identity is refused. With the CSR driver: the agent's
// user and its cluster's group (never the group every agent shares). With
// the token driver: exactly the ServiceAccount the driver makes for that
// cluster. Anything else, a user or group the registration agent named, is
// refused: the status is written by the cluster, not trusted.
func Subjects(cluster string, mca *addonv1beta1.ManagedClusterAddOn) ([]rbacv1.Subject, error) {
	var reg *addonv1beta1.KubeClientConfig
	for i := range mca.Status.Registrations {
		if r := mca.Status.Registrations[i]; r.Type == addonv1beta1.KubeClient && r.KubeClient != nil {
			reg = r.KubeClient
		}
	}
	if reg == nil || (reg.Subject.User == "" && len(reg.Subject.Groups) == 0) {
		return nil, nil
	}
	user := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	switch s := reg.Subject; {
	case s.User == hostfleetv1alpha1.AgentTokenUser(cluster) && len(s.Groups) == 0:
		return []rbacv1.Subject{user(s.User)}, nil
	case s.User == hostfleetv1alpha1.AgentHubUser(cluster):
		for _, g := range s.Groups {
			if g != hostfleetv1alpha1.AgentHubGroup(cluster) && g != hostfleetv1alpha1.AgentSharedGroup {
				return nil, fmt.Errorf("registration names group %q: the agent of cluster %s may be only %s (groups %s, %s) or %s",
					g, cluster, s.User, hostfleetv1alpha1.AgentHubGroup(cluster), hostfleetv1alpha1.AgentSharedGroup, hostfleetv1alpha1.AgentTokenUser(cluster))
			}
		}
		return []rbacv1.Subject{user(s.User),
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: hostfleetv1alpha1.AgentHubGroup(cluster)}}, nil
	default:
		return nil, fmt.Errorf("registration names user %q with groups %v: the agent of cluster %s may be only %s or %s",
			s.User, s.Groups, cluster, hostfleetv1alpha1.AgentHubUser(cluster), hostfleetv1alpha1.AgentTokenUser(cluster))
	}
}
