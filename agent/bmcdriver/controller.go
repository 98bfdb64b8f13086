package bmcdriver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/hostfleet/hostfleet/agent/bmc"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Reconciler drives the BareMetalHosts Driven selects.
type Reconciler struct {
	Client client.Client
	// Secrets reads BMC credentials, uncached: the agent may get a Secret
	// by name but never list or watch them.
	Secrets client.Reader
	// All drives every host, not only the annotated ones.
	All bool
	// Namespaces, when set, limits the driver to the hosts of these
	// namespaces: the only ones whose BMC credentials the agent may read.
	Namespaces []string
	// BMC tunes the BMC calls.
	BMC bmc.Options
	// Poll is how often the power of a settled host is read again.
	Poll time.Duration
	// Workers bounds the hosts driven at once (and so the BMC calls).
	Workers int
}

// SetupWithManager watches the hosts of the managed cluster, which mgr
// runs (the agent's manager is the hub's; managed is added to it). Client
// must be managed's.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, managed cluster.Cluster) error {
	if r.Poll <= 0 {
		r.Poll = time.Minute
	}
	if r.Workers <= 0 {
		r.Workers = 10
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("bmc-driver").
		WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.BareMetalHost{},
			&handler.TypedEnqueueRequestForObject[*metal3api.BareMetalHost]{},
			predicate.TypedFuncs[*metal3api.BareMetalHost]{
				CreateFunc:  func(e event.TypedCreateEvent[*metal3api.BareMetalHost]) bool { return r.drives(e.Object) },
				DeleteFunc:  func(event.TypedDeleteEvent[*metal3api.BareMetalHost]) bool { return false },
				GenericFunc: func(e event.TypedGenericEvent[*metal3api.BareMetalHost]) bool { return r.drives(e.Object) },
				// Status writes are our own: spec, annotations and
				// deletion matter.
				UpdateFunc: func(e event.TypedUpdateEvent[*metal3api.BareMetalHost]) bool {
					return r.drives(e.ObjectNew) && (e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
						!maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()) ||
						e.ObjectNew.GetDeletionTimestamp() != nil)
				},
			})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).
		Complete(r)
}

// drives says whether the driver drives host.
func (r *Reconciler) drives(host *metal3api.BareMetalHost) bool {
	return DrivenIn(host, r.All, r.Namespaces)
}

// Reconcile moves one host one step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	host := &metal3api.BareMetalHost{}
	if err := r.Client.Get(ctx, req.NamespacedName, host); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	driven := r.drives(host)
	switch {
	case host.DeletionTimestamp != nil:
		return r.delete(ctx, host, driven)
	case !driven:
		// Handed back (annotation removed, paused, detached): let go.
		return ctrl.Result{}, r.setFinalizer(ctx, host, false)
	case !controllerutil.ContainsFinalizer(host, hostfleetv1alpha1.BMCDriverFinalizer):
		// Deleting a host the agent drives powers it off and ejects its
		// media first, as baremetal-operator deprovisions.
		if err := r.setFinalizer(ctx, host, true); err != nil {
			return ctrl.Result{}, err
		}
	}
	// One BMC session for as many steps as follow each other (registering
	// to provisioned is five); each step's status is written before the
	// next.
	var d bmc.Driver
	defer func() {
		if d != nil {
			_ = d.Close(context.WithoutCancel(ctx))
		}
	}()
	for range maxSteps {
		orig := host.DeepCopy()
		var res ctrl.Result
		var stepErr *failure
		if d == nil {
			d, stepErr = r.open(ctx, host, errorKind(host))
			if stepErr != nil && host.Status.Provisioning.State == metal3api.StateNone {
				host.Status.Provisioning.State = metal3api.StateRegistering
			}
		}
		if stepErr == nil {
			res, stepErr = r.step(ctx, host, d)
		}
		if err := r.record(ctx, orig, host, stepErr); err != nil {
			if apierrors.IsConflict(err) {
				return again, nil
			}
			return ctrl.Result{}, fmt.Errorf("status of %s: %w", req, err)
		}
		if stepErr != nil {
			return ctrl.Result{RequeueAfter: Backoff(host.Status.ErrorCount)}, nil
		}
		if res != again {
			return res, nil
		}
	}
	return again, nil
}

func (r *Reconciler) setFinalizer(ctx context.Context, host *metal3api.BareMetalHost, on bool) error {
	if controllerutil.ContainsFinalizer(host, hostfleetv1alpha1.BMCDriverFinalizer) == on {
		return nil
	}
	orig := host.DeepCopy()
	if on {
		controllerutil.AddFinalizer(host, hostfleetv1alpha1.BMCDriverFinalizer)
	} else {
		controllerutil.RemoveFinalizer(host, hostfleetv1alpha1.BMCDriverFinalizer)
	}
	return client.IgnoreNotFound(r.Client.Patch(ctx, host, client.MergeFrom(orig)))
}

// delete powers a deleted host off and ejects its media (when it was
// deployed and is still driven), then lets it go.
func (r *Reconciler) delete(ctx context.Context, host *metal3api.BareMetalHost, driven bool) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(host, hostfleetv1alpha1.BMCDriverFinalizer) {
		return ctrl.Result{}, nil
	}
	switch host.Status.Provisioning.State {
	case metal3api.StateProvisioning, metal3api.StateProvisioned, metal3api.StateDeprovisioning:
		if !driven {
			break
		}
		orig := host.DeepCopy()
		d, f := r.open(ctx, host, metal3api.ProvisioningError)
		if f == nil {
			defer func() { _ = d.Close(context.WithoutCancel(ctx)) }()
			if err := d.SetPower(ctx, false, true); err != nil {
				f = fail(metal3api.ProvisioningError, "deprovision before deletion: %v", err)
			} else if err := d.EjectMedia(ctx); err != nil {
				f = fail(metal3api.ProvisioningError, "deprovision before deletion: %v", err)
			}
		}
		if f != nil {
			// Kept until it works; the detached annotation lets it go as is.
			if err := r.record(ctx, orig, host, f); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			return ctrl.Result{RequeueAfter: Backoff(host.Status.ErrorCount)}, nil
		}
	}
	// The host goes: its HardwareData may go with it.
	if err := r.releaseHardware(ctx, host, false); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.setFinalizer(ctx, host, false)
}

// maxSteps bounds the steps taken in one reconcile.
const maxSteps = 6

// record writes what a step did: its error or the end of one, the status,
// and annotations it consumed.
func (r *Reconciler) record(ctx context.Context, orig, host *metal3api.BareMetalHost, stepErr *failure) error {
	if stepErr != nil {
		host.Status.ErrorCount++
		host.Status.ErrorMessage = stepErr.msg
		host.Status.ErrorType = stepErr.kind
		host.Status.OperationalStatus = metal3api.OperationalStatusError
	} else if host.Status.ErrorType != "" || host.Status.OperationalStatus != metal3api.OperationalStatusOK {
		host.Status.ErrorCount, host.Status.ErrorMessage, host.Status.ErrorType = 0, "", ""
		host.Status.OperationalStatus = metal3api.OperationalStatusOK
	}
	// The step's annotation changes (a done reboot or inspection request):
	// the status update below answers with the stored object, which still
	// has them.
	annotations := maps.Clone(host.Annotations)
	if !equalStatus(orig, host) {
		now := metav1.Now()
		host.Status.LastUpdated = &now
		// The whole status, as its only writer: a patch on a host that has
		// none yet would lack the fields the schema requires.
		if err := r.Client.Status().Update(ctx, host); err != nil {
			return err
		}
	}
	if !maps.Equal(annotations, orig.Annotations) {
		done := orig.DeepCopy()
		done.Annotations = annotations
		if err := r.Client.Patch(ctx, done, client.MergeFrom(orig)); err != nil {
			return err
		}
		host.ResourceVersion, host.Annotations = done.ResourceVersion, done.Annotations
	}
	return nil
}

// again takes the next step right away (each step's status is written first).
var again = ctrl.Result{RequeueAfter: time.Millisecond}

// failure is a step's error, as baremetal-operator reports it.
type failure struct {
	kind metal3api.ErrorType
	msg  string
}

func fail(kind metal3api.ErrorType, format string, args ...any) *failure {
	return &failure{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func (r *Reconciler) open(ctx context.Context, host *metal3api.BareMetalHost, kind metal3api.ErrorType) (bmc.Driver, *failure) {
	addr, err := bmc.ParseAddress(host.Spec.BMC.Address)
	if err != nil {
		return nil, fail(metal3api.RegistrationError, "%v", err)
	}
	if host.Spec.BMC.CredentialsName == "" {
		return nil, fail(metal3api.RegistrationError, "spec.bmc.credentialsName is empty: name a Secret with username and password in namespace %s", host.Namespace)
	}
	secret := &corev1.Secret{}
	secrets := r.Secrets
	if secrets == nil {
		secrets = r.Client
	}
	if err := secrets.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: host.Spec.BMC.CredentialsName}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fail(metal3api.RegistrationError, "BMC credentials Secret %s/%s does not exist", host.Namespace, host.Spec.BMC.CredentialsName)
		}
		return nil, fail(kind, "read BMC credentials: %v", err)
	}
	user, pass := string(secret.Data["username"]), string(secret.Data["password"])
	if user == "" || pass == "" {
		return nil, fail(metal3api.RegistrationError, "BMC credentials Secret %s/%s needs both username and password", host.Namespace, secret.Name)
	}
	o := r.BMC
	o.InsecureSkipVerify = host.Spec.BMC.DisableCertificateVerification
	d, err := bmc.Open(ctx, addr, user, pass, o)
	switch {
	case errors.Is(err, bmc.ErrCredentials):
		host.Status.TriedCredentials = credentials(secret)
		return nil, fail(metal3api.RegistrationError, "the BMC at %s refused the username and password in Secret %s/%s: fix them", addr.HostPort(), host.Namespace, secret.Name)
	case errors.Is(err, bmc.ErrUnreachable):
		return nil, fail(kind, "the BMC at %s does not answer: check its address and network (%v)", addr.HostPort(), err)
	case err != nil:
		return nil, fail(kind, "%v", err)
	}
	host.Status.TriedCredentials = credentials(secret)
	host.Status.GoodCredentials = credentials(secret)
	return d, nil
}

func credentials(s *corev1.Secret) metal3api.CredentialsStatus {
	return metal3api.CredentialsStatus{Reference: &corev1.SecretReference{Namespace: s.Namespace, Name: s.Name}, Version: s.ResourceVersion}
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

// stateHandler does what one provisioning state asks of a host, once,
// through its BMC.
type stateHandler func(r *Reconciler, ctx context.Context, host *metal3api.BareMetalHost, d bmc.Driver) (ctrl.Result, *failure)

// handlers are the states the driver moves hosts through, as
// baremetal-operator's host state machine does.
var handlers = map[metal3api.ProvisioningState]stateHandler{
	metal3api.StateNone:           (*Reconciler).register,
	metal3api.StateRegistering:    (*Reconciler).register,
	metal3api.StateInspecting:     (*Reconciler).inspect,
	metal3api.StateAvailable:      (*Reconciler).available,
	metal3api.StateProvisioning:   (*Reconciler).provision,
	metal3api.StateProvisioned:    (*Reconciler).provisioned,
	metal3api.StateDeprovisioning: (*Reconciler).deprovision,
}

// step does what the host's state asks, once, through d.
func (r *Reconciler) step(ctx context.Context, host *metal3api.BareMetalHost, d bmc.Driver) (ctrl.Result, *failure) {
	h, ok := handlers[host.Status.Provisioning.State]
	if !ok {
		return ctrl.Result{}, fail(errorKind(host), "state %q is not one the agent's BMC driver handles", host.Status.Provisioning.State)
	}
	return h(r, ctx, host, d)
}

// register checks that the BMC answers with the credentials, then inspects
// (or, with inspection disabled, makes the host available).
func (r *Reconciler) register(ctx context.Context, host *metal3api.BareMetalHost, d bmc.Driver) (ctrl.Result, *failure) {
	on, err := d.Power(ctx)
	if err != nil {
		return ctrl.Result{}, fail(metal3api.RegistrationError, "%v", err)
	}
	host.Status.PoweredOn = on
	host.Status.Provisioning.State = metal3api.StateInspecting
	if InspectionDisabled(host) {
		host.Status.Provisioning.State = metal3api.StateAvailable
	}
	return again, nil
}

// inspect reads the BMC's inventory into the host's HardwareData.
func (r *Reconciler) inspect(ctx context.Context, host *metal3api.BareMetalHost, d bmc.Driver) (ctrl.Result, *failure) {
	hw, err := d.Inventory(ctx)
	switch {
	case errors.Is(err, bmc.ErrUnsupported):
		// IPMI reports no inventory: the host is available without
		// HardwareData, as with inspection disabled.
	case err != nil:
		return ctrl.Result{}, fail(metal3api.InspectionError, "%v", err)
	default:
		if err := r.saveHardware(ctx, host, hw); err != nil {
			return ctrl.Result{}, fail(metal3api.InspectionError, "save HardwareData: %v", err)
		}
		host.Status.HardwareDetails = hw
		host.Status.HardwareProfile = "unknown"
	}
	delete(host.Annotations, metal3api.InspectAnnotationPrefix)
	host.Status.Provisioning.State = metal3api.StateAvailable
	return again, nil
}

// available provisions a host that a consumer gave an image, inspects it
// again when asked, and otherwise keeps its power as spec.online says.
func (r *Reconciler) available(ctx context.Context, host *metal3api.BareMetalHost, d bmc.Driver) (ctrl.Result, *failure) {
	if img := host.Spec.Image; img != nil && img.URL != "" && host.Spec.ConsumerRef != nil {
		if err := ValidateImage(img); err != nil {
			return ctrl.Result{}, fail(metal3api.ProvisioningError, "%v", err)
		}
		host.Status.Provisioning.State = metal3api.StateProvisioning
		return again, nil
	}
	if v, ok := host.Annotations[metal3api.InspectAnnotationPrefix]; ok && v != inspectDisabled {
		host.Status.Provisioning.State = metal3api.StateInspecting // re-inspection asked for
		return again, nil
	}
	return r.power(ctx, d, host)
}

// provision boots the live ISO by virtual media: insert, boot once from the
// CD, reset.
func (r *Reconciler) provision(ctx context.Context, host *metal3api.BareMetalHost, d bmc.Driver) (ctrl.Result, *failure) {
	st := &host.Status.Provisioning
	img := host.Spec.Image
	if img == nil || img.URL == "" {
		st.State = metal3api.StateDeprovisioning
		return again, nil
	}
	if err := ValidateImage(img); err != nil {
		return ctrl.Result{}, fail(metal3api.ProvisioningError, "%v", err)
	}
	if err := d.InsertMedia(ctx, img.URL); err != nil {
		return ctrl.Result{}, fail(metal3api.ProvisioningError, "boot the live ISO: %v", err)
	}
	if err := d.SetBootOnce(ctx, bmc.BootCDROM); err != nil {
		return ctrl.Result{}, fail(metal3api.ProvisioningError, "boot the live ISO: %v", err)
	}
	if err := d.Reboot(ctx, true); err != nil {
		return ctrl.Result{}, fail(metal3api.ProvisioningError, "boot the live ISO: %v", err)
	}
	host.Status.PoweredOn = true
	st.Image = *img.DeepCopy()
	st.State = metal3api.StateProvisioned
	return again, nil
}

// provisioned deprovisions a host its consumer let go, and otherwise keeps
// its power as spec.online and the reboot annotations say.
func (r *Reconciler) provisioned(ctx context.Context, host *metal3api.BareMetalHost, d bmc.Driver) (ctrl.Result, *failure) {
	if Deprovision(host) {
		host.Status.Provisioning.State = metal3api.StateDeprovisioning
		return again, nil
	}
	return r.power(ctx, d, host)
}

// deprovision powers the host off and ejects its media.
func (r *Reconciler) deprovision(ctx context.Context, host *metal3api.BareMetalHost, d bmc.Driver) (ctrl.Result, *failure) {
	if err := d.SetPower(ctx, false, true); err != nil {
		return ctrl.Result{}, fail(metal3api.ProvisioningError, "deprovision: %v", err)
	}
	if err := d.EjectMedia(ctx); err != nil {
		return ctrl.Result{}, fail(metal3api.ProvisioningError, "deprovision: %v", err)
	}
	host.Status.PoweredOn = false
	host.Status.Provisioning.Image = metal3api.Image{}
	host.Status.Provisioning.State = metal3api.StateAvailable
	return again, nil
}

// power applies spec.online and the reboot annotations, and reads the power
// again every Poll.
func (r *Reconciler) power(ctx context.Context, d bmc.Driver, host *metal3api.BareMetalHost) (ctrl.Result, *failure) {
	on, err := d.Power(ctx)
	if err != nil {
		return ctrl.Result{}, fail(metal3api.PowerManagementError, "%v", err)
	}
	want := host.Spec.Online
	reboot := RebootRequest(host.Annotations)
	switch {
	case reboot.HoldOff:
		want = false
	case reboot.Requested && on && want:
		if err := d.Reboot(ctx, reboot.Hard); err != nil {
			return ctrl.Result{}, fail(metal3api.PowerManagementError, "reboot: %v", err)
		}
		for _, k := range reboot.Keys {
			delete(host.Annotations, k)
		}
	case reboot.Requested:
		for _, k := range reboot.Keys {
			delete(host.Annotations, k) // off, or to be powered on below: that is the reboot
		}
	}
	if on != want {
		if err := d.SetPower(ctx, want, reboot.Hard || !want); err != nil {
			return ctrl.Result{}, fail(metal3api.PowerManagementError, "power %s: %v", map[bool]string{true: "on", false: "off"}[want], err)
		}
		on = want
	}
	host.Status.PoweredOn = on
	return ctrl.Result{RequeueAfter: r.Poll}, nil
}

// saveHardware writes the host's HardwareData as baremetal-operator does:
// a new object for every inspection (a re-inspection deletes the old one,
// so it gets a new UID and every copy of it follows), owned by the host and
// kept by a finalizer until the host itself goes.
func (r *Reconciler) saveHardware(ctx context.Context, host *metal3api.BareMetalHost, hw *metal3api.HardwareDetails) error {
	if err := r.releaseHardware(ctx, host, true); err != nil {
		return err
	}
	hd := &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: host.Namespace, Name: host.Name,
		Finalizers: []string{hostfleetv1alpha1.BMCDriverFinalizer}},
		Spec: metal3api.HardwareDataSpec{HardwareDetails: hw.DeepCopy()}}
	if err := controllerutil.SetControllerReference(host, hd, r.Client.Scheme()); err != nil {
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
			return fmt.Errorf("lift the finalizer of HardwareData %s/%s: %w", hd.Namespace, hd.Name, err)
		}
	}
	if !remove {
		return nil
	}
	if err := r.Client.Delete(ctx, hd, client.Preconditions{UID: &hd.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("replace HardwareData %s/%s: %w", hd.Namespace, hd.Name, err)
	}
	return nil
}

// equalStatus compares statuses but for when they were written.
func equalStatus(a, b *metal3api.BareMetalHost) bool {
	x, y := a.Status.DeepCopy(), b.Status.DeepCopy()
	x.LastUpdated, y.LastUpdated = nil, nil
	return reflect.DeepEqual(x, y)
}
