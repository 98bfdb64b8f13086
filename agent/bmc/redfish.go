package bmc

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
)

// redfishSystem speaks to the address's Redfish system where bmclib falls
// short: its power (one GET, one Reset action with the ResetType asked
// for) and what its inventory leaves out. Same address, credentials and TLS
// choice as the driver's session.
type redfishSystem struct {
	base       string
	systemPath string
	// resetTarget is the system's Reset action, once read.
	resetTarget string
	user, pass  string
	http        *http.Client
}

func newRedfishSystem(addr Address, user, pass string, insecure bool) *redfishSystem {
	scheme := "https"
	if addr.HTTP {
		scheme = "http"
	}
	host := addr.Host
	if addr.Port != "" {
		host = net.JoinHostPort(addr.Host, addr.Port)
	}
	base := scheme + "://" + host
	return &redfishSystem{base: base, systemPath: addr.SystemPath, user: user, pass: pass, http: &http.Client{Transport: transport(base, insecure)}}
}

// transports are the Redfish connections kept between sessions, one pool
// per BMC and TLS choice: a host's next reconcile reuses the connection of
// the last one instead of a new TLS handshake (the BMC's CPU is scarce).
var transports sync.Map

// tlsSessions resumes the TLS sessions of every BMC connection, bmclib's
// included (it copies the transport it is given, and this with it).
var tlsSessions = tls.NewLRUClientSessionCache(4096)

// transport is the connection pool for base.
func transport(base string, insecure bool) *http.Transport {
	key := fmt.Sprintf("%s %v", base, insecure)
	if tr, ok := transports.Load(key); ok {
		return tr.(*http.Transport)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig(insecure)
	tr.MaxIdleConnsPerHost = 1 // one kept per BMC: thousands of hosts, few requests each
	actual, _ := transports.LoadOrStore(key, tr)
	return actual.(*http.Transport)
}

// tlsConfig is the TLS of BMC connections: the system's roots unless the
// host disables certificate verification; sessions resumed.
func tlsConfig(insecure bool) *tls.Config {
	return &tls.Config{InsecureSkipVerify: insecure, ClientSessionCache: tlsSessions} //nolint:gosec // the BMH's disableCertificateVerification
}

func (r *redfishSystem) get(ctx context.Context, path string, out any) error {
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
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// post posts body as JSON to path and accepts any 2xx answer; otherwise it
// returns the status and the BMC's message.
func (r *redfishSystem) post(ctx context.Context, path string, body any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.SetBasicAuth(r.user, r.pass)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode/100 == 2 {
		return nil
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e)
	if e.Error.Message != "" {
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, e.Error.Message)
	}
	return fmt.Errorf("POST %s: %s", path, resp.Status)
}

// drain reads what is left of a response (a JSON document's last newline)
// and closes it: only a body read to its end lets the connection serve the
// next request.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
}

// computerSystem is what the driver reads of a Redfish ComputerSystem.
type computerSystem struct {
	Manufacturer, Model, SerialNumber, PowerState string
	HostName                                      string
	EthernetInterfaces                            odataRef
	Actions                                       struct {
		Reset struct {
			Target string `json:"target"`
		} `json:"#ComputerSystem.Reset"`
	}
}

func (r *redfishSystem) read(ctx context.Context) (string, *computerSystem, error) {
	path, err := r.system(ctx)
	if err != nil {
		return "", nil, err
	}
	sys := &computerSystem{}
	if err := r.get(ctx, path, sys); err != nil {
		return "", nil, err
	}
	if sys.Actions.Reset.Target != "" {
		r.resetTarget = sys.Actions.Reset.Target
	}
	return path, sys, nil
}

// powerState is the system's PowerState, as the BMC words it.
func (r *redfishSystem) powerState(ctx context.Context) (string, error) {
	_, sys, err := r.read(ctx)
	if err != nil {
		return "", err
	}
	if sys.PowerState == "" {
		return "", fmt.Errorf("the system reports no PowerState")
	}
	return sys.PowerState, nil
}

// reset posts the system's Reset action with cmd as its ResetType.
func (r *redfishSystem) reset(ctx context.Context, cmd Command) error {
	if r.resetTarget == "" {
		path, _, err := r.read(ctx)
		if err != nil {
			return err
		}
		if r.resetTarget == "" {
			r.resetTarget = path + "/Actions/ComputerSystem.Reset"
		}
	}
	return r.post(ctx, r.resetTarget, map[string]string{"ResetType": string(cmd)})
}

type odataRef struct {
	ID string `json:"@odata.id"`
}

// system is the address's system, or the BMC's first.
func (r *redfishSystem) system(ctx context.Context) (string, error) {
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
	r.systemPath = systems.Members[0].ID
	return r.systemPath, nil
}

// complete fills what hw lacks from the system resource: vendor, model and
// serial (bmclib reports them only when all three are present), the
// hostname, and NICs with their addresses from the system's
// EthernetInterfaces (bmclib reads only NetworkInterfaces and
// NetworkAdapters, which most BMCs do not have). A Cluster API client makes
// a machine's addresses from the NICs' IPs and the hostname.
func (r *redfishSystem) complete(ctx context.Context, hw *metal3api.HardwareDetails) error {
	v := &hw.SystemVendor
	if v.Manufacturer != "" && v.ProductName != "" && v.SerialNumber != "" && hw.Hostname != "" && addressed(hw.NIC) {
		return nil
	}
	_, sys, err := r.read(ctx)
	if err != nil {
		return err
	}
	v.Manufacturer = first(v.Manufacturer, sys.Manufacturer)
	v.ProductName = first(v.ProductName, sys.Model)
	v.SerialNumber = first(v.SerialNumber, sys.SerialNumber)
	hw.Hostname = first(hw.Hostname, sys.HostName)
	if addressed(hw.NIC) || sys.EthernetInterfaces.ID == "" {
		return nil
	}
	nics, err := r.ethernetInterfaces(ctx, sys.EthernetInterfaces.ID)
	if err != nil {
		return err
	}
	if len(hw.NIC) == 0 {
		hw.NIC = nics
		return nil
	}
	// bmclib's NICs, with the addresses only EthernetInterfaces report.
	for i := range hw.NIC {
		for _, e := range nics {
			if hw.NIC[i].IP == "" && strings.EqualFold(hw.NIC[i].MAC, e.MAC) {
				hw.NIC[i].IP = e.IP
			}
		}
	}
	return nil
}

// addressed: there are NICs and each has an address.
func addressed(nics []metal3api.NIC) bool {
	for _, n := range nics {
		if n.IP == "" {
			return false
		}
	}
	return len(nics) > 0
}

// ethernetInterfaces reads the NICs of a system's EthernetInterfaces
// collection: name, MAC, speed and the first address (IPv4 before IPv6).
func (r *redfishSystem) ethernetInterfaces(ctx context.Context, path string) ([]metal3api.NIC, error) {
	var list struct{ Members []odataRef }
	if err := r.get(ctx, path, &list); err != nil {
		return nil, err
	}
	var nics []metal3api.NIC
	for _, m := range list.Members {
		var e struct {
			ID                                    string `json:"Id"`
			Name, MACAddress, PermanentMACAddress string
			SpeedMbps                             *int
			IPv4Addresses, IPv6Addresses          []struct{ Address string }
		}
		if err := r.get(ctx, m.ID, &e); err != nil {
			return nil, err
		}
		mac := strings.ToLower(first(e.PermanentMACAddress, e.MACAddress))
		if mac == "" {
			continue
		}
		nic := metal3api.NIC{Name: first(e.ID, e.Name), MAC: mac}
		if e.SpeedMbps != nil {
			nic.SpeedGbps = *e.SpeedMbps / 1000
		}
		for _, a := range append(e.IPv4Addresses, e.IPv6Addresses...) {
			if nic.IP = a.Address; nic.IP != "" {
				break
			}
		}
		nics = append(nics, nic)
	}
	sort.Slice(nics, func(i, j int) bool { return nics[i].Name < nics[j].Name })
	return nics, nil
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
