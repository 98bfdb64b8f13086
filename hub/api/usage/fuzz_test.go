package usage

import (
	"encoding/json"
	"testing"
)

// FuzzParse: any value of hostfleet.io/usage either parses into intervals
// that each have a claim, a start and an end, and that encode and parse
// back the same, or is refused; nothing panics.
func FuzzParse(f *testing.F) {
	f.Add(`[{"claim":"u","namespace":"t","host":"hosts/h0","start":"2026-11-27T10:00:00Z","end":"2026-11-27T11:00:00Z"}]`)
	f.Add(`[{"period":"2026-11-26","namespace":"t","seconds":100}]`)
	f.Add(`[{"claim":"u"}]`)
	f.Add(`{`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, v string) {
		rec, err := Parse(v)
		if err != nil {
			return
		}
		for _, iv := range rec {
			if iv.Claim == "" || iv.Start.IsZero() || iv.End.IsZero() {
				t.Fatalf("parsed an interval without a claim, a start or an end: %+v", iv)
			}
		}
		if len(rec) == 0 {
			return
		}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(string(b))
		if err != nil || len(again) != len(rec) {
			t.Fatalf("encoded record %s does not parse back: %v", b, err)
		}
		for i := range rec {
			if Key(again[i]) != Key(rec[i]) {
				t.Fatalf("key %q became %q", Key(rec[i]), Key(again[i]))
			}
		}
	})
}
