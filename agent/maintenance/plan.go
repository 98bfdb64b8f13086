package maintenance

import (
	"fmt"
	"sort"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Holder is what holds a bound host: the hub claim (namespace/name), or,
// for a consumer that is not a hub claim, a description of it.
type Holder struct {
	Claim, Consumer string
}

// Input is what Plan looks at.
type Input struct {
	Maintenances []hostfleetv1alpha1.HostMaintenance
	Hosts        []*metal3api.BareMetalHost
	// HolderOf says what holds a host with a consumerRef.
	HolderOf func(*metal3api.BareMetalHost) Holder
}

// Result is what the hosts and the maintenances should say.
type Result struct {
	// Marks is, for each host (namespace/name) whose
	// hostfleet.io/maintenance must change, its new value ("": removed).
	Marks map[string]string
	// Statuses are the maintenances' statuses, by name.
	Statuses map[string]hostfleetv1alpha1.HostMaintenanceStatus
}

// Plan decides which hosts are marked and what each maintenance's status
// says. A host is marked with the first active maintenance (oldest, then
// by name) that selects it; a host no active maintenance selects is not
// marked. A maintenance that is complete or being deleted marks nothing.
// A selector that does not compile selects nothing (the CRD validates it).
func Plan(in Input) Result {
	ms := append([]hostfleetv1alpha1.HostMaintenance(nil), in.Maintenances...)
	sort.Slice(ms, func(i, j int) bool {
		if !ms[i].CreationTimestamp.Equal(&ms[j].CreationTimestamp) {
			return ms[i].CreationTimestamp.Before(&ms[j].CreationTimestamp)
		}
		return ms[i].Name < ms[j].Name
	})
	sels := make([]labels.Selector, len(ms))
	for i := range ms {
		sel, err := metav1.LabelSelectorAsSelector(&ms[i].Spec.HostSelector)
		if err != nil || sel.Empty() {
			sel = labels.Nothing()
		}
		sels[i] = sel
	}
	hosts := append([]*metal3api.BareMetalHost(nil), in.Hosts...)
	sort.Slice(hosts, func(i, j int) bool { return key(hosts[i]) < key(hosts[j]) })
	out := Result{Marks: map[string]string{}, Statuses: map[string]hostfleetv1alpha1.HostMaintenanceStatus{}}
	for i := range ms {
		out.Statuses[ms[i].Name] = hostfleetv1alpha1.HostMaintenanceStatus{ObservedGeneration: ms[i].Generation}
	}
	for _, h := range hosts {
		mark := ""
		for i := range ms {
			m := &ms[i]
			if !sels[i].Matches(labels.Set(h.Labels)) {
				continue
			}
			if mark == "" && active(m) {
				mark = m.Name
			}
			st := out.Statuses[m.Name]
			mh := hostState(h, in.HolderOf, m.Spec.Complete)
			switch mh.State {
			case hostfleetv1alpha1.MaintenanceWaiting:
				st.Waiting++
			case hostfleetv1alpha1.MaintenanceInMaintenance:
				st.InMaintenance++
			}
			st.Hosts = append(st.Hosts, mh)
			out.Statuses[m.Name] = st
		}
		if h.Annotations[hostfleetv1alpha1.AnnotationMaintenance] != mark {
			out.Marks[key(h)] = mark
		}
	}
	return out
}

func active(m *hostfleetv1alpha1.HostMaintenance) bool {
	return !m.Spec.Complete && m.DeletionTimestamp.IsZero()
}

// hostState is where one selected host is.
func hostState(h *metal3api.BareMetalHost, holderOf func(*metal3api.BareMetalHost) Holder, complete bool) hostfleetv1alpha1.MaintainedHost {
	mh := hostfleetv1alpha1.MaintainedHost{Host: key(h)}
	if h.Spec.ConsumerRef != nil {
		hd := Holder{Consumer: fmt.Sprintf("%s %s/%s", h.Spec.ConsumerRef.Kind, h.Spec.ConsumerRef.Namespace, h.Spec.ConsumerRef.Name)}
		if holderOf != nil {
			hd = holderOf(h)
		}
		mh.Claim, mh.Consumer = hd.Claim, hd.Consumer
	}
	switch {
	case complete:
		mh.State = hostfleetv1alpha1.MaintenanceDone
	case h.Spec.ConsumerRef != nil:
		mh.State = hostfleetv1alpha1.MaintenanceWaiting
	case returning(h.Status.Provisioning.State):
		mh.State = hostfleetv1alpha1.MaintenanceReleased
	default:
		mh.State = hostfleetv1alpha1.MaintenanceInMaintenance
	}
	return mh
}

// returning: a host whose claim let it go, not yet back to available.
func returning(s metal3api.ProvisioningState) bool {
	switch s {
	case metal3api.StateProvisioning, metal3api.StateProvisioned, metal3api.StateDeprovisioning, metal3api.StatePreparing:
		return true
	}
	return false
}

func key(h *metal3api.BareMetalHost) string { return h.Namespace + "/" + h.Name }
