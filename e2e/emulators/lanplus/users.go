package lanplus

import "bytes"

// maxUsers is how many user IDs the BMC has, user 1 (the null user)
// included: ten, as many BMCs.
const maxUsers = 10

// Commands of the BMC's user table (IPMI 2.0 section 22.26 to 22.30).
const (
	cmdSetUserAccess   = 0x43
	cmdGetUserAccess   = 0x44
	cmdSetUserName     = 0x45
	cmdGetUserName     = 0x46
	cmdSetUserPassword = 0x47
	privNoAccess       = 0x0f
)

// User is one user ID of the BMC: its name, its password, whether it is
// enabled, its privilege limit (2 user, 3 operator, 4 administrator).
type User struct {
	ID             int
	Name, Password string
	Enabled        bool
	Privilege      byte
}

// SetUserInBand writes user ID id (2 to 10) from the host's operating
// system over KCS, as a tenant with root would (`ipmitool user set name`,
// `user set password`, `user enable`, `user priv`): no session, no
// password asked.
func (b *BMC) SetUserInBand(u User) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if u.ID < 2 || u.ID > maxUsers {
		panic("lanplus: user IDs 2 to 10 can be set")
	}
	b.users[u.ID] = u
}

// Users are the BMC's user IDs that have a name.
func (b *BMC) Users() []User {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []User
	for _, u := range b.users[1:] {
		if u.Name != "" {
			out = append(out, u)
		}
	}
	return out
}

// login is the enabled user a session names, or nil.
func (b *BMC) login(name []byte) *User {
	for i := 2; i <= maxUsers; i++ {
		if u := &b.users[i]; u.Enabled && u.Name != "" && u.Name == string(name) && u.Privilege != privNoAccess {
			return u
		}
	}
	return nil
}

// userCommand carries out a user table command, or says it is none.
func (b *BMC) userCommand(s *session, m *message) (cc byte, data []byte, ok bool) {
	if m.netFn != netFnApp {
		return 0, nil, false
	}
	switch m.cmd {
	case cmdGetUserAccess:
		cc, data = b.userAccess(m.data)
	case cmdGetUserName:
		if len(m.data) < 1 || b.userID(m.data[0]) == 0 {
			return ccInvalidField, nil, true
		}
		name := make([]byte, 16)
		copy(name, b.users[b.userID(m.data[0])].Name)
		cc, data = ccOK, name
	case cmdSetUserAccess, cmdSetUserName, cmdSetUserPassword:
		if s.priv < privAdministrator {
			return ccInsufficientPriv, nil, true
		}
		cc, data = b.setUser(m.cmd, m.data)
	default:
		return 0, nil, false
	}
	return cc, data, true
}

// userID is the user ID a request's byte names, or 0 for none.
func (b *BMC) userID(p byte) int {
	if id := int(p & 0x3f); id >= 1 && id <= maxUsers {
		return id
	}
	return 0
}

// userAccess is Get User Access: the channel's user count, the user's
// enable status (IPMI 2.0 errata 3: enabled or disabled by Set User
// Password) and its privilege limit.
func (b *BMC) userAccess(d []byte) (byte, []byte) {
	if len(d) < 2 || b.userID(d[1]) == 0 {
		return ccInvalidField, nil
	}
	enabled := 0
	for _, u := range b.users[1:] {
		if u.Enabled {
			enabled++
		}
	}
	u := b.users[b.userID(d[1])]
	status, access := byte(0x80), byte(privNoAccess)
	if u.Enabled {
		status = 0x40
	}
	if u.Privilege != 0 {
		access = u.Privilege
	}
	if u.Enabled && access != privNoAccess {
		access |= 0x10 // IPMI messaging
	}
	return ccOK, []byte{maxUsers, status | byte(enabled), 1, access}
}

// setUser is Set User Access, Set User Name or Set User Password
// (disable, enable, set, test).
func (b *BMC) setUser(cmd byte, d []byte) (byte, []byte) {
	idAt := 0
	if cmd == cmdSetUserAccess {
		idAt = 1
	}
	if len(d) < idAt+2 || b.userID(d[idAt]) < 2 {
		return ccInvalidField, nil
	}
	u := &b.users[b.userID(d[idAt])]
	u.ID = b.userID(d[idAt])
	switch cmd {
	case cmdSetUserAccess:
		u.Privilege = d[2] & 0x0f
	case cmdSetUserName:
		if len(d) < 17 {
			return ccInvalidField, nil
		}
		u.Name = string(bytes.TrimRight(d[1:17], "\x00"))
	case cmdSetUserPassword:
		switch op, size := d[1]&3, 16; op {
		case 0:
			u.Enabled = false
		case 1:
			u.Enabled = true
		default:
			if d[0]&0x80 != 0 {
				size = 20
			}
			if len(d) < 2+size {
				return ccInvalidField, nil
			}
			pw := string(bytes.TrimRight(d[2:2+size], "\x00"))
			if op == 2 {
				u.Password = pw
			} else if pw != u.Password {
				return 0x80, nil // password test failed
			}
		}
	}
	return ccOK, nil
}
