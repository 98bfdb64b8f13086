package bmc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	ipmi "github.com/bougou/go-ipmi"
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
)

// ipmiClient speaks IPMI 2.0 (RMCP+, lanplus) natively: no ipmitool, so the
// agent's image drives ipmi:// hosts from its own files.
type ipmiClient struct {
	c *ipmi.Client
	// user is the account the session logs in with.
	user string
	bmcCall
	// health is what the last chassis status said.
	health   Health
	healthOf string
}

// packetTimeout bounds one UDP exchange; the library retries it.
const packetTimeout = 2 * time.Second

func openIPMI(ctx context.Context, addr Address, user, pass string, call bmcCall) (Driver, error) {
	timeout := call.timeout
	port := 623
	if addr.Port != "" {
		p, err := strconv.Atoi(addr.Port)
		if err != nil {
			return nil, fmt.Errorf("IPMI port %q is not a number", addr.Port)
		}
		port = p
	}
	c, err := ipmi.NewClient(addr.Host, port, user, pass)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCredentials, err)
	}
	// Cipher suite 3 (RAKP-HMAC-SHA1, AES-CBC-128): what ipmi_sim and
	// most BMCs speak, and what the ipmitool path asks for.
	c.WithTimeout(min(timeout, packetTimeout)).WithCipherSuiteID(ipmi.CipherSuiteID3).WithMaxPrivilegeLevel(ipmi.PrivilegeLevelAdministrator)
	// Open observes the session as a whole; its calls, once open.
	d := &ipmiClient{c: c, user: user, bmcCall: bmcCall{addr: call.addr, timeout: call.timeout}}
	if err := d.call(ctx, "open IPMI session", d.connect); err != nil {
		if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrCredentials) {
			return nil, err
		}
		// It answered the ping: the session was refused.
		return nil, fmt.Errorf("%w: %s answers but refused the IPMI session: %v", ErrCredentials, addr.HostPort(), err)
	}
	d.bmcCall = call
	return d, nil
}

// connect opens an RMCP+ session: Open Session, RAKP 1/2, RAKP 3/4, then
// administrator privilege. go-ipmi's Connect first sends Get Channel
// Authentication Capabilities in RMCP+ format, which OpenIPMI's BMC (and
// ipmitool's peers) expect in IPMI 1.5 format and drop; the session
// handshake does not need its answer, so it is skipped. No keep-alive is
// started: the agent's sessions last one reconcile.
func (d *ipmiClient) connect(ctx context.Context) error {
	if _, err := d.c.OpenSession(ctx); err != nil {
		return fmt.Errorf("open session: %w", err)
	}
	if _, err := d.c.RAKPMessage1(ctx); err != nil {
		return fmt.Errorf("RAKP 1: %w", err)
	}
	if _, err := d.c.RAKPMessage3(ctx); err != nil {
		return fmt.Errorf("RAKP 3: %w", err)
	}
	if _, err := d.c.SetSessionPrivilegeLevel(ctx, ipmi.PrivilegeLevelAdministrator); err != nil {
		return fmt.Errorf("set session privilege: %w", err)
	}
	return nil
}

func (d *ipmiClient) control(ctx context.Context, what string, c ipmi.ChassisControl) error {
	return d.call(ctx, what, func(ctx context.Context) error {
		_, err := d.c.ChassisControl(ctx, c)
		return err
	})
}

// Power reads the chassis status: IPMI reports only on or off, never a
// change under way.
func (d *ipmiClient) Power(ctx context.Context) (PowerState, error) {
	s := PowerOff
	err := d.call(ctx, "get power", func(ctx context.Context) error {
		st, err := d.c.GetChassisStatus(ctx)
		if err != nil {
			return err
		}
		if st.PowerIsOn {
			s = PowerOn
		}
		d.health, d.healthOf = chassisHealth(st)
		return nil
	})
	return s, err
}

// Health is what the last chassis status said.
func (d *ipmiClient) Health() (Health, string) { return d.health, d.healthOf }

// chassisControls maps the commands to IPMI chassis controls: a restart
// is a power cycle.
var chassisControls = map[Command]ipmi.ChassisControl{
	CommandOn:               ipmi.ChassisControlPowerUp,
	CommandForceOff:         ipmi.ChassisControlPowerDown,
	CommandGracefulShutdown: ipmi.ChassisControlSoftShutdown,
	CommandForceRestart:     ipmi.ChassisControlPowerCycle,
}

func (d *ipmiClient) Send(ctx context.Context, cmd Command) error {
	c, ok := chassisControls[cmd]
	if !ok {
		return fmt.Errorf("%w: power command %q", ErrUnsupported, cmd)
	}
	return d.control(ctx, "power "+string(cmd), c)
}

// bootDevices maps a boot device to IPMI's boot flags selector.
var bootDevices = map[BootDevice]ipmi.BootDeviceSelector{
	BootPXE:   ipmi.BootDeviceSelectorForcePXE,
	BootDisk:  ipmi.BootDeviceSelectorForceHardDrive,
	BootCDROM: ipmi.BootDeviceSelectorForceCDROM,
}

func (d *ipmiClient) SetBootOnce(ctx context.Context, dev BootDevice) error {
	sel, ok := bootDevices[dev]
	if !ok {
		return fmt.Errorf("%w: boot device %q", ErrUnsupported, dev)
	}
	return d.call(ctx, "set boot device "+string(dev), func(ctx context.Context) error {
		return d.c.SetBootDevice(ctx, sel, ipmi.BIOSBootTypeEFI, false)
	})
}

func (d *ipmiClient) InsertMedia(context.Context, string) error {
	return fmt.Errorf("%w: virtual media needs Redfish (redfish-virtualmedia://), %s speaks %s", ErrUnsupported, d.addr.HostPort(), d.addr.Protocol)
}

func (d *ipmiClient) EjectMedia(context.Context) error { return nil } // nothing can be inserted

// Inventory is what IPMI tells of the hardware: the system's manufacturer,
// product and serial number, from the FRU inventory's product area (else
// its board area). A BMC that answers with a completion code (no FRU
// device 0) has no inventory, as one without a product or board area.
func (d *ipmiClient) Inventory(ctx context.Context) (*metal3api.HardwareDetails, error) {
	var fru *ipmi.FRU
	none := fmt.Errorf("%w: %s has no FRU inventory; the rest of the hardware needs Redfish", ErrUnsupported, d.addr.HostPort())
	err := d.call(ctx, "read FRU inventory", func(ctx context.Context) (err error) {
		fru, err = d.c.GetFRU(ctx, 0, "builtin")
		var answered *ipmi.ResponseError
		if errors.As(err, &answered) {
			return none
		}
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case !fru.Present():
		return nil, none
	}
	var v metal3api.HardwareSystemVendor
	switch p, b := fru.ProductInfoArea, fru.BoardInfoArea; {
	case p != nil:
		v = metal3api.HardwareSystemVendor{Manufacturer: text(p.Manufacturer), ProductName: text(p.Name), SerialNumber: text(p.SerialNumber)}
	case b != nil:
		v = metal3api.HardwareSystemVendor{Manufacturer: text(b.Manufacturer), ProductName: text(b.ProductName), SerialNumber: text(b.SerialNumber)}
	}
	if v.Manufacturer == "" && v.ProductName == "" {
		return nil, none
	}
	return &metal3api.HardwareDetails{SystemVendor: v}, nil
}

// text is a FRU field as text: printable ASCII, trimmed.
func text(b []byte) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return -1
		}
		return r
	}, string(b)))
}

// Firmware is the BMC's firmware revision, as Get Device ID says it
// (major.minor, as ipmitool prints it): IPMI reads no other component's.
func (d *ipmiClient) Firmware(ctx context.Context) (map[string]string, error) {
	var out map[string]string
	err := d.call(ctx, "get device id", func(ctx context.Context) error {
		r, err := d.c.GetDeviceID(ctx)
		if err != nil {
			return err
		}
		out = map[string]string{"bmc": fmt.Sprintf("%d.%02d", r.MajorFirmwareRevision, r.MinorFirmwareRevision)}
		return nil
	})
	return out, err
}

func (d *ipmiClient) Close(ctx context.Context) error {
	return d.call(ctx, "close IPMI session", d.c.Close)
}

// userChannel is "the channel this request came on" (IPMI 2.0 table
// 6-1): the LAN channel the agent's session uses.
const userChannel = 0x0e

// privNoAccess is a user's privilege limit "no access".
const privNoAccess ipmi.PrivilegeLevel = 0x0f

// ipmiUser is one user ID of the BMC and whether it is enabled.
type ipmiUser struct {
	id      uint8
	name    string
	enabled bool
}

// label is how an account is named to baselines: its user name, else
// "#<id>" (the null user, or an ID enabled without a name).
func (u ipmiUser) label() string {
	if u.name == "" {
		return fmt.Sprintf("#%d", u.id)
	}
	return u.name
}

// users reads the BMC's user table: Get User Access and Get User Name for
// each user ID. Enabled is what Set User Password last made it (IPMI 2.0
// errata 3); a BMC older than that says so by allowing IPMI messaging.
func (d *ipmiClient) users(ctx context.Context) ([]ipmiUser, error) {
	var out []ipmiUser
	err := d.call(ctx, "read BMC users", func(ctx context.Context) error {
		out = nil
		for id, last := uint8(1), uint8(1); id <= last; id++ {
			a, err := d.c.GetUserAccess(ctx, userChannel, id)
			if err != nil {
				return fmt.Errorf("user %d: %w", id, err)
			}
			last = a.MaxUsersIDCount
			u := ipmiUser{id: id, enabled: a.EnableStatus == 1 ||
				a.EnableStatus == 0 && a.IPMIMessagingEnabled && a.MaxPrivLevel != privNoAccess}
			if n, err := d.c.GetUsername(ctx, id); err == nil {
				u.name = strings.TrimRight(n.Username, "\x00")
			} else if _, answered := errors.AsType[*ipmi.ResponseError](err); !answered {
				return fmt.Errorf("user %d: %w", id, err)
			}
			out = append(out, u)
		}
		return nil
	})
	return out, err
}

// Accounts are the enabled user IDs' names.
func (d *ipmiClient) Accounts(ctx context.Context) ([]string, error) {
	users, err := d.users(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, u := range users {
		if u.enabled {
			out = append(out, u.label())
		}
	}
	return out, nil
}

// RemoveAccount disables every enabled user ID named user (Set User
// Password, operation "disable user"): IPMI cannot delete one. The
// session's own is never disabled.
func (d *ipmiClient) RemoveAccount(ctx context.Context, user string) error {
	if user == d.user {
		return fmt.Errorf("BMC account %s is the one the agent logs in with", user)
	}
	users, err := d.users(ctx)
	if err != nil {
		return err
	}
	for _, u := range users {
		if u.enabled && u.label() == user {
			if err := d.call(ctx, "disable BMC user "+user, func(ctx context.Context) error { return d.c.DisableUser(ctx, u.id) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// errLanOnly: what IPMI cannot do out of band.
func (d *ipmiClient) errLanOnly(what string) error {
	return fmt.Errorf("%w: %s needs Redfish; %s speaks IPMI", ErrUnsupported, what, d.addr.HostPort())
}

func (d *ipmiClient) BIOS(context.Context) (map[string]string, error) {
	return nil, d.errLanOnly("reading BIOS settings")
}

func (d *ipmiClient) StageBIOS(context.Context, map[string]string) error {
	return d.errLanOnly("staging BIOS settings")
}

func (d *ipmiClient) Flash(context.Context, string, string) (string, error) {
	return "", d.errLanOnly("a firmware update")
}

func (d *ipmiClient) Task(context.Context, string) (TaskState, error) {
	return TaskState{}, d.errLanOnly("an update task")
}
