package bmcdriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// open opens the host's BMC session.
func (x *run) open(ctx context.Context, kind metal3api.ErrorType) *hostError {
	d, user, err := x.Reconciler.open(ctx, x.host, kind)
	x.d, x.user = d, user
	return err
}

// open opens a session with the host's BMC, as the user its credentials
// Secret names. The Secret is read once and kept (keptSecret); it is read
// again only when the BMC refuses what was kept, and used again only if it
// changed since: a poll of a settled host reads no Secret.
func (r *Reconciler) open(ctx context.Context, host *metal3api.BareMetalHost, kind metal3api.ErrorType) (bmc.Driver, string, *hostError) {
	addr, err := bmc.ParseAddress(host.Spec.BMC.Address)
	if err != nil {
		return nil, "", fail(metal3api.RegistrationError, "%v", err)
	}
	if host.Spec.BMC.CredentialsName == "" {
		return nil, "", fail(metal3api.RegistrationError, "spec.bmc.credentialsName is empty: name a Secret with username and password in namespace %s", host.Namespace)
	}
	key := client.ObjectKey{Namespace: host.Namespace, Name: host.Spec.BMC.CredentialsName}
	secret, kept := r.keptSecret(key)
	if !kept {
		var herr *hostError
		if secret, herr = r.readSecret(ctx, key, kind); herr != nil {
			return nil, "", herr
		}
	}
	o := r.BMC
	o.InsecureSkipVerify = host.Spec.BMC.DisableCertificateVerification
	open := r.Open
	if open == nil {
		open = bmc.Open
	}
	login := func(s *corev1.Secret) (bmc.Driver, error) {
		return open(ctx, addr, string(s.Data["username"]), string(s.Data["password"]), o)
	}
	d, err := login(secret)
	if errors.Is(err, bmc.ErrCredentials) && kept {
		// Refused what was kept: the Secret may have changed since.
		fresh, herr := r.readSecret(ctx, key, kind)
		if herr != nil {
			return nil, "", herr
		}
		if fresh.ResourceVersion != secret.ResourceVersion {
			secret = fresh
			d, err = login(secret)
		}
	}
	switch {
	case errors.Is(err, bmc.ErrCredentials):
		host.Status.TriedCredentials = credentials(secret)
		return nil, "", fail(metal3api.RegistrationError, "the BMC at %s refused the username and password in Secret %s/%s: fix them", addr.HostPort(), host.Namespace, secret.Name)
	case errors.Is(err, bmc.ErrUnreachable):
		return nil, "", fail(bmcFault(host, kind), "the BMC at %s does not answer: check its address and network (%v)", addr.HostPort(), err)
	case err != nil:
		return nil, "", fail(bmcFault(host, kind), "%v", err)
	}
	host.Status.TriedCredentials = credentials(secret)
	host.Status.GoodCredentials = credentials(secret)
	return d, string(secret.Data["username"]), nil
}

// keptSecret is the credentials Secret of key as last read, if kept.
func (r *Reconciler) keptSecret(key client.ObjectKey) (*corev1.Secret, bool) {
	s, ok := r.secrets.Load(key)
	if !ok {
		return nil, false
	}
	return s.(*corev1.Secret), true
}

// readSecret reads the credentials Secret of key from the API server (the
// agent may get a Secret by name, never list or watch them) and keeps it
// when it holds a username and a password.
func (r *Reconciler) readSecret(ctx context.Context, key client.ObjectKey, kind metal3api.ErrorType) (*corev1.Secret, *hostError) {
	secrets := r.Secrets
	if secrets == nil {
		secrets = r.Client
	}
	secret := &corev1.Secret{}
	if err := secrets.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			r.secrets.Delete(key)
			return nil, fail(metal3api.RegistrationError, "BMC credentials Secret %s/%s does not exist", key.Namespace, key.Name)
		}
		return nil, fail(kind, "read BMC credentials: %v", err)
	}
	if len(secret.Data["username"]) == 0 || len(secret.Data["password"]) == 0 {
		r.secrets.Delete(key)
		return nil, fail(metal3api.RegistrationError, "BMC credentials Secret %s/%s needs both username and password", key.Namespace, key.Name)
	}
	r.secrets.Store(key, secret)
	return secret, nil
}

// forgetSecret drops the kept credentials of a host that goes.
func (r *Reconciler) forgetSecret(host *metal3api.BareMetalHost) {
	r.secrets.Delete(client.ObjectKey{Namespace: host.Namespace, Name: host.Spec.BMC.CredentialsName})
}

func credentials(s *corev1.Secret) metal3api.CredentialsStatus {
	return metal3api.CredentialsStatus{Reference: &corev1.SecretReference{Namespace: s.Namespace, Name: s.Name}, Version: s.ResourceVersion}
}

// bmcFault is the error type of a failure of the BMC itself (it does not
// answer, fails, or does not carry out a power change) while doing what
// kind names: on a host bound to a claim, a power management error even
// mid-provisioning, which heal judges failed, and never a provisioning
// error, which would send the tenant to check its image.
func bmcFault(host *metal3api.BareMetalHost, kind metal3api.ErrorType) metal3api.ErrorType {
	if kind == metal3api.ProvisioningError && host.Spec.ConsumerRef != nil {
		return metal3api.PowerManagementError
	}
	return kind
}

// errorKind is the error type a failure would be reported as, given what
// is asked of the host next.
func errorKind(host *metal3api.BareMetalHost) metal3api.ErrorType {
	st := host.Status.Provisioning.State
	switch {
	case st == metal3api.StateNone || st == metal3api.StateRegistering:
		return metal3api.RegistrationError
	case st == metal3api.StateInspecting:
		return metal3api.InspectionError
	case st == metal3api.StateProvisioning || st == metal3api.StateDeprovisioning,
		st == metal3api.StateAvailable && host.Spec.Image != nil && host.Spec.Image.URL != "" && host.Spec.ConsumerRef != nil,
		st == metal3api.StateProvisioned && Deprovision(host):
		return metal3api.ProvisioningError
	}
	return metal3api.PowerManagementError
}

// saveHardware writes the host's HardwareData as baremetal-operator does:
// a new object for every inspection (a re-inspection deletes the old one,
// so it gets a new UID and every copy of it follows), owned by the host and
// kept by a finalizer until the host itself goes.
func (r *Reconciler) saveHardware(ctx context.Context, host *metal3api.BareMetalHost, hw *metal3api.HardwareDetails,
	gpus []hostfleetv1alpha1.HardwareGPU, fw map[string]string) error {
	hd := &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: host.Namespace, Name: host.Name,
		Finalizers: []string{hostfleetv1alpha1.BMCDriverFinalizer}, Annotations: map[string]string{}},
		Spec: metal3api.HardwareDataSpec{HardwareDetails: hw.DeepCopy()}}
	// HardwareDetails has no place for GPUs, nor for firmware but the
	// BIOS's (hardware.OfData reads them).
	annotate := func(key string, v any, n int) error {
		if n == 0 {
			return nil
		}
		data, err := json.Marshal(v)
		hd.Annotations[key] = string(data)
		return err
	}
	if err := errors.Join(annotate(hardware.AnnotationGPUs, gpus, len(gpus)), annotate(hardware.AnnotationFirmware, fw, len(fw))); err != nil {
		return err
	}
	if err := controllerutil.SetControllerReference(host, hd, r.Client.Scheme()); err != nil {
		return err
	}
	// The first inspection creates it: one write, no read.
	if err := r.Client.Create(ctx, hd.DeepCopy()); !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := r.releaseHardware(ctx, host, true); err != nil {
		return err
	}
	return r.Client.Create(ctx, hd)
}

// releaseHardware lifts the driver's finalizer from the host's HardwareData
// and, with remove, deletes it (a re-inspection makes a new one).
func (r *Reconciler) releaseHardware(ctx context.Context, host *metal3api.BareMetalHost, remove bool) error {
	hd := &metal3api.HardwareData{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(host), hd); err != nil {
		return client.IgnoreNotFound(err)
	}
	if controllerutil.ContainsFinalizer(hd, hostfleetv1alpha1.BMCDriverFinalizer) {
		orig := hd.DeepCopy()
		controllerutil.RemoveFinalizer(hd, hostfleetv1alpha1.BMCDriverFinalizer)
		if err := r.Client.Patch(ctx, hd, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("lift the finalizer of HardwareData %s: %w", klog.KObj(hd), err)
		}
	}
	if !remove {
		return nil
	}
	if err := r.Client.Delete(ctx, hd, client.Preconditions{UID: &hd.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("replace HardwareData %s: %w", klog.KObj(hd), err)
	}
	return nil
}
