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

// PowerState is the system's power as its BMC reports it. IPMI knows only
// On and Off; Redfish BMCs also report a change under way.
type PowerState string

const (
	PowerOn     PowerState = "On"
	PowerOff    PowerState = "Off"
	PoweringOn  PowerState = "PoweringOn"
	PoweringOff PowerState = "PoweringOff"
)

// Settled: the state is On or Off, not a change under way.
func (s PowerState) Settled() bool { return s == PowerOn || s == PowerOff }

// Command is one power command, named as Redfish's ResetType.
type Command string

const (
	// CommandOn powers a host on.
	CommandOn Command = "On"
	// CommandForceOff cuts the power at once.
	CommandForceOff Command = "ForceOff"
	// CommandGracefulShutdown asks the operating system to shut down (an
	// ACPI power button press); it may never do so.
	CommandGracefulShutdown Command = "GracefulShutdown"
	// CommandForceRestart resets a powered-on host at once (IPMI: power
	// cycle).
	CommandForceRestart Command = "ForceRestart"
)

// Driver is what the agent asks of a BMC. Every call is bounded by the
// context and by the driver's per-call timeout, and is logged at V(1) by
// the context's logger: action, result, duration.
type Driver interface {
	// Power reads the power state.
	Power(ctx context.Context) (PowerState, error)
	// Send sends one power command and returns once the BMC accepted it,
	// not once the power changed: read Power for that.
	Send(ctx context.Context, cmd Command) error
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
	// Observe, when set, is told of every BMC call: its action, its
	// result (Result) and how long it took.
	Observe func(action, result string, took time.Duration)
}

// Results of BMC calls, as Observe is told them.
const (
	ResultOK          = "ok"
	ResultCredentials = "credentials"
	ResultUnreachable = "unreachable"
	ResultTimeout     = "timeout"
	ResultError       = "error"
)

// Result names the outcome of a BMC call that returned err.
func Result(err error) string {
	switch {
	case err == nil:
		return ResultOK
	case errors.Is(err, ErrCredentials):
		return ResultCredentials
	case errors.Is(err, context.DeadlineExceeded):
		return ResultTimeout
	case errors.Is(err, ErrUnreachable):
		return ResultUnreachable
	default:
		return ResultError
	}
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

// Open connects to the BMC at addr with the given credentials; Observe
// is told of it as action "open session".
func Open(ctx context.Context, addr Address, user, pass string, o Options) (Driver, error) {
	start := time.Now()
	d, err := open(ctx, addr, user, pass, o)
	if o.Observe != nil {
		o.Observe("open session", Result(err), time.Since(start))
	}
	return d, err
}

func open(ctx context.Context, addr Address, user, pass string, o Options) (Driver, error) {
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
			return openIPMI(ctx, addr, user, pass, bmcCall{addr: addr, timeout: o.Timeout, observe: o.Observe})
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
		return openRedfish(ctx, addr, user, pass, o)
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
	return &client{c: c, bmcCall: bmcCall{addr: addr, timeout: o.Timeout, observe: o.Observe}}, nil
}

// openRedfish reads the system, with basic authentication on a connection
// kept for the BMC: no Redfish session to create and delete, no new TLS
// handshake for each request (bmclib's gofish provider asks to close the
// connection after each, about 40 for an inspection and a provisioning).
func openRedfish(ctx context.Context, addr Address, user, pass string, o Options) (Driver, error) {
	rf := newRedfishSystem(addr, user, pass, o.InsecureSkipVerify)
	octx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if err := rf.open(octx); err != nil {
		return nil, classify(fmt.Errorf("open %s: %w", addr.HostPort(), err))
	}
	return &client{rf: rf, bmcCall: bmcCall{addr: addr, timeout: o.Timeout, observe: o.Observe}}, nil
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

// client is a session with one BMC: Redfish (rf), or IPMI through
// bmclib's ipmitool provider (c).
type client struct {
	c  *bmclib.Client
	rf *redfishSystem
	bmcCall
}

// bmcCall bounds each call to a BMC and says which call failed where.
type bmcCall struct {
	addr    Address
	timeout time.Duration
	observe func(action, result string, took time.Duration)
}

// call runs one BMC call under the per-call timeout, says which call failed
// where, and logs it at V(1).
func (b bmcCall) call(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	err := fn(cctx)
	if err != nil {
		err = classify(fmt.Errorf("%s on %s: %w", what, b.addr.HostPort(), err))
	}
	if b.observe != nil {
		result := Result(err)
		if err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
			result = ResultTimeout // the BMC did not answer within the bound
		}
		b.observe(what, result, time.Since(start))
	}
	if log := logr.FromContextOrDiscard(ctx).V(1); log.Enabled() {
		result := "ok"
		if err != nil {
			result = err.Error()
		}
		log.Info("BMC call", "bmc", string(b.addr.Protocol)+"://"+b.addr.HostPort(), "action", what, "result", result,
			"duration", time.Since(start).Round(time.Millisecond).String())
	}
	return err
}

// ParsePowerState normalises a provider's power state: "On", "on" and
// "Chassis Power is on\n" are On; "PoweringOn" and "powering on" are
// PoweringOn; likewise for off.
func ParsePowerState(s string) (PowerState, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	v = strings.TrimPrefix(v, "chassis power is ")
	switch strings.ReplaceAll(v, " ", "") {
	case "on":
		return PowerOn, nil
	case "off":
		return PowerOff, nil
	case "poweringon":
		return PoweringOn, nil
	case "poweringoff":
		return PoweringOff, nil
	}
	return "", fmt.Errorf("unknown power state %q", s)
}

// Power reads the system's PowerState itself on Redfish (bmclib reads every
// system of the service), through bmclib on ipmitool.
func (d *client) Power(ctx context.Context) (PowerState, error) {
	var s PowerState
	err := d.call(ctx, "get power", func(ctx context.Context) error {
		var raw string
		var err error
		if d.rf != nil {
			raw, err = d.rf.powerState(ctx)
		} else {
			raw, err = d.c.GetPowerState(ctx)
		}
		if err != nil {
			return err
		}
		s, err = ParsePowerState(raw)
		return err
	})
	return s, err
}

// Health is what the last power read said of the system's health, on
// Redfish; ipmitool's answers say nothing of it.
func (d *client) Health() (Health, string) {
	if d.rf == nil {
		return HealthUnknown, ""
	}
	return d.rf.health, d.rf.healthOf
}

// ipmitoolActions are bmclib's ipmitool provider's names for the commands.
var ipmitoolActions = map[Command]string{
	CommandOn: "on", CommandForceOff: "off", CommandGracefulShutdown: "soft", CommandForceRestart: "cycle",
}

// Send posts the one Reset action on Redfish: bmclib's power calls read
// every system first, skip or repeat commands ("reset" falls back to a
// soft off, a wait and an on) and have no way to say which ResetType.
func (d *client) Send(ctx context.Context, cmd Command) error {
	return d.call(ctx, "power "+string(cmd), func(ctx context.Context) error {
		if d.rf != nil {
			return d.rf.reset(ctx, cmd)
		}
		action, ok := ipmitoolActions[cmd]
		if !ok {
			return fmt.Errorf("%w: power command %q", ErrUnsupported, cmd)
		}
		_, err := d.c.SetPowerState(ctx, action)
		return err
	})
}

func (d *client) SetBootOnce(ctx context.Context, dev BootDevice) error {
	return d.call(ctx, "set boot device "+string(dev), func(ctx context.Context) error {
		if d.rf != nil {
			return d.rf.setBootOnce(ctx, dev)
		}
		_, err := d.c.SetBootDevice(ctx, string(dev), false, true)
		return err
	})
}

func (d *client) InsertMedia(ctx context.Context, url string) error {
	if d.rf == nil {
		return fmt.Errorf("%w: virtual media needs Redfish (redfish-virtualmedia://), %s speaks %s", ErrUnsupported, d.addr.HostPort(), d.addr.Protocol)
	}
	return d.call(ctx, "insert virtual media", func(ctx context.Context) error { return d.rf.insertMedia(ctx, url) })
}

func (d *client) EjectMedia(ctx context.Context) error {
	if d.rf == nil {
		return nil // nothing can be inserted
	}
	return d.call(ctx, "eject virtual media", d.rf.ejectMedia)
}

// Close ends the ipmitool session; a Redfish one has nothing to end (its
// connection is kept for the next).
func (d *client) Close(ctx context.Context) error {
	if d.c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.c.Close(ctx)
}
