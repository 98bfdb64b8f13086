package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// certValidity is how long the webhook's CA and certificate last; one
// within certRenewal of its end is replaced when a hub starts.
const (
	certValidity = 5 * 365 * 24 * time.Hour
	certRenewal  = 90 * 24 * time.Hour
	recheck      = 12 * time.Hour
)

// Webhook serves the hub's validating webhook and registers it: at start it
// reads the serving certificate from Secret WebhookSecret in Namespace (every
// replica of the hub the same one), making it when there is none or it does
// not name the webhook's address, then applies the ValidatingWebhookConfiguration
// that trusts it. Until then the server has no certificate and the API server,
// failing to call it, admits unchecked (failure policy Ignore).
type Webhook struct {
	Options   WebhookOptions
	Namespace string
	// Reader reads the Secret uncached (the hub caches no secret data).
	Reader client.Reader
	Client client.Client
	cert   atomic.Pointer[tls.Certificate]
}

// Server is the webhook server for the manager's options.
func (w *Webhook) Server() (webhook.Server, error) {
	host, port, err := w.Options.hostPort()
	if err != nil {
		return nil, err
	}
	s := webhook.NewServer(webhook.Options{Host: host, Port: port, TLSOpts: []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = tls.VersionTLS12
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if cert := w.cert.Load(); cert != nil {
				return cert, nil
			}
			return nil, errors.New("no serving certificate yet")
		}
	}}})
	s.Register(WebhookPath, &webhook.Admission{Handler: Hardware{Decoder: admission.NewDecoder(w.Client.Scheme()), Reader: w.Client}})
	return s, nil
}

// Start implements manager.Runnable: it gets the certificate and registers
// the webhook, retrying with backoff while the API server fails, then again
// every recheck, so that a certificate near its end is renewed and every
// replica serves the one another renewed.
func (w *Webhook) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("admission-webhook")
	for {
		backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: math.MaxInt32, Cap: 30 * time.Second}
		_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			if err := w.register(ctx); err != nil {
				log.Error(err, "registering the validating webhook; retrying")
				return false, nil
			}
			log.V(1).Info("validating webhook registered", "name", WebhookName, "secret", w.Namespace+"/"+WebhookSecret)
			return true, nil
		})
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(recheck):
		}
	}
}

// NeedLeaderElection is false: every replica serves.
func (w *Webhook) NeedLeaderElection() bool { return false }

func (w *Webhook) register(ctx context.Context) error {
	s, err := w.secret(ctx)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("secret %s/%s: %w", w.Namespace, WebhookSecret, err)
	}
	w.cert.Store(&cert)
	cc, err := w.Options.clientConfig(s.Data["ca.crt"])
	if err != nil {
		return err
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(Configuration(cc))
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	return w.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(hostfleetv1alpha1.FieldManagerHub), client.ForceOwnership)
}

// secret returns the webhook's Secret, made or renewed when it does not
// serve the webhook's names for long enough. Replicas starting at once race
// to create it: the loser reads the winner's.
func (w *Webhook) secret(ctx context.Context) (*corev1.Secret, error) {
	names := w.Options.names()
	for range 3 {
		s := &corev1.Secret{}
		err := w.Reader.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: WebhookSecret}, s)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read secret %s/%s: %w", w.Namespace, WebhookSecret, err)
		}
		if err == nil && Serves(s.Data[corev1.TLSCertKey], names, time.Now()) {
			return s, nil
		}
		data, gerr := Certificates(names, time.Now())
		if gerr != nil {
			return nil, gerr
		}
		if apierrors.IsNotFound(err) {
			s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: WebhookSecret}, Data: data}
			if err = w.Client.Create(ctx, s); apierrors.IsForbidden(err) {
				return nil, fmt.Errorf("secret %s/%s is missing and the hub may not create it: create it empty (the operator does): %w", w.Namespace, WebhookSecret, err)
			}
		} else {
			s.Data = data
			err = w.Client.Update(ctx, s) // with the resourceVersion read: a conflict reads again
		}
		if err == nil {
			return s, nil
		}
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("write secret %s/%s: %w", w.Namespace, WebhookSecret, err)
		}
	}
	return nil, fmt.Errorf("secret %s/%s keeps changing", w.Namespace, WebhookSecret)
}

// Serves says whether certPEM is valid for names for at least certRenewal
// after now.
func Serves(certPEM []byte, names []string, now time.Time) bool {
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return false
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil || now.Add(certRenewal).After(c.NotAfter) {
		return false
	}
	for _, n := range names {
		if c.VerifyHostname(n) != nil {
			return false
		}
	}
	return true
}

// Certificates makes a CA and a serving certificate it signs for names,
// as Secret data (ca.crt, tls.crt, tls.key).
func Certificates(names []string, now time.Time) (map[string][]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial := func() *big.Int { n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120)); return n }
	ca := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "hostfleet-hub-webhook-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else if !slices.Contains(leaf.DNSNames, n) {
			leaf.DNSNames = append(leaf.DNSNames, n)
		}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"ca.crt":                pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}
