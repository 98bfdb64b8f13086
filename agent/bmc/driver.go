package bmc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"time"

	bmclib "github.com/bmc-toolbox/bmclib/v2"
	"github.com/go-logr/logr"
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
)

// BootDevice is a one-time boot device.
type BootDevice string

const (
	BootPXE   BootDevice = "pxe"
	BootDisk  BootDevice = "disk"
	BootCDROM BootDevice = "cdrom"
)

// Driver is what the agent asks of a BMC. Every call is bounded by the
// context and by the driver's per-call timeout.
type Driver interface {
	// Power says whether the host is powered on.
	Power(ctx context.Context) (bool, error)
	// SetPower powers the host on or off (hard: immediately; otherwise
	// an ACPI shutdown).
	SetPower(ctx context.Context, on, hard bool) error
	// Reboot restarts a powered-on host, or powers on one that is off.
	Reboot(ctx context.Context, hard bool) error
	// SetBootOnce makes the next boot, only, from dev.
	SetBootOnce(ctx context.Context, dev BootDevice) error
	// InsertMedia attaches an ISO image as a virtual CD (the BMC fetches
	// url); EjectMedia detaches it. Redfish only.
	InsertMedia(ctx context.Context, url string) error
	EjectMedia(ctx context.Context) error
	// Inventory reads the hardware.
	Inventory(ctx context.Context) (*metal3api.HardwareDetails, error)
	// Close ends the session.
	Close(ctx context.Context) error
}

// Options tune how a BMC is reached.
type Options struct {
	// Timeout bounds each call (default 30s).
	Timeout time.Duration
	// InsecureSkipVerify skips TLS verification (the BMH's
	// disableCertificateVerification).
	InsecureSkipVerify bool
	// IpmitoolPath, when set, drives ipmi:// BMCs through that ipmitool
	// binary (bmclib's provider) instead of the native IPMI client.
	IpmitoolPath string
	// Logger receives bmclib's logs.
	Logger logr.Logger
}

// Kinds of failure a caller treats differently.
var (
	// ErrCredentials: the BMC refused the username or password.
	ErrCredentials = errors.New("the BMC refused the credentials")
	// ErrUnreachable: the BMC did not answer.
	ErrUnreachable = errors.New("the BMC is unreachable")
	// ErrUnsupported: the BMC or its protocol cannot do this.
	ErrUnsupported = errors.New("not supported by this BMC")
)

// Open connects to the BMC at addr with the given credentials.
func Open(ctx context.Context, addr Address, user, pass string, o Options) (Driver, error) {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	opts := []bmclib.Option{bmclib.WithLogger(o.Logger), bmclib.WithPerProviderTimeout(o.Timeout)}
	host := addr.Host
	var provider string
	switch addr.Protocol {
	case IPMI:
		port := addr.Port
		if port == "" {
			port = "623"
		}
		// A BMC that is gone and one that refuses the password look the
		// same to a session (ipmitool waits 20 s): ask first whether
		// anything answers.
		if err := Ping(ctx, addr.HostPort()); err != nil {
			return nil, fmt.Errorf("%w: no IPMI answer from %s: %v", ErrUnreachable, addr.HostPort(), err)
		}
		if o.IpmitoolPath == "" {
			return openIPMI(ctx, addr, user, pass, o.Timeout)
		}
		path, err := exec.LookPath(o.IpmitoolPath)
		if err != nil {
			// bmclib would silently drop its ipmitool provider.
			return nil, fmt.Errorf("%w: --ipmitool %s: %v", ErrUnsupported, o.IpmitoolPath, err)
		}
		// Cipher suite 3 (RAKP-HMAC-SHA1): what ipmi_sim and most BMCs speak.
		opts = append(opts, bmclib.WithIpmitoolPath(path), bmclib.WithIpmitoolPort(port), bmclib.WithIpmitoolCipherSuite("3"))
		provider = "ipmitool"
	case Redfish:
		if addr.HTTP {
			host = "http://" + host // the provider speaks HTTPS unless told
		}
		if addr.Port != "" {
			opts = append(opts, bmclib.WithRedfishPort(addr.Port))
		}
		if !o.InsecureSkipVerify {
			opts = append(opts, bmclib.WithSecureTLS(nil)) // the system's roots
		}
		provider = "gofish"
	default:
		return nil, fmt.Errorf("%w: protocol %q", ErrUnsupported, addr.Protocol)
	}
	c := bmclib.NewClient(host, user, pass, opts...)
	c.Registry.Drivers = c.Registry.For(provider)
	if len(c.Registry.Drivers) == 0 {
		return nil, fmt.Errorf("%w: bmclib has no %s provider", ErrUnsupported, provider)
	}
	octx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if err := c.Open(octx); err != nil {
		if addr.Protocol == IPMI && strings.Contains(err.Error(), "Unable to establish IPMI v2 / RMCP+ session") {
			// It answered the ping: the session was refused.
			return nil, fmt.Errorf("%w: %s answers but refused the IPMI session: %v", ErrCredentials, addr.HostPort(), err)
		}
		return nil, classify(fmt.Errorf("open %s: %w", addr.HostPort(), err))
	}
	d := &client{c: c, bmcCall: bmcCall{addr: addr, timeout: o.Timeout}, log: o.Logger}
	if addr.Protocol == Redfish {
		d.rf = newRedfishReader(addr, user, pass, o.InsecureSkipVerify)
	}
	return d, nil
}

// status401 finds an HTTP 401 in an error, not a port or address that
// happens to contain 401.
var status401 = regexp.MustCompile(`(^|[^0-9:.])401([^0-9]|$)`)

// classify wraps err with ErrCredentials or ErrUnreachable when it is one.
func classify(err error) error {
	if err == nil || errors.Is(err, ErrCredentials) || errors.Is(err, ErrUnreachable) {
		return err
	}
	msg := strings.ToLower(err.Error())
	var ne net.Error
	switch {
	case status401.MatchString(msg) || strings.Contains(msg, "unauthorized") ||
		strings.Contains(msg, "invalid username or password") || strings.Contains(msg, "rakp 2 hmac is invalid") ||
		strings.Contains(msg, "unauthorized name") || strings.Contains(msg, "invalid user name"):
		return fmt.Errorf("%w: %v", ErrCredentials, err)
	case errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(msg, "connection refused") || strings.Contains(msg, "eof") ||
		strings.Contains(msg, "timeout") || strings.Contains(msg, "no route to host") ||
		strings.Contains(msg, "connection reset"):
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	return err
}

type client struct {
	c *bmclib.Client
	// rf reads what bmclib's Redfish inventory leaves out.
	rf  *redfishReader
	log logr.Logger
	bmcCall
}

// bmcCall bounds each call to a BMC and says which call failed where.
type bmcCall struct {
	addr    Address
	timeout time.Duration
}

func (b bmcCall) call(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	if err := fn(ctx); err != nil {
		return classify(fmt.Errorf("%s on %s: %w", what, b.addr.HostPort(), err))
	}
	return nil
}

// PowerState normalises a provider's power state: "on", "On", "Chassis
// Power is on\n" are on; "off", "Off", "Chassis Power is off" are off.
func PowerState(s string) (on bool, err error) {
	v := strings.ToLower(strings.TrimSpace(s))
	v = strings.TrimPrefix(v, "chassis power is ")
	switch v {
	case "on", "poweringon", "powering on":
		return true, nil
	case "off", "poweringoff", "powering off":
		return false, nil
	}
	return false, fmt.Errorf("unknown power state %q", s)
}

func (d *client) Power(ctx context.Context) (bool, error) {
	var on bool
	err := d.call(ctx, "get power", func(ctx context.Context) error {
		s, err := d.c.GetPowerState(ctx)
		if err != nil {
			return err
		}
		on, err = PowerState(s)
		return err
	})
	return on, err
}

func (d *client) SetPower(ctx context.Context, on, hard bool) error {
	state := "off"
	switch {
	case on:
		state = "on"
	case !hard:
		state = "soft"
	}
	return d.call(ctx, "power "+state, func(ctx context.Context) error {
		_, err := d.c.SetPowerState(ctx, state)
		return err
	})
}

func (d *client) Reboot(ctx context.Context, hard bool) error {
	on, err := d.Power(ctx)
	if err != nil {
		return err
	}
	if !on {
		// Power cycling a powered-off host fails on most BMCs: power on.
		return d.SetPower(ctx, true, hard)
	}
	state := "cycle"
	if !hard && d.addr.Protocol == IPMI {
		state = "reset"
	}
	return d.call(ctx, "reboot", func(ctx context.Context) error {
		_, err := d.c.SetPowerState(ctx, state)
		return err
	})
}

func (d *client) SetBootOnce(ctx context.Context, dev BootDevice) error {
	return d.call(ctx, "set boot device "+string(dev), func(ctx context.Context) error {
		_, err := d.c.SetBootDevice(ctx, string(dev), false, true)
		return err
	})
}

func (d *client) InsertMedia(ctx context.Context, url string) error {
	if d.addr.Protocol != Redfish {
		return fmt.Errorf("%w: virtual media needs Redfish (redfish-virtualmedia://), %s speaks %s", ErrUnsupported, d.addr.HostPort(), d.addr.Protocol)
	}
	return d.call(ctx, "insert virtual media", func(ctx context.Context) error {
		_, err := d.c.SetVirtualMedia(ctx, "CD", url)
		return err
	})
}

func (d *client) EjectMedia(ctx context.Context) error {
	if d.addr.Protocol != Redfish {
		return nil // nothing can be inserted
	}
	return d.call(ctx, "eject virtual media", func(ctx context.Context) error {
		_, err := d.c.SetVirtualMedia(ctx, "CD", "")
		return err
	})
}

func (d *client) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.c.Close(ctx)
}
