package inventory

import (
	"maps"
	"slices"
	"sort"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/labelsync"
	"github.com/hostfleet/hostfleet/hub/api/baseline"
	"github.com/hostfleet/hostfleet/hub/api/taints"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Input is what Build looks at.
type Input struct {
	Hosts    []metal3api.BareMetalHost
	Policies []metal3api.HostDeployPolicy
	// Namespaces are the hub namespaces of the tenants the cluster serves,
	// with their labels (servedtenants.Namespaces).
	Namespaces []corev1.Namespace
	// Prefixes are the label sync prefixes of the tenants the cluster serves.
	Prefixes []string
	// Hardware is each inspected host's hardware and profile, by host;
	// a host without one is pooled without a profile.
	Hardware map[types.NamespacedName]Profiled
	// Baselines are the FirmwareBaselines the cluster's ClusterTenancy
	// carries: each pool counts how its hosts stand against them.
	Baselines []hostfleetv1alpha1.FirmwareBaseline
}

// Profiled is a host's hardware view and its profile's name.
type Profiled struct {
	Profile string
	View    *hostfleetv1alpha1.HardwareView
}

// Build groups the hosts into pools and counts them.
func Build(in Input) hostfleetv1alpha1.HostInventoryStatus {
	// Which tenant namespaces each host namespace admits.
	admits := map[string][]string{}
	for i := range in.Policies {
		p := &in.Policies[i]
		for _, ns := range in.Namespaces {
			if ok, err := binder.Admits(p, ns.Name, ns.Labels); err == nil && ok {
				admits[p.Namespace] = append(admits[p.Namespace], ns.Name)
			}
		}
	}
	for k, v := range admits {
		admits[k] = dedupe(v)
	}

	pools := map[string]*hostfleetv1alpha1.HostPool{}
	profiles := map[string]*hostfleetv1alpha1.HardwareView{}
	var out hostfleetv1alpha1.HostInventoryStatus
	for i := range in.Hosts {
		h := &in.Hosts[i]
		labels := map[string]string{}
		for k, v := range h.Labels {
			if labelsync.Under(k, in.Prefixes) {
				labels[k] = v
			}
		}
		fd := h.Labels[binder.FailureDomainLabel]
		nss := admits[h.Namespace]
		tainted := taints.Of(h.Annotations)
		hw := in.Hardware[types.NamespacedName{Namespace: h.Namespace, Name: h.Name}]
		if hw.View != nil && profiles[hw.Profile] == nil {
			profiles[hw.Profile] = hw.View
		}
		key := poolKey(labels, fd, nss, tainted, hw.Profile)
		p := pools[key]
		if p == nil {
			p = &hostfleetv1alpha1.HostPool{FailureDomain: fd, Namespaces: nss, Taints: tainted, Profile: hw.Profile}
			if len(labels) > 0 {
				p.Labels = labels
			}
			pools[key] = p
		}
		p.Total++
		out.Total++
		if binder.Free(h) {
			p.Available++
			out.Available++
		}
		if _, held := baseline.Held(h.Annotations); held {
			p.Held++
			out.Held++
		}
		if s, ok := baseline.Standing(in.Baselines, hw.View, h.Annotations); ok {
			count(p, s)
		}
	}
	keys := make([]string, 0, len(pools))
	for k := range pools {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Pools = append(out.Pools, *pools[k])
	}
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		out.Profiles = append(out.Profiles, hostfleetv1alpha1.HardwareProfile{Name: name, Hardware: *profiles[name]})
	}
	return out
}

func poolKey(labels map[string]string, fd string, nss, tainted []string, profile string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k+"="+labels[k])
	}
	sort.Strings(keys)
	return strings.Join(keys, ",") + "|" + fd + "|" + strings.Join(nss, ",") + "|" + strings.Join(tainted, ",") + profileKey(profile)
}

// profileKey ends a pool's key: nothing for hosts not inspected, so that
// their pools keep the order they had before profiles.
func profileKey(profile string) string {
	if profile == "" {
		return ""
	}
	return "|" + profile
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// count adds a host that stands s against its baselines to its pool.
func count(p *hostfleetv1alpha1.HostPool, s baseline.State) {
	if p.Firmware == nil {
		p.Firmware = &hostfleetv1alpha1.FirmwareStanding{}
	}
	switch s {
	case baseline.Current:
		p.Firmware.Current++
	case baseline.Behind:
		p.Firmware.Behind++
	case baseline.Drifted:
		p.Firmware.Drifted++
	default:
		p.Firmware.Unknown++
	}
}
