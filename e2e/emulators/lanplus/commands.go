package lanplus

import "time"

// Network functions and commands the BMC answers.
const (
	netFnChassis = 0x00
	netFnApp     = 0x06
	netFnStorage = 0x0a

	cmdGetChassisStatus   = 0x01
	cmdChassisControl     = 0x02
	cmdSetBootOptions     = 0x08
	cmdGetDeviceID        = 0x01
	cmdGetAuthCaps        = 0x38
	cmdSetSessionPriv     = 0x3b
	cmdCloseSession       = 0x3c
	cmdGetFRUAreaInfo     = 0x10
	bmcAddress            = 0x20
	ccOK                  = 0x00
	ccInvalidCommand      = 0xc1
	ccInvalidField        = 0xcc
	ccNotPresent          = 0xcb
	ccInsufficientPriv    = 0xd4
	ccPrivilegeNotAllowed = 0x81
	privOperator          = 3
	privAdministrator     = 4
)

// message is one IPMI request.
type message struct {
	netFn, cmd, rqAddr, rqSeqLUN, rsLUN byte
	data                                []byte
}

func checksum(p []byte) byte {
	var s byte
	for _, c := range p {
		s += c
	}
	return -s
}

// parseMessage reads an IPMI LAN request, its two checksums checked.
func parseMessage(p []byte) (*message, bool) {
	if len(p) < 7 || checksum(p[:2]) != p[2] || checksum(p[3:len(p)-1]) != p[len(p)-1] {
		return nil, false
	}
	return &message{netFn: p[1] >> 2, rsLUN: p[1] & 3, rqAddr: p[3], rqSeqLUN: p[4], cmd: p[5], data: p[6 : len(p)-1]}, true
}

// reply is the response message to m.
func (m *message) reply(cc byte, data []byte) []byte {
	out := []byte{m.rqAddr, (m.netFn|1)<<2 | m.rqSeqLUN&3, 0, bmcAddress, m.rqSeqLUN&^3 | m.rsLUN, m.cmd, cc}
	out[2] = checksum(out[:2])
	out = append(out, data...)
	return append(out, checksum(out[3:]))
}

// authCaps is Get Channel Authentication Capabilities: IPMI 2.0, user
// names required.
func authCaps() []byte { return []byte{0x01, 0x80, 0x04, 0x02, 0, 0, 0, 0} }

// ipmi15 answers the one request a console sends outside any session in
// IPMI 1.5 format: Get Channel Authentication Capabilities.
func (b *BMC) ipmi15(p []byte) []byte {
	if len(p) < 14 || p[4] != 0 || le32(p[9:13]) != 0 || len(p) < 14+int(p[13]) {
		return nil
	}
	m, ok := parseMessage(p[14 : 14+int(p[13])])
	if !ok || m.netFn != netFnApp || m.cmd != cmdGetAuthCaps {
		return nil
	}
	msg := m.reply(ccOK, authCaps())
	return append([]byte{rmcpVersion, 0, 0xff, classIPMI, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(len(msg))}, msg...)
}

// command carries out one request in a session: its completion code and
// response data.
func (b *BMC) command(s *session, m *message) (byte, []byte) {
	if cc, data, ok := b.userCommand(s, m); ok {
		return cc, data
	}
	switch int(m.netFn)<<8 | int(m.cmd) {
	case netFnApp<<8 | cmdGetDeviceID:
		major, minor := b.firmware[0], b.firmware[1]
		return ccOK, []byte{0x20, 0x01, byte(major & 0x7f), byte(minor/10<<4 | minor%10), 0x02, 0x80, 0, 0, 0, 0, 0}
	case netFnApp<<8 | cmdGetAuthCaps:
		return ccOK, authCaps()
	case netFnApp<<8 | cmdSetSessionPriv:
		return s.setPrivilege(m.data, b.users[s.uid].Privilege)
	case netFnApp<<8 | cmdCloseSession:
		if len(m.data) < 4 || b.sessions[le32(m.data)] == nil {
			return 0x87, nil // invalid session ID
		}
		delete(b.sessions, le32(m.data))
		return ccOK, nil
	case netFnChassis<<8 | cmdGetChassisStatus:
		return ccOK, b.chassisStatus()
	case netFnChassis<<8 | cmdChassisControl:
		if s.priv < privOperator {
			return ccInsufficientPriv, nil
		}
		return b.control(m.data)
	case netFnChassis<<8 | cmdSetBootOptions:
		if s.priv < privOperator {
			return ccInsufficientPriv, nil
		}
		return b.bootOptions(m.data)
	case netFnStorage<<8 | cmdGetFRUAreaInfo:
		return ccNotPresent, nil // no FRU inventory
	}
	return ccInvalidCommand, nil
}

// setPrivilege raises the session to what it asks, within its RAKP role
// and its user's limit.
func (s *session) setPrivilege(d []byte, limit byte) (byte, []byte) {
	if len(d) < 1 {
		return ccInvalidField, nil
	}
	switch want := d[0] & 0x0f; {
	case want == 0:
	case want > privAdministrator || want < 2:
		return ccInvalidField, nil
	case want > s.role&0x0f && s.role&0x0f != 0, want > limit:
		return ccPrivilegeNotAllowed, nil
	default:
		s.priv = want
	}
	return ccOK, []byte{s.priv}
}

// chassisStatus is Get Chassis Status: power and faults, the power restore
// policy "previous", the last power-on by command.
func (b *BMC) chassisStatus() []byte {
	f := b.faults
	bit := func(on bool, v byte) byte {
		if on {
			return v
		}
		return 0
	}
	power := bit(b.power, 0x01) | bit(f.PowerOverload, 0x02) | bit(f.Interlock, 0x04) | bit(f.PowerFault, 0x08) | bit(f.PowerControlFault, 0x10) | 0x20
	return []byte{power, bit(b.power, 0x10), bit(f.DriveFault, 0x04) | bit(f.CoolingFault, 0x08), 0}
}

// control is Chassis Control: the chassis obeys at once, a soft shutdown
// included (its operating system obeys the power button).
func (b *BMC) control(d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccInvalidField, nil
	}
	what, on := map[byte]string{0: "power down", 1: "power up", 2: "power cycle", 3: "hard reset", 5: "soft shutdown"}[d[0]&0x0f], b.power
	switch d[0] & 0x0f {
	case 0, 5:
		on = false
	case 1, 2:
		on = true
	case 3:
	default:
		return ccInvalidField, nil
	}
	b.power = on
	b.log = append(b.log, Event{At: time.Now(), What: what})
	return ccOK, nil
}

// bootDevices names the boot flags' device selectors.
var bootDevices = map[byte]string{0: "", 1: "pxe", 2: "disk", 3: "safe", 4: "diag", 5: "cdrom", 6: "bios", 0x0f: "floppy"}

// bootOptions is Set System Boot Options: the boot flags (parameter 5)
// set the boot device; other parameters are accepted and forgotten.
func (b *BMC) bootOptions(d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccInvalidField, nil
	}
	if d[0]&0x7f == 5 {
		if len(d) < 3 {
			return ccInvalidField, nil
		}
		b.boot = bootDevices[(d[2]>>2)&0x0f]
	}
	return ccOK, nil
}
