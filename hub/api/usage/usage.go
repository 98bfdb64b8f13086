// Package usage is the usage record a BareMetalHost carries: the open
// interval of its binding (hostfleet.io/bound-at, bound-for and
// bound-claim) and the closed intervals it has not yet seen settled
// (hostfleet.io/usage, a JSON list of UsageInterval). The agent opens an
// interval in the write that binds a host and closes it in the write that
// releases it (Open, Close); its cluster's report is its hosts' records
// (Report); the hub settles each interval once, and the agent then drops it
// (Drop). Split and Merge cut counted time into UTC days and sum it. Pure.
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
	"k8s.io/apimachinery/pkg/types"

	"github.com/hostfleet/hostfleet/hub/api/labelkeys"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Days is how many UTC days counted time is kept day by day; older days
// are summed into their month, so that a ledger stays small.
const Days = 31

// MaxRecord is the most closed intervals a host keeps while the hub has not
// settled them; past it, the oldest go (and are logged): a host released
// every minute for days while its cluster cannot reach the hub must still
// be released, and an annotation is bounded.
const MaxRecord = 200

const (
	dayLayout   = "2006-01-02"
	monthLayout = "2006-01"
)

// Open marks a host bound, now, to claim (its UID) of hub namespace ns:
// the start of its interval. A mark already there is kept (a binding
// written again is the same interval); a start an older agent left without
// the claim's UID gets it.
func Open(h *metal3api.BareMetalHost, ns string, claim types.UID, now time.Time) {
	if ns == "" || claim == "" {
		return
	}
	if h.Annotations == nil {
		h.Annotations = map[string]string{}
	}
	if h.Annotations[hostfleetv1alpha1.AnnotationBoundAt] == "" {
		h.Annotations[hostfleetv1alpha1.AnnotationBoundAt] = now.UTC().Format(time.RFC3339)
		h.Annotations[hostfleetv1alpha1.AnnotationBoundFor] = ns
	}
	if h.Annotations[hostfleetv1alpha1.AnnotationBoundClaim] == "" {
		h.Annotations[hostfleetv1alpha1.AnnotationBoundClaim] = string(claim)
	}
}

// Opened reports whether a host carries a whole open mark: a start and
// the claim it counts for.
func Opened(h *metal3api.BareMetalHost) bool {
	return h.Annotations[hostfleetv1alpha1.AnnotationBoundAt] != "" && h.Annotations[hostfleetv1alpha1.AnnotationBoundClaim] != ""
}

// Close ends a host's open interval now, adding it to the host's record
// with the host's labels under prefixes, and clears the open marks. A host
// without an open interval is left as it is. An open mark or a record that
// does not parse is an error: nothing is lost silently. dropped are the
// oldest intervals the record no longer keeps (MaxRecord).
func Close(h *metal3api.BareMetalHost, prefixes []string, now time.Time) (dropped []hostfleetv1alpha1.UsageInterval, _ error) {
	at := h.Annotations[hostfleetv1alpha1.AnnotationBoundAt]
	if at == "" {
		return nil, nil
	}
	since, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return nil, fmt.Errorf("host %s/%s: %s %q: %w", h.Namespace, h.Name, hostfleetv1alpha1.AnnotationBoundAt, at, err)
	}
	rec, err := Of(h)
	if err != nil {
		return nil, err
	}
	end := now.UTC().Truncate(time.Second)
	if end.Before(since) {
		end = since // a clock set back: an empty interval, not a negative one
	}
	rec = append(rec, hostfleetv1alpha1.UsageInterval{Claim: types.UID(h.Annotations[hostfleetv1alpha1.AnnotationBoundClaim]),
		Namespace: h.Annotations[hostfleetv1alpha1.AnnotationBoundFor], Host: h.Namespace + "/" + h.Name,
		Start: metav1.NewTime(since), End: metav1.NewTime(end), Labels: Labels(h, prefixes)})
	if len(rec) > MaxRecord {
		dropped, rec = rec[:len(rec)-MaxRecord], rec[len(rec)-MaxRecord:]
	}
	if err := write(h, rec); err != nil {
		return nil, err
	}
	delete(h.Annotations, hostfleetv1alpha1.AnnotationBoundAt)
	delete(h.Annotations, hostfleetv1alpha1.AnnotationBoundFor)
	delete(h.Annotations, hostfleetv1alpha1.AnnotationBoundClaim)
	return dropped, nil
}

// write sets the host's record (none: no annotation).
func write(h *metal3api.BareMetalHost, rec []hostfleetv1alpha1.UsageInterval) error {
	if len(rec) == 0 {
		delete(h.Annotations, hostfleetv1alpha1.AnnotationUsage)
		return nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	h.Annotations[hostfleetv1alpha1.AnnotationUsage] = string(b)
	return nil
}

// Of is a host's record of closed intervals. Entries an agent of an
// earlier release wrote (time summed per period, without a claim) are
// skipped: that agent reported them, and the hub took its report over once.
func Of(h *metal3api.BareMetalHost) ([]hostfleetv1alpha1.UsageInterval, error) {
	return Parse(h.Annotations[hostfleetv1alpha1.AnnotationUsage])
}

// Parse reads a record (an AnnotationUsage value).
func Parse(v string) ([]hostfleetv1alpha1.UsageInterval, error) {
	if v == "" {
		return nil, nil
	}
	var entries []struct {
		hostfleetv1alpha1.UsageInterval
		Period string `json:"period"`
	}
	if err := json.Unmarshal([]byte(v), &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", hostfleetv1alpha1.AnnotationUsage, err)
	}
	out := make([]hostfleetv1alpha1.UsageInterval, 0, len(entries))
	for _, e := range entries {
		if e.Claim == "" && e.Period != "" {
			continue
		}
		if e.Claim == "" || e.Start.IsZero() || e.End.IsZero() {
			return nil, fmt.Errorf("%s: an interval without a claim, a start or an end", hostfleetv1alpha1.AnnotationUsage)
		}
		// UTC, as written (metav1.Time reads a time in the local zone).
		e.Start, e.End = metav1.NewTime(e.Start.UTC()), metav1.NewTime(e.End.UTC())
		out = append(out, e.UsageInterval)
	}
	return out, nil
}

// Key identifies an interval: its claim, host and start.
func Key(iv hostfleetv1alpha1.UsageInterval) string {
	return string(iv.Claim) + "/" + iv.Host + "/" + iv.Start.UTC().Format(time.RFC3339)
}

// Drop removes the intervals whose Key is in settled from a host's record
// (and the entries of an earlier release), and reports whether the record
// changed.
func Drop(h *metal3api.BareMetalHost, settled map[string]bool) (bool, error) {
	rec, err := Of(h)
	if err != nil {
		return false, err
	}
	before := h.Annotations[hostfleetv1alpha1.AnnotationUsage]
	if err := write(h, slices.DeleteFunc(rec, func(iv hostfleetv1alpha1.UsageInterval) bool { return settled[Key(iv)] })); err != nil {
		return false, err
	}
	return h.Annotations[hostfleetv1alpha1.AnnotationUsage] != before, nil
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

// Report is a cluster's report from its hosts: their closed intervals, and
// their open ones. A host whose record does not parse is skipped and named
// in the error, the others reported.
func Report(hosts []metal3api.BareMetalHost, prefixes []string) (intervals []hostfleetv1alpha1.UsageInterval, open []hostfleetv1alpha1.OpenUsage, _ error) {
	var errs []string
	for i := range hosts {
		h := &hosts[i]
		rec, err := Of(h)
		if err != nil {
			errs = append(errs, fmt.Sprintf("host %s/%s: %v", h.Namespace, h.Name, err))
			continue
		}
		intervals = append(intervals, rec...)
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
		open = append(open, hostfleetv1alpha1.OpenUsage{Host: h.Namespace + "/" + h.Name, Claim: types.UID(h.Annotations[hostfleetv1alpha1.AnnotationBoundClaim]),
			Namespace: h.Annotations[hostfleetv1alpha1.AnnotationBoundFor], Labels: Labels(h, prefixes), Since: metav1.NewTime(since)})
	}
	slices.SortFunc(intervals, func(a, b hostfleetv1alpha1.UsageInterval) int { return strings.Compare(Key(a), Key(b)) })
	slices.SortFunc(open, func(a, b hostfleetv1alpha1.OpenUsage) int { return strings.Compare(a.Host, b.Host) })
	if len(errs) > 0 {
		return intervals, open, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return intervals, open, nil
}
