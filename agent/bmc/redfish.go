package bmc

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
)

// redfishSystem speaks to the address's Redfish system: its power (one GET,
// one Reset action with the ResetType asked for), boot override, virtual CD
// and inventory, with basic authentication on the BMC's kept connection.
type redfishSystem struct {
	base       string
	systemPath string
	// resetTarget is the system's Reset action, once read.
	resetTarget string
	// last is the system as read to open the session, until the first
	// power read or command; etag the ETag of the system's last read.
	last *computerSystem
	etag string
	// health is what the last power read said of the system's health.
	health   Health
	healthOf string
	// media is the system's virtual CD, once found.
	media      string
	user, pass string
	http       *http.Client
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

// tlsSessions resumes the TLS sessions of BMC connections made again (a
// BMC that closed its idle one).
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
	_, err := r.fetch(ctx, path, out)
	return err
}

// fetch reads path into out and returns its ETag, if the BMC sends one.
func (r *redfishSystem) fetch(ctx context.Context, path string, out any) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+path, nil)
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(r.user, r.pass)
	req.Header.Set("Accept", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return "", err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return resp.Header.Get("ETag"), json.NewDecoder(resp.Body).Decode(out)
}

// post posts body as JSON to path and accepts any 2xx answer; otherwise it
// returns the status and the BMC's message.
func (r *redfishSystem) post(ctx context.Context, path string, body any) error {
	return r.send(ctx, http.MethodPost, path, "", body)
}

// send sends body as JSON to path with method (and If-Match: etag, when
// set): a command changes what was read, which is read again.
func (r *redfishSystem) send(ctx context.Context, method, path, etag string, body any) error {
	_, err := r.sendWith(ctx, method, path, etag, body)
	return err
}

// sendFor sends as send does and returns the answer's Location: the task
// an action started.
func (r *redfishSystem) sendFor(ctx context.Context, method, path string, body any) (string, error) {
	return r.sendWith(ctx, method, path, "", body)
}

func (r *redfishSystem) sendWith(ctx context.Context, method, path, etag string, body any) (string, error) {
	r.last = nil
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return "", err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	if etag != "" {
		req.Header.Set("If-Match", etag)
	}
	req.SetBasicAuth(r.user, r.pass)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return "", err
	}
	defer drain(resp)
	if resp.StatusCode/100 == 2 {
		loc := resp.Header.Get("Location")
		if u, err := url.Parse(loc); err == nil && u.IsAbs() {
			loc = u.Path // the same BMC
		}
		return loc, nil
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&e)
	if e.Error.Message != "" {
		return "", fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, e.Error.Message)
	}
	return "", fmt.Errorf("%s %s: %s", method, path, resp.Status)
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
	HostName, BiosVersion                         string
	MemorySummary                                 struct{ TotalSystemMemoryGiB float64 }
	Processors, Memory, Storage, SimpleStorage    odataRef
	EthernetInterfaces, VirtualMedia              odataRef
	Links                                         struct{ ManagedBy []odataRef }
	Status                                        struct{ Health, HealthRollup string }
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
	etag, err := r.fetch(ctx, path, sys)
	if err != nil {
		return "", nil, err
	}
	if sys.Actions.Reset.Target != "" {
		r.resetTarget = sys.Actions.Reset.Target
	}
	r.etag = etag
	return path, sys, nil
}

// powerState is the system's PowerState, as the BMC words it: the read
// that opened the session, if nothing was sent since, or a new one.
func (r *redfishSystem) powerState(ctx context.Context) (string, error) {
	sys := r.last
	if sys == nil {
		var err error
		if _, sys, err = r.read(ctx); err != nil {
			return "", err
		}
	}
	r.last = nil
	r.health, r.healthOf = redfishHealth(sys.Status.Health, sys.Status.HealthRollup)
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

// open reads the system: the BMC answers and takes the credentials. The
// first power read is this one.
func (r *redfishSystem) open(ctx context.Context) error {
	_, sys, err := r.read(ctx)
	r.last = sys
	return err
}

// bootTargets are Redfish's BootSourceOverrideTarget for each device.
var bootTargets = map[BootDevice]string{BootPXE: "Pxe", BootDisk: "Hdd", BootCDROM: "Cd"}

// setBootOnce makes the next boot, only, from dev, in UEFI mode.
func (r *redfishSystem) setBootOnce(ctx context.Context, dev BootDevice) error {
	target, ok := bootTargets[dev]
	if !ok {
		return fmt.Errorf("%w: boot device %q", ErrUnsupported, dev)
	}
	path, _, err := r.read(ctx) // its ETag, which some BMCs require
	if err != nil {
		return err
	}
	return r.send(ctx, http.MethodPatch, path, r.etag, map[string]any{"Boot": map[string]string{
		"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": target, "BootSourceOverrideMode": "UEFI"}})
}

// virtualMedia is what the driver reads of a VirtualMedia resource.
type virtualMedia struct {
	Inserted   bool
	Image      string
	MediaTypes []string
	Actions    struct {
		Insert struct {
			Target string `json:"target"`
		} `json:"#VirtualMedia.InsertMedia"`
		Eject struct {
			Target string `json:"target"`
		} `json:"#VirtualMedia.EjectMedia"`
	}
}

// cd finds the system's virtual CD: among the system's own VirtualMedia,
// or its manager's, the first that takes a CD or DVD.
func (r *redfishSystem) cd(ctx context.Context) (*virtualMedia, error) {
	if r.media != "" {
		vm := &virtualMedia{}
		return vm, r.get(ctx, r.media, vm)
	}
	_, sys, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	collection := sys.VirtualMedia.ID
	if collection == "" && len(sys.Links.ManagedBy) > 0 {
		var m struct{ VirtualMedia odataRef }
		if err := r.get(ctx, sys.Links.ManagedBy[0].ID, &m); err != nil {
			return nil, err
		}
		collection = m.VirtualMedia.ID
	}
	var list struct{ Members []odataRef }
	if collection != "" {
		if err := r.get(ctx, collection, &list); err != nil {
			return nil, err
		}
	}
	for _, ref := range list.Members {
		vm := &virtualMedia{}
		if err := r.get(ctx, ref.ID, vm); err != nil {
			return nil, err
		}
		for _, t := range vm.MediaTypes {
			if t == "CD" || t == "DVD" {
				r.media = ref.ID
				return vm, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: the BMC lists no virtual CD for the system (neither its VirtualMedia nor its manager's)", ErrUnsupported)
}

// insertMedia inserts url as the virtual CD, ejecting what is in first.
func (r *redfishSystem) insertMedia(ctx context.Context, url string) error {
	vm, err := r.cd(ctx)
	if err != nil {
		return err
	}
	if vm.Inserted {
		if err := r.eject(ctx, vm); err != nil {
			return err
		}
	}
	if vm.Actions.Insert.Target == "" {
		return fmt.Errorf("%w: the virtual CD %s has no InsertMedia action", ErrUnsupported, r.media)
	}
	return r.post(ctx, vm.Actions.Insert.Target, map[string]any{"Image": url, "Inserted": true, "WriteProtected": true})
}

// ejectMedia ejects the virtual CD, if something is in; a system without
// one has nothing to eject.
func (r *redfishSystem) ejectMedia(ctx context.Context) error {
	vm, err := r.cd(ctx)
	if errors.Is(err, ErrUnsupported) {
		return nil
	}
	if err != nil || !vm.Inserted {
		return err
	}
	return r.eject(ctx, vm)
}

func (r *redfishSystem) eject(ctx context.Context, vm *virtualMedia) error {
	if vm.Actions.Eject.Target == "" {
		return fmt.Errorf("%w: the virtual CD %s has no EjectMedia action", ErrUnsupported, r.media)
	}
	return r.post(ctx, vm.Actions.Eject.Target, map[string]any{})
}
