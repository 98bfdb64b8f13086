package lease

import (
	"testing"
	"time"
)

// FuzzDecide: whatever a claim's lease annotations say, the hub ends a
// lease only at or after an end it can read, never moves an end sooner,
// and always says something on a claim with a lease.
func FuzzDecide(f *testing.F) {
	f.Add("2026-11-27T13:00:00Z", "", "", int64(0), int64(3600))
	f.Add("", "90m", "", int64(720), int64(0))
	f.Add("tomorrow", "a week", "lease-ended", int64(-5), int64(-1))
	f.Fuzz(func(t *testing.T, until, length, releasedBy string, capHours, ageSeconds int64) {
		now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
		in := Input{Now: now, Claim: "tenant-a/web", Created: now.Add(-time.Duration(ageSeconds%(1<<20)) * time.Second),
			Until: until, For: length, ReleasedBy: releasedBy, Warning: DefaultWarning}
		if capHours > 0 {
			c := time.Duration(capHours%100_000) * time.Hour
			in.Cap = &c
		}
		p := Decide(in)
		end, err := time.Parse(time.RFC3339, until)
		if p.Release && releasedBy == "" && (err != nil || now.Before(end)) && p.Until.IsZero() {
			t.Fatalf("released a lease whose end %q is not past: %+v", until, p)
		}
		if err == nil && !p.Until.IsZero() && p.Until.Before(end) {
			t.Fatalf("moved the end %s sooner, to %s", end, p.Until)
		}
		if (until != "" || length != "") && p.Condition == nil {
			t.Fatalf("a claim with a lease (%q, %q) and no LeaseExpiring", until, length)
		}
	})
}
