// Package lanplus is an IPMI 2.0 BMC emulator for tests: RMCP+ on UDP
// 127.0.0.1, cipher suite 3 (RAKP-HMAC-SHA1, HMAC-SHA1-96, AES-CBC-128),
// written from the IPMI 2.0 specification, with the chassis commands a BMC
// driver uses (status, control, boot device). Unlike OpenIPMI's ipmi_sim
// (package ipmisim), its chassis can fault: a power fault, a power control
// fault, an overload, an interlock, a cooling or drive fault, as Get Chassis
// Status reports them; it can stop answering; a tenant can flash its
// firmware in-band (Get Device ID reads the new revision) and add users to
// its user table (Get and Set User Access, Name and Password). State is in
// memory.
//
// It is test infrastructure: nothing in the shipped binaries imports it.
package lanplus

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Faults are the chassis status fault bits.
type Faults struct {
	// Critical to a BMC driver: the chassis' current power state byte.
	PowerOverload, Interlock, PowerFault, PowerControlFault bool
	// Warnings: its misc chassis state byte.
	DriveFault, CoolingFault bool
}

// BMC is one emulated BMC and the UDP socket it answers on.
type BMC struct {
	// Username and Password are user 2, the administrator it starts with;
	// a tenant may add others in-band (SetUserInBand).
	Username, Password string

	conn *net.UDPConn
	done chan struct{}

	mu       sync.Mutex
	power    bool
	boot     string
	faults   Faults
	down     bool
	log      []Event
	sessions map[uint32]*session
	next     uint32
	// firmware is the BMC's firmware revision: major, and minor as
	// decimal digits (Get Device ID sends it in BCD).
	firmware [2]int
	// users are its user IDs, 1 to maxUsers (0 unused).
	users [maxUsers + 1]User
}

// Event is one chassis control the BMC carried out.
type Event struct {
	At time.Time
	// What: "power up", "power down", "power cycle", "hard reset", "soft
	// shutdown".
	What string
}

// Start serves a BMC on a free UDP port of 127.0.0.1, its chassis off.
func Start(username, password string) (*BMC, error) {
	if username == "" || len(username) > 16 || len(password) > 20 {
		return nil, errors.New("lanplus: a user name of 1 to 16 bytes and a password of at most 20")
	}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("lanplus: %w", err)
	}
	b := &BMC{Username: username, Password: password, conn: conn, done: make(chan struct{}), sessions: map[uint32]*session{}, next: 0x1000,
		firmware: [2]int{1, 0}}
	b.users[1] = User{ID: 1}
	b.users[2] = User{ID: 2, Name: username, Password: password, Enabled: true, Privilege: privAdministrator}
	go b.serve()
	return b, nil
}

// FlashInBand writes the BMC's firmware from the host's operating system,
// as a tenant with root and the vendor's tool would: Get Device ID reads
// major.minor (minor 0 to 99) from then on.
func (b *BMC) FlashInBand(major, minor int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.firmware = [2]int{major, minor}
}

// Address is 127.0.0.1:port.
func (b *BMC) Address() string { return b.conn.LocalAddr().String() }

// Close stops the BMC.
func (b *BMC) Close() {
	_ = b.conn.Close()
	<-b.done
}

// Power says whether the chassis is on.
func (b *BMC) Power() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.power
}

// Boot is the boot device last set ("pxe", "disk", "cdrom", ...), or "".
func (b *BMC) Boot() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.boot
}

// SetFaults sets the chassis faults Get Chassis Status reports.
func (b *BMC) SetFaults(f Faults) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = f
}

// SetDown makes the BMC drop every packet without answering (true), or
// answer again (false).
func (b *BMC) SetDown(down bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = down
}

// Log is the chassis controls carried out, in order.
func (b *BMC) Log() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Event(nil), b.log...)
}

// serve answers each datagram in turn: a BMC is slow, not concurrent.
func (b *BMC) serve() {
	defer close(b.done)
	buf := make([]byte, 1024)
	for {
		n, from, err := b.conn.ReadFromUDP(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		b.mu.Lock()
		var out []byte
		if !b.down {
			out = b.packet(buf[:n])
		}
		b.mu.Unlock()
		if out != nil {
			_, _ = b.conn.WriteToUDP(out, from)
		}
	}
}

// packet is the answer to one RMCP datagram, or nil to drop it.
func (b *BMC) packet(p []byte) []byte {
	if len(p) < 5 || p[0] != rmcpVersion {
		return nil
	}
	switch p[3] {
	case classASF:
		return pong(p)
	case classIPMI:
		if p[4] == authRMCPPlus {
			return b.rmcpPlus(p)
		}
		return b.ipmi15(p)
	}
	return nil
}
