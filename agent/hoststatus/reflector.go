package hoststatus

import (
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Sync is the outcome of writing the host spec and secrets.
type Sync struct {
	// OK is true when the host spec and secret copies match the claim.
	OK bool
	// Reason and Message describe a failure.
	Reason, Message string
}

// Conditions returns the Synchronized, Provisioned, AvailableForProvisioning
// and Ready conditions for a claim bound to host h (nil when not bound).
func Conditions(c *metal3api.HostClaim, h *metal3api.BareMetalHost, sync Sync) []metav1.Condition {
	gen := c.Generation
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	if h == nil {
		assoc := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
		msg := "waiting for a BareMetalHost"
		if assoc != nil && assoc.Message != "" {
			msg = assoc.Message
		}
		return []metav1.Condition{cond(hostfleetv1alpha1.ConditionReady, false, hostfleetv1alpha1.ReasonNotAssociated, msg)}
	}
	hostName := h.Namespace + "/" + h.Name

	synced := cond(hostfleetv1alpha1.ConditionSynchronized, true, metal3api.ConfigurationSyncedReason,
		"the host's image, power and data secrets follow the claim")
	if !sync.OK {
		synced = cond(hostfleetv1alpha1.ConditionSynchronized, false, sync.Reason, sync.Message)
	}

	errMsg := HostErrorMessage(h)
	avail := cond(hostfleetv1alpha1.ConditionAvailableForProvisioning, true, hostfleetv1alpha1.ReasonHostAvailable,
		fmt.Sprintf("host %s is healthy and can be provisioned", hostName))
	switch {
	case errMsg != "":
		avail = cond(hostfleetv1alpha1.ConditionAvailableForProvisioning, false, hostfleetv1alpha1.ReasonHostError, errMsg)
	case h.Status.Provisioning.State == metal3api.StateDeprovisioning, leftoverImage(c, h):
		avail = cond(hostfleetv1alpha1.ConditionAvailableForProvisioning, false, hostfleetv1alpha1.ReasonDeprovisioning,
			fmt.Sprintf("host %s is being cleaned after a previous deployment; wait", hostName))
	case !usable(h.Status.Provisioning.State):
		avail = cond(hostfleetv1alpha1.ConditionAvailableForProvisioning, false, hostfleetv1alpha1.ReasonHostNotReady,
			fmt.Sprintf("host %s is %s; wait for it to become available", hostName, stateName(h)))
	}

	prov := provisioned(c, h, hostName, errMsg, cond)
	ready := readiness(c, h, synced, avail, prov, cond)
	return []metav1.Condition{synced, prov, avail, ready}
}

// leftoverImage: the claim asks for no image but its host still runs one,
// which it is about to remove (unless detached, when nothing changes it).
func leftoverImage(c *metal3api.HostClaim, h *metal3api.BareMetalHost) bool {
	_, detached := h.Annotations[metal3api.DetachedAnnotation]
	return c.Spec.Image == nil && c.Spec.CustomDeploy == nil && h.Status.Provisioning.State == metal3api.StateProvisioned && !detached
}

func provisioned(c *metal3api.HostClaim, h *metal3api.BareMetalHost, hostName, errMsg string,
	cond func(string, bool, string, string) metav1.Condition) metav1.Condition {
	t := hostfleetv1alpha1.ConditionProvisioned
	st := h.Status.Provisioning.State
	switch {
	case c.Spec.Image == nil && c.Spec.CustomDeploy == nil:
		return cond(t, false, hostfleetv1alpha1.ReasonNoWorkload, "no spec.image or spec.customDeploy: set one to deploy the host")
	case errMsg != "" && h.Status.ErrorType == metal3api.ProvisioningError:
		return cond(t, false, hostfleetv1alpha1.ReasonHostError, errMsg)
	case st == metal3api.StateProvisioned && imageMatches(c, h):
		return cond(t, true, hostfleetv1alpha1.ReasonProvisioned, fmt.Sprintf("host %s is provisioned", hostName))
	case st == metal3api.StateDeprovisioning || (st == metal3api.StateProvisioned && !imageMatches(c, h)):
		return cond(t, false, hostfleetv1alpha1.ReasonDeprovisioning, fmt.Sprintf("host %s is removing its previous image before deploying the new one", hostName))
	case !c.Spec.PoweredOn:
		return cond(t, false, hostfleetv1alpha1.ReasonPowerPending, "the host is provisioned only while spec.poweredOn is true")
	default:
		msg := fmt.Sprintf("host %s is %s", hostName, stateName(h))
		if p := powerChanging(h); p != "" {
			msg += ", " + p
		}
		return cond(t, false, hostfleetv1alpha1.ReasonProvisioning, msg)
	}
}

func readiness(c *metal3api.HostClaim, h *metal3api.BareMetalHost, synced, avail, prov metav1.Condition,
	cond func(string, bool, string, string) metav1.Condition) metav1.Condition {
	t := hostfleetv1alpha1.ConditionReady
	if synced.Status != metav1.ConditionTrue {
		return cond(t, false, synced.Reason, synced.Message)
	}
	want := avail
	if c.Spec.Image != nil || c.Spec.CustomDeploy != nil {
		want = prov
	}
	if want.Status != metav1.ConditionTrue {
		if p := powerChanging(h); p != "" && want.Reason == hostfleetv1alpha1.ReasonProvisioning {
			// Provisioning waits on the power change the BMC driver
			// started (a live ISO boots once the host is on): as for any
			// power change, Ready says so.
			return cond(t, false, hostfleetv1alpha1.ReasonPowerChanging, want.Message)
		}
		return cond(t, false, want.Reason, want.Message)
	}
	if msg := HostErrorMessage(h); msg != "" {
		// A provisioned host whose BMC fails (refused credentials, a power
		// change stuck): its power cannot be what the claim asks.
		return cond(t, false, hostfleetv1alpha1.ReasonHostError, msg)
	}
	if msg := powerChanging(h); msg != "" {
		// The power is not what it will be: the BMC has not reported the
		// change under way yet.
		return cond(t, false, hostfleetv1alpha1.ReasonPowerChanging, fmt.Sprintf("host %s is %s", klog.KObj(h), msg))
	}
	if h.Status.PoweredOn != c.Spec.PoweredOn {
		return cond(t, false, hostfleetv1alpha1.ReasonPowerPending, fmt.Sprintf("powering the host %s", onOff(c.Spec.PoweredOn)))
	}
	return cond(t, true, hostfleetv1alpha1.ReasonReady, fmt.Sprintf("host %s is %s and powered %s", klog.KObj(h), stateName(h), onOff(h.Status.PoweredOn)))
}

// powerChanging says what power change is under way on the host, or "":
// the agent's BMC driver says so in the host's PowerChanging condition
// (written before the command is sent); a reboot request not yet carried
// out is one too.
func powerChanging(h *metal3api.BareMetalHost) string {
	if pc := meta.FindStatusCondition(h.Status.Conditions, hostfleetv1alpha1.ConditionPowerChanging); pc != nil && pc.Status == metav1.ConditionTrue {
		return pc.Message
	}
	if _, ok := h.Annotations[metal3api.RebootAnnotationPrefix]; ok {
		return "rebooting: requested, not yet carried out"
	}
	return ""
}

// HostErrorMessage describes a host error for a tenant, by its type only, or
// "" when the host has no error.
func HostErrorMessage(h *metal3api.BareMetalHost) string {
	if h.Status.ErrorType == "" && h.Status.ErrorMessage == "" && h.Status.OperationalStatus != metal3api.OperationalStatusError {
		return ""
	}
	name := h.Namespace + "/" + h.Name
	switch h.Status.ErrorType {
	case metal3api.RegistrationError, metal3api.ProvisionedRegistrationError:
		return fmt.Sprintf("host %s cannot be managed (registration error): its management controller is unreachable or refuses its credentials; the infrastructure cluster's administrator must fix it", name)
	case metal3api.InspectionError:
		return fmt.Sprintf("host %s failed hardware inspection; the infrastructure cluster's administrator must fix it", name)
	case metal3api.ProvisioningError:
		return fmt.Sprintf("deploying to host %s failed (provisioning error): check spec.image (url reachable from the cluster, checksum and format) and retry by changing the image, or delete the claim", name)
	case metal3api.PowerManagementError:
		return fmt.Sprintf("host %s: its BMC does not answer or does not carry out a power change (power management error); the infrastructure cluster's administrator must check it", name)
	case metal3api.PreparationError, metal3api.ServicingError:
		return fmt.Sprintf("host %s failed to apply firmware or RAID settings (%s); the infrastructure cluster's administrator must fix it", name, h.Status.ErrorType)
	case metal3api.DetachError:
		return fmt.Sprintf("host %s failed to detach; the infrastructure cluster's administrator must fix it", name)
	default:
		return fmt.Sprintf("host %s is in error; the infrastructure cluster's administrator must check it", name)
	}
}

func usable(s metal3api.ProvisioningState) bool {
	switch s {
	case metal3api.StateAvailable, metal3api.StateReady, metal3api.StateProvisioning, metal3api.StateProvisioned, metal3api.StatePreparing:
		return true
	}
	return false
}

func imageMatches(c *metal3api.HostClaim, h *metal3api.BareMetalHost) bool {
	if c.Spec.Image != nil {
		return h.Status.Provisioning.Image.URL == c.Spec.Image.URL
	}
	if c.Spec.CustomDeploy != nil {
		return h.Status.Provisioning.CustomDeploy != nil && h.Status.Provisioning.CustomDeploy.Method == c.Spec.CustomDeploy.Method
	}
	return false
}

func stateName(h *metal3api.BareMetalHost) string {
	if h.Status.Provisioning.State == "" {
		return "not yet registered"
	}
	return string(h.Status.Provisioning.State)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
