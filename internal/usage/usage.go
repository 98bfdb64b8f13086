// Package usage keeps host use: how long hosts were bound to the hub's
// claims. A host carries its own record (hostfleet.io/usage, closed
// intervals summed per period, hub namespace and labels; and
// hostfleet.io/bound-at and bound-for while it is bound). The agent adds an
// interval in the write that releases the host (Close), and publishes the
// cluster's record (Record) as its HostUsage on the hub; the hub sums the
// records per tenant, class and cluster (Totals). Pure functions.
package usage

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/labelkeys"
)

// Days is how many UTC days a record keeps day by day; older days are
// summed into their month, so that a record stays small.
const Days = 31

const (
	dayLayout   = "2006-01-02"
	monthLayout = "2006-01"
)

// Open marks a host bound, now, to a claim of hub namespace ns: the start
// of its interval. A host already open keeps its start (a binding written
// again is the same interval).
func Open(h *metal3api.BareMetalHost, ns string, now time.Time) {
	if ns == "" || h.Annotations[hostfleetv1alpha1.AnnotationBoundAt] != "" {
		return
	}
	if h.Annotations == nil {
		h.Annotations = map[string]string{}
	}
	h.Annotations[hostfleetv1alpha1.AnnotationBoundAt] = now.UTC().Format(time.RFC3339)
	h.Annotations[hostfleetv1alpha1.AnnotationBoundFor] = ns
}

// Close ends a host's open interval now, adding it to the host's record
// with the host's labels under prefixes, and clears the open marks. A host
// without an open interval is left as it is. An open mark or a record that
// does not parse is an error: nothing is lost silently.
func Close(h *metal3api.BareMetalHost, prefixes []string, now time.Time) error {
	at, ns := h.Annotations[hostfleetv1alpha1.AnnotationBoundAt], h.Annotations[hostfleetv1alpha1.AnnotationBoundFor]
	if at == "" {
		return nil
	}
	since, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return fmt.Errorf("host %s/%s: %s %q: %w", h.Namespace, h.Name, hostfleetv1alpha1.AnnotationBoundAt, at, err)
	}
	rec, err := Of(h)
	if err != nil {
		return err
	}
	rec = Merge(append(rec, Split(ns, Labels(h, prefixes), since, now)...), now)
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	h.Annotations[hostfleetv1alpha1.AnnotationUsage] = string(b)
	delete(h.Annotations, hostfleetv1alpha1.AnnotationBoundAt)
	delete(h.Annotations, hostfleetv1alpha1.AnnotationBoundFor)
	return nil
}

// Of is a host's record of closed intervals.
func Of(h *metal3api.BareMetalHost) ([]hostfleetv1alpha1.UsageEntry, error) {
	v := h.Annotations[hostfleetv1alpha1.AnnotationUsage]
	if v == "" {
		return nil, nil
	}
	var rec []hostfleetv1alpha1.UsageEntry
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		return nil, fmt.Errorf("host %s/%s: %s: %w", h.Namespace, h.Name, hostfleetv1alpha1.AnnotationUsage, err)
	}
	return rec, nil
}

// Labels are a host's labels under prefixes; nil without any.
func Labels(h *metal3api.BareMetalHost, prefixes []string) map[string]string {
	out := map[string]string{}
	for k, v := range h.Labels {
		if labelkeys.UnderPrefixes(k, prefixes) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Split cuts [from, to) into whole seconds per UTC day.
func Split(ns string, lbls map[string]string, from, to time.Time) []hostfleetv1alpha1.UsageEntry {
	from, to = from.UTC().Truncate(time.Second), to.UTC().Truncate(time.Second)
	var out []hostfleetv1alpha1.UsageEntry
	for from.Before(to) {
		next := time.Date(from.Year(), from.Month(), from.Day()+1, 0, 0, 0, 0, time.UTC)
		end := next
		if next.After(to) {
			end = to
		}
		out = append(out, hostfleetv1alpha1.UsageEntry{Period: from.Format(dayLayout), Namespace: ns, Labels: lbls,
			Seconds: int64(end.Sub(from) / time.Second)})
		from = end
	}
	return out
}

// Merge sums entries of the same period, namespace and labels, with days
// older than Days before now summed into their month, in a stable order.
func Merge(entries []hostfleetv1alpha1.UsageEntry, now time.Time) []hostfleetv1alpha1.UsageEntry {
	cutoff := now.UTC().AddDate(0, 0, -Days).Format(dayLayout)
	sums := map[string]*hostfleetv1alpha1.UsageEntry{}
	for _, e := range entries {
		if len(e.Period) == len(dayLayout) && e.Period < cutoff {
			e.Period = e.Period[:len(monthLayout)]
		}
		k := e.Period + "\x00" + e.Namespace + "\x00" + labels.Set(e.Labels).String()
		if s := sums[k]; s != nil {
			s.Seconds += e.Seconds
			continue
		}
		e.Labels = maps.Clone(e.Labels)
		sums[k] = &e
	}
	out := make([]hostfleetv1alpha1.UsageEntry, 0, len(sums))
	for _, k := range slices.Sorted(maps.Keys(sums)) {
		out = append(out, *sums[k])
	}
	return out
}

// Record is a cluster's record from its hosts: their closed intervals
// merged, and their open ones. A host whose record does not parse is
// skipped and named in the error, the others counted.
func Record(hosts []metal3api.BareMetalHost, prefixes []string, now time.Time) (hostfleetv1alpha1.HostUsageStatus, error) {
	var st hostfleetv1alpha1.HostUsageStatus
	var closed []hostfleetv1alpha1.UsageEntry
	var errs []string
	for i := range hosts {
		h := &hosts[i]
		rec, err := Of(h)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		closed = append(closed, rec...)
		at := h.Annotations[hostfleetv1alpha1.AnnotationBoundAt]
		if at == "" || h.Spec.ConsumerRef == nil {
			// Not bound: a start left by a release that was not the
			// agent's counts for nobody.
			continue
		}
		since, err := time.Parse(time.RFC3339, at)
		if err != nil {
			errs = append(errs, fmt.Sprintf("host %s/%s: %s %q does not parse", h.Namespace, h.Name, hostfleetv1alpha1.AnnotationBoundAt, at))
			continue
		}
		st.Open = append(st.Open, hostfleetv1alpha1.OpenUsage{Host: h.Namespace + "/" + h.Name,
			Namespace: h.Annotations[hostfleetv1alpha1.AnnotationBoundFor], Labels: Labels(h, prefixes), Since: metav1.NewTime(since)})
	}
	st.Closed = Merge(closed, now)
	if len(st.Closed) == 0 {
		st.Closed = nil
	}
	slices.SortFunc(st.Open, func(a, b hostfleetv1alpha1.OpenUsage) int { return strings.Compare(a.Host, b.Host) })
	if len(errs) > 0 {
		return st, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return st, nil
}
