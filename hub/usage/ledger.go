package usage

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hostfleet/hostfleet/hub/api/usage"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Placement is what the hub knows of a claim placed on the cluster now:
// its UID and namespace, and when it was placed there (the claim's
// hostfleet.io/placed-at).
type Placement struct {
	UID       types.UID
	Namespace string
	From      time.Time
}

// Input is what Ingest reads: the cluster's ledger as it stands, its
// agent's report, and the claims placed on the cluster now.
type Input struct {
	Ledger hostfleetv1alpha1.UsageLedgerStatus
	// Report is the HostUsage's status: the agent's intervals and open
	// hosts, and what the hub settled of it before.
	Report hostfleetv1alpha1.HostUsageStatus
	// Placed are the claims placed on the cluster now; Ended the UIDs of
	// those among them whose host is released (only the hub's finalizer
	// holds them): their placement ends now.
	Placed []Placement
	Ended  map[types.UID]bool
	Now    time.Time
	// Skew is how far the agent's clock may be from the hub's: an interval
	// up to Skew outside its claim's placement is counted within it, one
	// further out is refused.
	Skew time.Duration
	// Memory is how long a claim gone from the cluster is remembered, and
	// MaxGone how many at most: an interval of a claim forgotten is
	// refused, never counted twice.
	Memory  time.Duration
	MaxGone int
}

// Refusal is one interval or open host the hub did not take, and why: Key
// is the interval's (hub/api/usage.Key), or "open/<host>".
type Refusal = hostfleetv1alpha1.UsageRefusal

// Result is the ledger as it should be and what to tell the agent.
type Result struct {
	Ledger hostfleetv1alpha1.UsageLedgerStatus
	// Settled are the keys of the report's intervals counted or refused,
	// now or before: the report's status.settled.
	Settled []string
	// Refused are the report's intervals refused, now or before, and its
	// open hosts refused: the report's status.refused. New are those not
	// refused before (for the same reason): each is said once.
	Refused, New []Refusal
	// Counted is the seconds this report added to the ledger.
	Counted int64
}

// Ingest takes a cluster's report into its ledger. An interval is counted
// only for a claim the hub placed on the cluster (live, or gone and still
// remembered), for the claim's own namespace, within the time it was
// placed there, and each stretch of time once: what a claim's counted
// spans already cover is not counted again, so that an interval sent twice,
// or another interval of the same claim over the same time (another host),
// adds nothing. Counted totals only grow. Pure.
func Ingest(in Input) Result {
	l := copyLedger(in.Ledger)
	claims := ledgerClaims(l.Claims)
	placed := map[types.UID]Placement{}
	for _, p := range in.Placed {
		placed[p.UID] = p
	}
	closeGone(claims, placed, in.Ended, in.Now)
	res := Result{}
	settledBefore := map[string]bool{}
	for _, k := range in.Report.Settled {
		settledBefore[k] = true
	}
	refusedBefore := map[string]Refusal{}
	for _, f := range in.Report.Refused {
		refusedBefore[f.Key] = f
	}
	for _, iv := range in.Report.Intervals {
		key := usage.Key(iv)
		res.Settled = append(res.Settled, key)
		if settledBefore[key] {
			if f, ok := refusedBefore[key]; ok {
				res.Refused = append(res.Refused, f)
			}
			continue
		}
		n, refusal := count(&l, claims, placed, iv, in)
		res.Counted += n
		if refusal != nil {
			refusal.Key = key
			res.Refused = append(res.Refused, *refusal)
			res.New = append(res.New, *refusal)
			l.Refused++
		}
	}
	open, refused := openHosts(in, claims, placed)
	remember(claims, placed, open)
	for _, f := range refused {
		res.Refused = append(res.Refused, f)
		if before, ok := refusedBefore[f.Key]; !ok || before.Reason != f.Reason {
			res.New = append(res.New, f)
		}
	}
	res.Counted += vanished(&l, claims, placed, open, in)
	l.Open = open
	l.Counted = usage.Merge(l.Counted, in.Now)
	if len(l.Counted) == 0 {
		l.Counted = nil
	}
	l.Claims = forget(claims, in.Now, in.Memory, in.MaxGone)
	slices.Sort(res.Settled)
	res.Settled = slices.Compact(res.Settled)
	res.Ledger = l
	return res
}

// ledgerClaims indexes the ledger's claims by UID (copies).
func ledgerClaims(cs []hostfleetv1alpha1.LedgerClaim) map[types.UID]*hostfleetv1alpha1.LedgerClaim {
	out := make(map[types.UID]*hostfleetv1alpha1.LedgerClaim, len(cs))
	for i := range cs {
		c := cs[i]
		out[c.UID] = &c
	}
	return out
}

// closeGone ends, now, the placement of the claims whose end the hub
// records now (ended), and of those the ledger has as placed that are no
// longer placed on the cluster (gone or moved while the hub did not
// watch: now is the earliest it knows). A claim ended that the ledger does
// not hold yet is added: its intervals may come after it is gone.
func closeGone(claims map[types.UID]*hostfleetv1alpha1.LedgerClaim, placed map[types.UID]Placement, ended map[types.UID]bool, now time.Time) {
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	for uid := range ended {
		p, ok := placed[uid]
		if !ok {
			continue
		}
		c := claims[uid]
		if c == nil {
			c = &hostfleetv1alpha1.LedgerClaim{UID: uid, Namespace: p.Namespace, From: metav1.NewTime(p.From.UTC())}
			claims[uid] = c
		}
		if c.To == nil {
			c.To = &at
		}
		delete(placed, uid)
	}
	for uid, c := range claims {
		if _, ok := placed[uid]; !ok && c.To == nil {
			c.To = &at
		}
	}
}

// window is the time a claim is placed on the cluster, as far as the hub
// knows: live (to is zero), or remembered.
func window(claims map[types.UID]*hostfleetv1alpha1.LedgerClaim, placed map[types.UID]Placement, uid types.UID) (ns string, from, to time.Time, ok bool) {
	if p, live := placed[uid]; live {
		return p.Namespace, p.From, time.Time{}, true
	}
	if c := claims[uid]; c != nil {
		var to time.Time
		if c.To != nil {
			to = c.To.Time
		}
		return c.Namespace, c.From.Time, to, true
	}
	return "", time.Time{}, time.Time{}, false
}

// count counts one interval into the ledger, or says why not: the seconds
// it added (none when its time was counted already).
func count(l *hostfleetv1alpha1.UsageLedgerStatus, claims map[types.UID]*hostfleetv1alpha1.LedgerClaim, placed map[types.UID]Placement,
	iv hostfleetv1alpha1.UsageInterval, in Input) (int64, *Refusal) {
	start, end := iv.Start.Time, iv.End.Time
	if !end.After(start) || end.After(in.Now.Add(in.Skew)) {
		return 0, &Refusal{Reason: hostfleetv1alpha1.ReasonUsageInvalid, Message: fmt.Sprintf(
			"interval of claim %s on %s from %s to %s ends before it starts or in the future", iv.Claim, iv.Host, at(start), at(end))}
	}
	ns, from, to, ok := window(claims, placed, iv.Claim)
	if !ok {
		return 0, &Refusal{Reason: hostfleetv1alpha1.ReasonUsageUnknownClaim, Message: fmt.Sprintf(
			"no claim with UID %s was placed on this cluster, as far as the hub remembers (--usage-memory)", iv.Claim)}
	}
	if iv.Namespace != ns {
		return 0, &Refusal{Reason: hostfleetv1alpha1.ReasonUsageWrongNamespace, Message: fmt.Sprintf(
			"interval of claim %s names namespace %q; the hub placed the claim from %s", iv.Claim, iv.Namespace, ns)}
	}
	until := to
	if until.IsZero() {
		until = in.Now
	}
	if start.Before(from.Add(-in.Skew)) || end.After(until.Add(in.Skew)) {
		return 0, &Refusal{Reason: hostfleetv1alpha1.ReasonUsageOutsidePlacement, Message: fmt.Sprintf(
			"interval of claim %s on %s from %s to %s lies outside its placement on this cluster (%s to %s)", iv.Claim, iv.Host, at(start), at(end), at(from), untilText(to))}
	}
	c := claims[iv.Claim]
	if c == nil {
		c = &hostfleetv1alpha1.LedgerClaim{UID: iv.Claim, Namespace: ns, From: metav1.NewTime(from.UTC())}
		claims[iv.Claim] = c
	}
	var added int64
	for _, piece := range uncovered(c.Counted, latest(start, from), earliest(end, until)) {
		for _, e := range usage.Split(ns, iv.Labels, piece.Start.Time, piece.End.Time) {
			l.Counted = append(l.Counted, e)
			added += e.Seconds
		}
		c.Counted = cover(c.Counted, piece)
	}
	return added, nil
}

// openHosts are the report's open hosts the hub takes: of a claim placed on
// the cluster now, or gone but remembered (a report written before its
// host's release: its time is counted up to the claim's end), for its
// namespace, bound no earlier than the claim's placement (within Skew);
// one per claim (a claim holds one host). The others are refused. The time
// of one is counted (Totals) from its start or the end of what was counted
// for its claim, whichever is later, up to now or the claim's end.
func openHosts(in Input, claims map[types.UID]*hostfleetv1alpha1.LedgerClaim, placed map[types.UID]Placement) (out []hostfleetv1alpha1.OpenUsage, refused []Refusal) {
	seen := map[types.UID]bool{}
	open := slices.Clone(in.Report.Open)
	slices.SortStableFunc(open, func(a, b hostfleetv1alpha1.OpenUsage) int { return a.Since.Compare(b.Since.Time) })
	for _, o := range open {
		p, live := placed[o.Claim]
		if c := claims[o.Claim]; !live && c != nil && c.To != nil && !o.Since.After(c.To.Time) {
			p, live = Placement{UID: c.UID, Namespace: c.Namespace, From: c.From.Time}, true
		}
		reason, why := "", ""
		switch {
		case o.Claim == "":
			reason, why = hostfleetv1alpha1.ReasonUsageUnknownClaim, "it names no claim UID (an agent older than the hub's usage ledger)"
		case !live:
			reason, why = hostfleetv1alpha1.ReasonUsageUnknownClaim, fmt.Sprintf("claim %s is not placed on this cluster now", o.Claim)
		case o.Namespace != p.Namespace:
			reason, why = hostfleetv1alpha1.ReasonUsageWrongNamespace, fmt.Sprintf("it names namespace %q; the hub placed claim %s from %s", o.Namespace, o.Claim, p.Namespace)
		case seen[o.Claim]:
			reason, why = hostfleetv1alpha1.ReasonUsageOutsidePlacement, fmt.Sprintf("claim %s is open on another host already: a claim holds one host", o.Claim)
		case o.Since.After(in.Now.Add(in.Skew)):
			reason, why = hostfleetv1alpha1.ReasonUsageInvalid, "it was bound in the future"
		case o.Since.Time.Before(p.From.Add(-in.Skew)):
			reason, why = hostfleetv1alpha1.ReasonUsageOutsidePlacement, fmt.Sprintf("it was bound at %s, before the hub placed claim %s here (%s)", at(o.Since.Time), o.Claim, at(p.From))
		}
		if why != "" {
			refused = append(refused, Refusal{Key: "open/" + o.Host, Reason: reason, Message: "open host " + o.Host + ": " + why})
			continue
		}
		seen[o.Claim] = true
		o.Since = metav1.NewTime(o.Since.UTC())
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b hostfleetv1alpha1.OpenUsage) int { return strings.Compare(a.Host, b.Host) })
	return out, refused
}

// remember adds to the ledger's claims each live claim whose open host
// the hub took: should it move to another cluster (its failed host
// replaced, none free here), the ledger remembers its placement here and
// counts the interval its agent reports here later.
func remember(claims map[types.UID]*hostfleetv1alpha1.LedgerClaim, placed map[types.UID]Placement, open []hostfleetv1alpha1.OpenUsage) {
	for _, o := range open {
		p, live := placed[o.Claim]
		if _, known := claims[o.Claim]; live && !known {
			claims[o.Claim] = &hostfleetv1alpha1.LedgerClaim{UID: p.UID, Namespace: p.Namespace, From: metav1.NewTime(p.From.UTC())}
		}
	}
}

// openKey identifies an open host as usage.Key identifies the interval
// that closes it.
func openKey(o hostfleetv1alpha1.OpenUsage) string {
	return usage.Key(hostfleetv1alpha1.UsageInterval{Claim: o.Claim, Host: o.Host, Start: o.Since})
}

// vanished counts the time of the open hosts the hub took before that the
// report no longer holds, open or closed: a host deleted while bound, or
// a cluster restored to before the binding. The hub counts such a host up
// to now, when it learns of it (or the claim's end), as it counted it up
// to now while it was open: what Totals showed is never taken back.
func vanished(l *hostfleetv1alpha1.UsageLedgerStatus, claims map[types.UID]*hostfleetv1alpha1.LedgerClaim, placed map[types.UID]Placement,
	open []hostfleetv1alpha1.OpenUsage, in Input) int64 {
	still := map[string]bool{}
	for _, o := range open {
		still[openKey(o)] = true
	}
	for _, iv := range in.Report.Intervals {
		still[usage.Key(iv)] = true
	}
	var added int64
	for _, o := range l.Open {
		if still[openKey(o)] {
			continue
		}
		_, _, to, ok := window(claims, placed, o.Claim)
		if !ok {
			continue
		}
		end := in.Now
		if !to.IsZero() && to.Before(end) {
			end = to
		}
		if !end.After(o.Since.Time) {
			continue
		}
		n, _ := count(l, claims, placed, hostfleetv1alpha1.UsageInterval{Claim: o.Claim, Namespace: o.Namespace, Host: o.Host,
			Start: o.Since, End: metav1.NewTime(end), Labels: o.Labels}, in)
		added += n
	}
	return added
}

// forget drops the claims gone longer than memory ago, then the oldest
// gone ones past maxGone; it returns the rest sorted by UID. A claim still
// placed is kept whatever its age.
func forget(claims map[types.UID]*hostfleetv1alpha1.LedgerClaim, now time.Time, memory time.Duration, maxGone int) []hostfleetv1alpha1.LedgerClaim {
	var live, gone []hostfleetv1alpha1.LedgerClaim
	for _, c := range claims {
		switch {
		case c.To == nil:
			live = append(live, *c)
		case memory <= 0 || now.Sub(c.To.Time) <= memory:
			gone = append(gone, *c)
		}
	}
	if maxGone >= 0 && len(gone) > maxGone {
		slices.SortFunc(gone, func(a, b hostfleetv1alpha1.LedgerClaim) int { return b.To.Compare(a.To.Time) })
		gone = gone[:maxGone]
	}
	out := append(live, gone...)
	slices.SortFunc(out, func(a, b hostfleetv1alpha1.LedgerClaim) int { return cmp.Compare(a.UID, b.UID) })
	if len(out) == 0 {
		return nil
	}
	return out
}

// uncovered is [from, to) less the spans, whole seconds.
func uncovered(spans []hostfleetv1alpha1.Span, from, to time.Time) []hostfleetv1alpha1.Span {
	from, to = from.UTC().Truncate(time.Second), to.UTC().Truncate(time.Second)
	var out []hostfleetv1alpha1.Span
	for _, s := range spans {
		if !from.Before(to) {
			break
		}
		if !s.End.After(from) {
			continue
		}
		if s.Start.After(from) {
			out = append(out, hostfleetv1alpha1.Span{Start: metav1.NewTime(from), End: metav1.NewTime(earliest(s.Start.Time, to))})
		}
		from = latest(from, s.End.Time)
	}
	if from.Before(to) {
		out = append(out, hostfleetv1alpha1.Span{Start: metav1.NewTime(from), End: metav1.NewTime(to)})
	}
	return out
}

// cover adds a span to disjoint sorted spans, joining those it touches.
func cover(spans []hostfleetv1alpha1.Span, add hostfleetv1alpha1.Span) []hostfleetv1alpha1.Span {
	all := append(slices.Clone(spans), add)
	slices.SortFunc(all, func(a, b hostfleetv1alpha1.Span) int { return a.Start.Compare(b.Start.Time) })
	out := all[:1]
	for _, s := range all[1:] {
		last := &out[len(out)-1]
		if !s.Start.After(last.End.Time) {
			if s.End.After(last.End.Time) {
				last.End = s.End
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

func copyLedger(l hostfleetv1alpha1.UsageLedgerStatus) hostfleetv1alpha1.UsageLedgerStatus {
	return *l.DeepCopy()
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func at(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func untilText(to time.Time) string {
	if to.IsZero() {
		return "now"
	}
	return at(to)
}
