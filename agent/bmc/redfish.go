package bmc

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
)

// redfishReader reads Redfish resources bmclib's inventory leaves out, with
// the same address, credentials and TLS choice as the driver's session.
type redfishReader struct {
	base       string
	systemPath string
	user, pass string
	http       *http.Client
}

func newRedfishReader(addr Address, user, pass string, insecure bool) *redfishReader {
	scheme := "https"
	if addr.HTTP {
		scheme = "http"
	}
	host := addr.Host
	if addr.Port != "" {
		host = net.JoinHostPort(addr.Host, addr.Port)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: insecure} //nolint:gosec // the BMH's disableCertificateVerification
	return &redfishReader{base: scheme + "://" + host, systemPath: addr.SystemPath, user: user, pass: pass, http: &http.Client{Transport: tr}}
}

func (r *redfishReader) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+path, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(r.user, r.pass)
	req.Header.Set("Accept", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

type odataRef struct {
	ID string `json:"@odata.id"`
}

// system is the address's system, or the BMC's first.
func (r *redfishReader) system(ctx context.Context) (string, error) {
	if r.systemPath != "" {
		return r.systemPath, nil
	}
	var systems struct{ Members []odataRef }
	if err := r.get(ctx, "/redfish/v1/Systems", &systems); err != nil {
		return "", err
	}
	if len(systems.Members) == 0 {
		return "", fmt.Errorf("the BMC lists no system")
	}
	return systems.Members[0].ID, nil
}

// complete fills what hw lacks from the system resource: vendor, model and
// serial (bmclib reports them only when all three are present), and NICs
// from the system's EthernetInterfaces (bmclib reads only NetworkInterfaces
// and NetworkAdapters, which most BMCs do not have).
func (r *redfishReader) complete(ctx context.Context, hw *metal3api.HardwareDetails) error {
	v := &hw.SystemVendor
	if v.Manufacturer != "" && v.ProductName != "" && v.SerialNumber != "" && len(hw.NIC) > 0 {
		return nil
	}
	path, err := r.system(ctx)
	if err != nil {
		return err
	}
	var sys struct {
		Manufacturer, Model, SerialNumber string
		EthernetInterfaces                odataRef
	}
	if err := r.get(ctx, path, &sys); err != nil {
		return err
	}
	v.Manufacturer = first(v.Manufacturer, sys.Manufacturer)
	v.ProductName = first(v.ProductName, sys.Model)
	v.SerialNumber = first(v.SerialNumber, sys.SerialNumber)
	if len(hw.NIC) > 0 || sys.EthernetInterfaces.ID == "" {
		return nil
	}
	var list struct{ Members []odataRef }
	if err := r.get(ctx, sys.EthernetInterfaces.ID, &list); err != nil {
		return err
	}
	for _, m := range list.Members {
		var e struct {
			ID                                    string `json:"Id"`
			Name, MACAddress, PermanentMACAddress string
			SpeedMbps                             *int
		}
		if err := r.get(ctx, m.ID, &e); err != nil {
			return err
		}
		mac := strings.ToLower(first(e.PermanentMACAddress, e.MACAddress))
		if mac == "" {
			continue
		}
		nic := metal3api.NIC{Name: first(e.ID, e.Name), MAC: mac}
		if e.SpeedMbps != nil {
			nic.SpeedGbps = *e.SpeedMbps / 1000
		}
		hw.NIC = append(hw.NIC, nic)
	}
	sort.Slice(hw.NIC, func(i, j int) bool { return hw.NIC[i].Name < hw.NIC[j].Name })
	return nil
}

// first is the first non-empty string.
func first(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
