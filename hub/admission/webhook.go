package admission

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/hostfleet/hostfleet/hub/api/baseline"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/classes"
)

const (
	// WebhookName names the hub's ValidatingWebhookConfiguration.
	WebhookName = hostfleetv1alpha1.HubWebhook
	// WebhookPath is where the hub serves it.
	WebhookPath = "/validate-hardware"
	// WebhookSecret holds its CA and serving certificate, in the hub's
	// namespace.
	WebhookSecret = hostfleetv1alpha1.HubWebhookSecret
	// webhookTimeout bounds each call: the API server admits the object
	// without the check when the hub does not answer in time.
	webhookTimeout = 5
)

// WebhookOptions say whether and how the hub serves the checks no
// ValidatingAdmissionPolicy can make: a hardware requirement is CEL that
// must compile, and a policy's CEL cannot compile CEL.
type WebhookOptions struct {
	// BindAddress is where the hub serves HTTPS; "0" or empty serves
	// nothing and registers nothing.
	BindAddress string
	// Service ("namespace/name[:port]") or URL is how the API server
	// reaches it: a Service in front of the hub's pods, or an address.
	Service, URL string
}

// AddFlags registers the options on fs.
func (o *WebhookOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "webhook-bind-address", o.BindAddress,
		"where the hub serves its validating webhook (hardware requirements of claims and Tenants refused at admission); \"0\" or empty serves none, and a bad requirement is then refused at placement")
	fs.StringVar(&o.Service, "webhook-service", o.Service,
		"namespace/name[:port] of the Service through which the API server reaches the webhook")
	fs.StringVar(&o.URL, "webhook-url", o.URL,
		"https URL through which the API server reaches the webhook, when it is not a Service (a hub outside the cluster)")
}

// Serves says whether the webhook is on.
func (o *WebhookOptions) Serves() bool { return o.BindAddress != "" && o.BindAddress != "0" }

// Validate says what is wrong with the options.
func (o *WebhookOptions) Validate() []error {
	if !o.Serves() {
		return nil
	}
	var errs []error
	if _, _, err := o.hostPort(); err != nil {
		errs = append(errs, err)
	}
	if (o.Service == "") == (o.URL == "") {
		errs = append(errs, fmt.Errorf("--webhook-bind-address needs exactly one of --webhook-service and --webhook-url (got %q and %q)", o.Service, o.URL))
	}
	if o.Service != "" {
		if _, err := o.clientConfig(nil); err != nil {
			errs = append(errs, err)
		}
	}
	if o.URL != "" {
		if u, err := url.Parse(o.URL); err != nil || u.Scheme != "https" || u.Hostname() == "" {
			errs = append(errs, fmt.Errorf("--webhook-url %q must be an https URL with a host", o.URL))
		}
	}
	return errs
}

// hostPort splits the bind address.
func (o *WebhookOptions) hostPort() (string, int, error) {
	host, p, err := net.SplitHostPort(o.BindAddress)
	port, perr := strconv.Atoi(p)
	if err != nil || perr != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("--webhook-bind-address %q must be host:port, as :9443", o.BindAddress)
	}
	return host, port, nil
}

// names are the names the serving certificate must cover.
func (o *WebhookOptions) names() []string {
	if o.URL != "" {
		u, _ := url.Parse(o.URL)
		return []string{u.Hostname()}
	}
	ns, name, _, _ := splitService(o.Service)
	return []string{name + "." + ns + ".svc", name + "." + ns + ".svc.cluster.local"}
}

func splitService(s string) (ns, name string, port int32, err error) {
	port = 443
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		p, perr := strconv.ParseInt(s[i+1:], 10, 32)
		if perr != nil || p < 1 || p > 65535 {
			return "", "", 0, fmt.Errorf("--webhook-service %q: the port must be a number from 1 to 65535", s)
		}
		s, port = s[:i], int32(p)
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1035Label(name)) > 0 {
		return "", "", 0, fmt.Errorf("--webhook-service %q must be namespace/name[:port]", s)
	}
	return ns, name, port, nil
}

// clientConfig is how the API server reaches the webhook, trusting ca.
func (o *WebhookOptions) clientConfig(ca []byte) (admissionregistrationv1.WebhookClientConfig, error) {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: ca}
	if o.URL != "" {
		cc.URL = ptr.To(strings.TrimSuffix(o.URL, "/") + WebhookPath)
		return cc, nil
	}
	ns, name, port, err := splitService(o.Service)
	if err != nil {
		return cc, err
	}
	cc.Service = &admissionregistrationv1.ServiceReference{Namespace: ns, Name: name, Port: ptr.To(port), Path: ptr.To(WebhookPath)}
	return cc, nil
}

// Configuration is the hub's ValidatingWebhookConfiguration. Its failure
// policy is Ignore: while the hub does not answer, objects are admitted
// unchecked, and the scheduler refuses a claim's bad requirement at placement
// (InvalidHardwareRequirement) and the tenant controller a Tenant's (Ready
// False), so an outage of the hub never stops writes to claims. Claims are
// sent only when they carry a requirement.
func Configuration(cc admissionregistrationv1.WebhookClientConfig) *admissionregistrationv1.ValidatingWebhookConfiguration {
	hook := func(name, group, resource string, match []admissionregistrationv1.MatchCondition) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name:         name,
			ClientConfig: cc,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
			}},
			MatchConditions:         match,
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](webhookTimeout),
			AdmissionReviewVersions: []string{"v1"},
		}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: WebhookName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook("hardware.hostclaims.hostfleet.io", "metal3.io", "hostclaims", []admissionregistrationv1.MatchCondition{{
				Name:       "asks-for-hardware",
				Expression: fmt.Sprintf("has(object.metadata.annotations) && %q in object.metadata.annotations", hostfleetv1alpha1.AnnotationHardware),
			}}),
			hook("hardware.tenants.hostfleet.io", hostfleetv1alpha1.GroupVersion.Group, "tenants", nil),
			hook("hardware.firmwarebaselines.hostfleet.io", hostfleetv1alpha1.GroupVersion.Group, "firmwarebaselines", nil),
		},
	}
}

// Hardware refuses a requirement that does not compile or costs too much:
// a claim's hostfleet.io/hardware, a Tenant's quotas[].hostSelector.hardware,
// a FirmwareBaseline's hardware (and a baseline that conflicts with another).
// An update that leaves a claim's requirement as it was is let through, so
// that a claim admitted while the hub was away can still lose its
// finalizers.
type Hardware struct {
	Decoder admission.Decoder
	// Reader reads the other FirmwareBaselines and the clusters'
	// HostInventories: a baseline that would want another version than
	// one of them for a kind of host the fleet has is refused (nil: not
	// checked).
	Reader client.Reader
}

// Handle implements admission.Handler.
func (h Hardware) Handle(ctx context.Context, req admission.Request) admission.Response {
	switch req.Kind.Kind {
	case "HostClaim":
		var now, old metav1.PartialObjectMetadata
		if err := h.Decoder.DecodeRaw(req.Object, &now); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		expr, ok := now.Annotations[hostfleetv1alpha1.AnnotationHardware]
		if !ok {
			return admission.Allowed("")
		}
		if len(req.OldObject.Raw) > 0 && h.Decoder.DecodeRaw(req.OldObject, &old) == nil {
			if was, ok := old.Annotations[hostfleetv1alpha1.AnnotationHardware]; ok && was == expr {
				return admission.Allowed("requirement unchanged")
			}
		}
		if _, err := hardware.Cached(expr); err != nil {
			return admission.Denied(fmt.Sprintf("annotation %s: %v: fix the expression (a CEL expression over host, as host.cpu.count >= 32; docs/service.md)",
				hostfleetv1alpha1.AnnotationHardware, err))
		}
	case "Tenant":
		t := &hostfleetv1alpha1.Tenant{}
		if err := h.Decoder.DecodeRaw(req.Object, t); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if _, err := classes.Of(t); err != nil {
			return admission.Denied(fmt.Sprintf("spec.quotas: %v: fix the expression (a CEL expression over host, as host.gpus.size() > 0; docs/service.md)", err))
		}
	case "FirmwareBaseline":
		b := &hostfleetv1alpha1.FirmwareBaseline{}
		if err := h.Decoder.DecodeRaw(req.Object, b); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if errs := baseline.Validate(b.Spec); len(errs) > 0 {
			return admission.Denied("spec." + strings.Join(errs, "; spec.") + " (docs/service.md#firmware-baselines)")
		}
		return h.conflict(ctx, b)
	}
	return admission.Allowed("")
}

// conflict refuses a baseline that wants another version or value than an
// existing one for a kind of host some cluster's HostInventory lists.
func (h Hardware) conflict(ctx context.Context, b *hostfleetv1alpha1.FirmwareBaseline) admission.Response {
	if h.Reader == nil {
		return admission.Allowed("")
	}
	var others hostfleetv1alpha1.FirmwareBaselineList
	if err := h.Reader.List(ctx, &others); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("list firmware baselines: %w", err))
	}
	if len(others.Items) == 0 {
		return admission.Allowed("")
	}
	var invs hostfleetv1alpha1.HostInventoryList
	if err := h.Reader.List(ctx, &invs); err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("list host inventories: %w", err))
	}
	var fleet []baseline.Known
	for _, inv := range invs.Items {
		for i := range inv.Status.Profiles {
			p := &inv.Status.Profiles[i]
			fleet = append(fleet, baseline.Known{Where: fmt.Sprintf("cluster %s, profile %s", inv.Namespace, p.Name), View: &p.Hardware})
		}
	}
	if err := baseline.Conflict(*b, others.Items, fleet); err != nil {
		return admission.Denied(err.Error() + ": make the baselines agree, or narrow their spec.hardware (docs/service.md#firmware-baselines)")
	}
	return admission.Allowed("")
}
