package redfish

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Paths of the one system, manager and chassis. The ids are ones bmclib's
// Redfish provider knows ("1", as Supermicro BMCs have).
const (
	Root        = "/redfish/v1/"
	SystemPath  = "/redfish/v1/Systems/1"
	ManagerPath = "/redfish/v1/Managers/1"
	ChassisPath = "/redfish/v1/Chassis/1"
	MediaPath   = ManagerPath + "/VirtualMedia/CD"
	sessionsURI = "/redfish/v1/SessionService/Sessions"
)

// Hardware is what inspection finds.
type Hardware struct {
	Manufacturer, Model, SerialNumber, BIOSVersion string
	CPUs                                           int
	CPUModel                                       string
	CoresPerCPU                                    int
	MemoryGiB                                      int
	Disks                                          []Disk
	NICs                                           []NIC
	// GPUs are listed among the Processors (ProcessorType GPU).
	GPUs []GPU
	// HostName is the system's HostName (what the operating system last
	// reported): empty unless set.
	HostName string
}

// Disk is one drive.
type Disk struct {
	Name       string
	SizeBytes  int64
	Rotational bool
}

// GPU is one GPU.
type GPU struct {
	Manufacturer, Model string
}

// NIC is one network interface.
type NIC struct {
	Name, MAC string
	SpeedMbps int
	// IP, when set, is the address the interface reports (IPv4Addresses).
	IP string
}

// DefaultHardware is a small two-socket server.
func DefaultHardware(serial string) Hardware {
	return Hardware{Manufacturer: "Hostfleet", Model: "Emulated R1", SerialNumber: serial, BIOSVersion: "1.2.3",
		CPUs: 2, CPUModel: "Emulated CPU @ 2.4GHz", CoresPerCPU: 8, MemoryGiB: 64,
		Disks: []Disk{{Name: "sda", SizeBytes: 480 << 30}},
		NICs:  []NIC{{Name: "eno1", MAC: "52:54:00:00:00:01", SpeedMbps: 10000}}}
}

// BMC is one emulated BMC and the server it answers on.
type BMC struct {
	// Username and Password are the credentials it accepts.
	Username, Password string
	Hardware           Hardware

	mu    sync.Mutex
	power string // "On" or "Off"
	boot  bootOverride
	media media
	// sessions are the open sessions' accounts, by token.
	sessions map[string]*account
	// accounts are the BMC's users (AccountService); the first is
	// Username's.
	accounts []*account
	fw       firmware
	faults   Faults
	log      []string
	// repeats are the power commands accepted that found the system
	// already where they lead.
	repeats []string

	srv *httptest.Server
	// conns and requests count the connections accepted (each a TLS
	// handshake on HTTPS) and the requests served.
	conns, requests atomic.Int64
	down            bool
	ethOnly         bool
	noMedia         bool
	softIgnore      bool
	latency         Latency
	// target is the power state a change under way reaches at settleAt.
	target   string
	settleAt time.Time
	// erase, eraseHangs: Options; erasing: a booted erase image powers
	// the system off at erasedAt.
	erase      time.Duration
	eraseHangs bool
	erasing    bool
	erasedAt   time.Time
	// eraseSeen: the system's On was read while erasing.
	eraseSeen bool
	// health and rollup are the system's Status.Health and HealthRollup
	// ("" for OK).
	health, rollup string
}

type bootOverride struct {
	Enabled, Target, Mode string
}

type media struct {
	Inserted bool
	Image    string
	// Size is how many bytes of the image were fetched.
	Size int64
}

// Faults are injected into every request while set.
type Faults struct {
	// Status, if not zero, is returned to every request (500, 503...).
	Status int
	// Delay is added before every answer.
	Delay time.Duration
}

// Options start a BMC.
type Options struct {
	Username, Password string
	Hardware           Hardware
	// TLS serves HTTPS with a self-signed certificate.
	TLS bool
	// PoweredOn starts the system powered on.
	PoweredOn bool
	// Latency makes the BMC as slow as hardware; zero is instant.
	Latency Latency
	// EthernetInterfacesOnly describes the NICs only as the system's
	// EthernetInterfaces, as most BMCs (and Ironic's inspection) do: no
	// NetworkInterfaces, no chassis NetworkAdapters.
	EthernetInterfacesOnly bool
	// NoVirtualMedia: the manager lists no VirtualMedia, as a BMC without
	// the licence for it.
	NoVirtualMedia bool
	// GracefulShutdownIgnored: the operating system does not answer the
	// ACPI power button, as a hung or misconfigured one does; a
	// GracefulShutdown is accepted and changes nothing.
	GracefulShutdownIgnored bool
	// Erase: a system booted from a virtual CD whose image ends in
	// erase.iso powers itself off this long after it is on (zero: 1 s), as
	// an erase image does when done, and not before its On was read once
	// (a real erase takes minutes: whoever polls sees it run); with
	// EraseHangs it never does.
	Erase      time.Duration
	EraseHangs bool
	// Firmware is the FirmwareInventory (DefaultFirmware when empty);
	// UpdateTime how long a SimpleUpdate's task runs (zero: 1 s).
	Firmware   []Component
	UpdateTime time.Duration
}

// Latency is how long a BMC takes, as real ones do.
type Latency struct {
	// PowerChange: after a reset the system reports PoweringOn or
	// PoweringOff for this long before On or Off (a restart: PoweringOn,
	// then On); a reset sent meanwhile is refused with 409, as BMCs refuse
	// commands mid-transition.
	PowerChange time.Duration
	// MediaInsert: InsertMedia answers after this long (beyond fetching
	// the image).
	MediaInsert time.Duration
	// Inventory: reading the system's processors (the first read of an
	// inventory) answers after this long.
	Inventory time.Duration
}

// Start serves a BMC on 127.0.0.1 on a free port.
func Start(o Options) *BMC {
	if o.Username == "" {
		o.Username, o.Password = "admin", "password"
	}
	if o.Hardware.Model == "" {
		o.Hardware = DefaultHardware("EMU0001")
	}
	b := &BMC{Username: o.Username, Password: o.Password, Hardware: o.Hardware, power: "Off",
		boot: bootOverride{Enabled: "Disabled", Target: "None", Mode: "UEFI"}, sessions: map[string]*account{}, ethOnly: o.EthernetInterfacesOnly, noMedia: o.NoVirtualMedia,
		softIgnore: o.GracefulShutdownIgnored, latency: o.Latency, erase: o.Erase, eraseHangs: o.EraseHangs}
	if b.erase <= 0 {
		b.erase = time.Second
	}
	b.fw = newFirmware(o, o.Hardware.BIOSVersion)
	b.accounts = []*account{{id: "1", user: o.Username, password: o.Password, role: "Administrator", enabled: true}}
	if o.PoweredOn {
		b.power = "On"
	}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(b.serve))
	// Clients that refuse the self-signed certificate are expected.
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			b.conns.Add(1)
		}
	}
	if o.TLS {
		b.srv.StartTLS()
	} else {
		b.srv.Start()
	}
	return b
}

// URL is the BMC's base URL (http://127.0.0.1:port or https://...).
func (b *BMC) URL() string { return b.srv.URL }

// HostPort is the BMC's 127.0.0.1:port.
func (b *BMC) HostPort() string {
	return strings.TrimPrefix(strings.TrimPrefix(b.srv.URL, "https://"), "http://")
}

// Close stops the BMC.
func (b *BMC) Close() { b.srv.Close() }

// SetFaults sets the faults injected into every request.
func (b *BMC) SetFaults(f Faults) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = f
}

// SetHealth sets the system's Status.Health and Status.HealthRollup ("OK",
// "Warning", "Critical"; "" for OK), as a failed power supply or DIMM
// would.
func (b *BMC) SetHealth(health, rollup string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.health, b.rollup = health, rollup
}

// SetDown makes the BMC drop every connection without answering (true), or
// answer again (false).
func (b *BMC) SetDown(down bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = down
}

func (b *BMC) record(format string, args ...any) {
	b.log = append(b.log, fmt.Sprintf(format, args...))
}

// powerOnFromOverride: a one-time boot override is consumed by the boot.
func (b *BMC) bootNow() {
	if b.boot.Target == "Cd" && b.media.Inserted && strings.HasSuffix(b.media.Image, "erase.iso") && !b.eraseHangs {
		b.erasing, b.eraseSeen, b.erasedAt = true, false, time.Now().Add(b.latency.PowerChange+b.erase)
	}
	if b.boot.Enabled == "Once" {
		b.boot.Enabled, b.boot.Target = "Disabled", "None"
	}
	b.applyBIOS()
}

type redfishError struct {
	Error struct {
		Code         string `json:"code"`
		Message      string `json:"message"`
		ExtendedInfo []any  `json:"@Message.ExtendedInfo"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	var e redfishError
	e.Error.Code = "Base.1.8.GeneralError"
	e.Error.Message = msg
	e.Error.ExtendedInfo = []any{map[string]string{"MessageId": "Base.1.8.GeneralError", "Message": msg}}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("OData-Version", "4.0")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func ref(path string) map[string]string { return map[string]string{"@odata.id": path} }

func collection(path, typ, name string, members ...string) map[string]any {
	refs := make([]map[string]string, 0, len(members))
	for _, m := range members {
		refs = append(refs, ref(m))
	}
	return map[string]any{"@odata.id": path, "@odata.type": typ, "Name": name,
		"Members": refs, "Members@odata.count": len(refs)}
}

func (b *BMC) serve(w http.ResponseWriter, r *http.Request) {
	b.requests.Add(1)
	b.mu.Lock()
	down, faults := b.down, b.faults
	b.mu.Unlock()
	if down {
		// Drop the connection: a BMC that stopped answering.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	if faults.Delay > 0 {
		select {
		case <-time.After(faults.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if faults.Status != 0 {
		writeError(w, faults.Status, "injected fault")
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/redfish" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]string{"v1": Root})
		return
	case path == "/redfish/v1" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, b.serviceRoot())
		return
	case path == sessionsURI && r.Method == http.MethodPost:
		b.login(w, r)
		return
	}
	caller := b.authorized(r)
	if caller == nil {
		w.Header().Set("WWW-Authenticate", `Basic realm="redfish"`)
		writeError(w, http.StatusUnauthorized, "authentication required")
		return
	}
	if d := b.delay(r.Method, path); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settle()
	b.settleTasks()
	if b.serveAccounts(w, r, path, caller) {
		return
	}
	switch r.Method {
	case http.MethodGet:
		for _, get := range []func(string) any{b.resource, b.firmwareResource, b.accountResource} {
			if v := get(path); v != nil {
				writeJSON(w, http.StatusOK, v)
				return
			}
		}
	case http.MethodPatch:
		switch path {
		case SystemPath:
			b.patchSystem(w, r)
			return
		case BIOSSettingsPath:
			b.patchBIOSSettings(w, r)
			return
		}
	case http.MethodPost:
		switch path {
		case SimpleUpdatePath:
			b.simpleUpdate(w, r)
			return
		case SystemPath + "/Actions/ComputerSystem.Reset":
			b.reset(w, r)
			return
		case MediaPath + "/Actions/VirtualMedia.InsertMedia":
			b.insertMedia(w, r)
			return
		case MediaPath + "/Actions/VirtualMedia.EjectMedia":
			b.media = media{}
			b.record("EjectMedia")
			w.WriteHeader(http.StatusNoContent)
			return
		case ManagerPath + "/Actions/Manager.Reset":
			b.record("Manager.Reset")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	case http.MethodDelete:
		if strings.HasPrefix(path, sessionsURI+"/") {
			delete(b.sessions, strings.TrimPrefix(path, sessionsURI+"/"))
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("%s %s: no such resource or action", r.Method, r.URL.Path))
}

// authorized is the account a request is made as, or nil.
func (b *BMC) authorized(r *http.Request) *account {
	b.mu.Lock()
	defer b.mu.Unlock()
	if tok := r.Header.Get("X-Auth-Token"); tok != "" {
		return b.sessions[tok]
	}
	if u, p, ok := r.BasicAuth(); ok {
		return b.accountFor(u, p)
	}
	return nil
}

func (b *BMC) login(w http.ResponseWriter, r *http.Request) {
	var in struct{ UserName, Password string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "malformed session request: "+err.Error())
		return
	}
	b.mu.Lock()
	a := b.accountFor(in.UserName, in.Password)
	b.mu.Unlock()
	if a == nil {
		writeError(w, http.StatusUnauthorized, "invalid username or password")
		return
	}
	buf := make([]byte, 16)
	_, _ = rand.Read(buf)
	tok := hex.EncodeToString(buf)
	b.mu.Lock()
	b.sessions[tok] = a
	b.mu.Unlock()
	loc := sessionsURI + "/" + tok
	w.Header().Set("X-Auth-Token", tok)
	w.Header().Set("Location", loc)
	writeJSON(w, http.StatusCreated, map[string]any{"@odata.id": loc, "@odata.type": "#Session.v1_3_0.Session",
		"Id": tok, "Name": "User Session", "UserName": in.UserName})
}

// delay is how long a request waits before it is served (Latency).
func (b *BMC) delay(method, path string) time.Duration {
	switch {
	case method == http.MethodPost && path == MediaPath+"/Actions/VirtualMedia.InsertMedia":
		return b.latency.MediaInsert
	case method == http.MethodGet && path == SystemPath+"/Processors":
		return b.latency.Inventory
	}
	return 0
}

// settle ends a power change whose time has come. The caller holds b.mu.
func (b *BMC) settle() {
	if b.target != "" && !time.Now().Before(b.settleAt) {
		b.power, b.target = b.target, ""
	}
	if b.erasing && b.eraseSeen && b.power == "On" && !time.Now().Before(b.erasedAt) {
		b.power, b.erasing = "Off", false
		b.record("Erased: the erase image powered the system off")
	}
}

// transition starts a power change to target: at once without latency,
// else through PoweringOn or PoweringOff. The caller holds b.mu.
func (b *BMC) transition(target string) {
	if b.latency.PowerChange <= 0 {
		b.power = target
		return
	}
	b.power = "Powering" + target
	b.target, b.settleAt = target, time.Now().Add(b.latency.PowerChange)
}

func (b *BMC) reset(w http.ResponseWriter, r *http.Request) {
	var in struct{ ResetType string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "malformed reset request: "+err.Error())
		return
	}
	if b.target != "" {
		b.record("Reset %s refused: %s", in.ResetType, b.power)
		writeError(w, http.StatusConflict, fmt.Sprintf("a power change is under way (%s): try again when it is done", b.power))
		return
	}
	b.erasing = false // whatever the system ran is interrupted
	if before := b.power; (in.ResetType == "On" && before == "On") || (before == "Off" && (in.ResetType == "ForceOff" || in.ResetType == "GracefulShutdown")) {
		b.repeats = append(b.repeats, in.ResetType+" while "+before)
	}
	switch in.ResetType {
	case "On":
		if b.power == "Off" {
			b.bootNow()
			b.transition("On")
		}
	case "GracefulShutdown":
		if b.power == "On" && !b.softIgnore {
			b.transition("Off")
		}
	case "ForceOff":
		if b.power == "On" {
			b.transition("Off")
		}
	case "ForceRestart", "GracefulRestart":
		if b.power == "Off" {
			writeError(w, http.StatusConflict, "the system is powered off: it cannot restart")
			return
		}
		b.bootNow()
		b.transition("On")
	case "PowerCycle":
		if b.power == "Off" {
			writeError(w, http.StatusConflict, "the system is powered off: it cannot power cycle")
			return
		}
		b.bootNow()
		b.transition("On")
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("ResetType %q is not one of the allowable values", in.ResetType))
		return
	}
	b.record("Reset %s", in.ResetType)
	w.WriteHeader(http.StatusNoContent)
}

var bootTargets = []string{"None", "Pxe", "Hdd", "Cd", "BiosSetup", "Usb"}

func (b *BMC) patchSystem(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Boot *struct {
			BootSourceOverrideEnabled string `json:",omitempty"`
			BootSourceOverrideTarget  string `json:",omitempty"`
			BootSourceOverrideMode    string `json:",omitempty"`
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "malformed PATCH: "+err.Error())
		return
	}
	if in.Boot != nil {
		next := b.boot
		if v := in.Boot.BootSourceOverrideEnabled; v != "" {
			if v != "Disabled" && v != "Once" && v != "Continuous" {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("BootSourceOverrideEnabled %q is not one of Disabled, Once, Continuous", v))
				return
			}
			next.Enabled = v
		}
		if v := in.Boot.BootSourceOverrideTarget; v != "" {
			ok := false
			for _, t := range bootTargets {
				ok = ok || t == v
			}
			if !ok {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("BootSourceOverrideTarget %q is not one of %s", v, strings.Join(bootTargets, ", ")))
				return
			}
			next.Target = v
		}
		if v := in.Boot.BootSourceOverrideMode; v != "" {
			next.Mode = v
		}
		b.boot = next
		b.record("PATCH Boot %s/%s", next.Enabled, next.Target)
	}
	w.WriteHeader(http.StatusNoContent)
}
