package bmc

import "testing"

// FuzzParseAddress: any BMC address parses into a known protocol with a
// host to dial, or is refused.
func FuzzParseAddress(f *testing.F) {
	f.Add("redfish-virtualmedia+https://10.0.0.1:8443/redfish/v1/Systems/1")
	f.Add("ipmi://[::1]:623")
	f.Add("idrac://x")
	f.Fuzz(func(t *testing.T, v string) {
		a, err := ParseAddress(v)
		if err != nil {
			return
		}
		if a.Protocol != Redfish && a.Protocol != IPMI {
			t.Fatalf("%q parsed with protocol %q", v, a.Protocol)
		}
		if a.HostPort() == "" {
			t.Fatalf("%q parsed with no host to dial", v)
		}
	})
}
