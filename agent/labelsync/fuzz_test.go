package labelsync

import (
	"testing"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// FuzzDesired: label sync never touches a claim label outside the
// prefixes, copies every host label under them, removes the claim's others
// under them, and sets bound-host only to the host named.
func FuzzDesired(f *testing.F) {
	f.Add("example.com/gpu", "yes", "example.com/gpu", "no", "example.com", "h0")
	f.Add("app", "web", "kubernetes.io/hostname", "x", "kubernetes.io", "")
	f.Add(hostfleetv1alpha1.LabelBoundHost, "forged", "a.example.com/x", "1", "example.com", "h1")
	f.Fuzz(func(t *testing.T, ck, cv, hk, hv, prefix, bound string) {
		prefixes, _ := Prefixes([]string{prefix})
		claim, host := map[string]string{ck: cv}, map[string]string{hk: hv}
		out := Desired(claim, host, prefixes, bound)
		for k, v := range claim {
			if !Under(k, prefixes) && k != hostfleetv1alpha1.LabelBoundHost && out[k] != v && !(k == hk && Under(hk, prefixes)) {
				t.Fatalf("claim label %s=%s outside %v changed to %q", k, v, prefixes, out[k])
			}
		}
		for k, v := range out {
			switch {
			case k == hostfleetv1alpha1.LabelBoundHost:
				if v != bound {
					t.Fatalf("bound-host %q, not %q", v, bound)
				}
			case Under(k, prefixes) && host[k] != v:
				t.Fatalf("%s=%s under %v is not the host's %q", k, v, prefixes, host[k])
			}
		}
		if bound == "" && out[hostfleetv1alpha1.LabelBoundHost] != "" {
			t.Fatalf("bound-host kept without a host")
		}
	})
}
