package lanplus

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1" // RAKP-HMAC-SHA1 and HMAC-SHA1-96: cipher suite 3
	"encoding/binary"
	"time"
)

const (
	rmcpVersion  = 0x06
	classASF     = 0x06
	classIPMI    = 0x07
	authRMCPPlus = 0x06

	payloadIPMI        = 0x00
	payloadOpenRequest = 0x10
	payloadOpenReply   = 0x11
	payloadRAKP1       = 0x12
	payloadRAKP2       = 0x13
	payloadRAKP3       = 0x14
	payloadRAKP4       = 0x15

	// RMCP+ status codes.
	statusOK                = 0x00
	statusInvalidSession    = 0x02
	statusUnauthorizedName  = 0x0d
	statusInvalidICV        = 0x0f
	statusNoCipherSuite     = 0x11
	statusIllegalParameters = 0x12

	// sessionIdle is how long an unused session lives: clients that never
	// close theirs do not exhaust the BMC.
	sessionIdle = time.Minute
)

// session is one RMCP+ session: its ids, the RAKP exchange and the keys
// it derives.
type session struct {
	console, id uint32
	role        byte // RAKP 1's requested role, the whole byte
	user        []byte
	uid         int // the user ID it logged in as
	rc, rm      [16]byte
	guid        [16]byte
	k1, k2      []byte
	active      bool
	priv        byte // the session's privilege level (user 2, operator 3, admin 4)
	out         uint32
	used        time.Time
}

func le32(p []byte) uint32 { return binary.LittleEndian.Uint32(p) }

func put32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func mac(key []byte, parts ...[]byte) []byte {
	h := hmac.New(sha1.New, key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// kuid is the session user's key: its password, zero-padded to 20 bytes.
func (b *BMC) kuid(s *session) []byte {
	k := make([]byte, 20)
	copy(k, b.users[s.uid].Password)
	return k
}

// pong answers an ASF presence ping: IPMI supported.
func pong(p []byte) []byte {
	if len(p) < 12 || le32(p[4:8]) != binary.LittleEndian.Uint32([]byte{0, 0, 0x11, 0xbe}) || p[8] != 0x80 {
		return nil
	}
	return []byte{rmcpVersion, 0, 0xff, classASF, 0, 0, 0x11, 0xbe, 0x40, p[9], 0, 0x10,
		0, 0, 0x11, 0xbe, 0, 0, 0, 0, 0x81, 0, 0, 0, 0, 0, 0, 0}
}

// setup wraps a session setup payload (no session yet: id 0, clear).
func setup(kind byte, payload []byte) []byte {
	out := []byte{rmcpVersion, 0, 0xff, classIPMI, authRMCPPlus, kind, 0, 0, 0, 0, 0, 0, 0, 0}
	out = binary.LittleEndian.AppendUint16(out, uint16(len(payload)))
	return append(out, payload...)
}

func (b *BMC) rmcpPlus(p []byte) []byte {
	if len(p) < 16 {
		return nil
	}
	kind, id, n := p[5], le32(p[6:10]), int(binary.LittleEndian.Uint16(p[14:16]))
	if len(p) < 16+n {
		return nil
	}
	payload := p[16 : 16+n]
	switch kind & 0x3f {
	case payloadOpenRequest:
		return b.open(payload)
	case payloadRAKP1:
		return b.rakp1(payload)
	case payloadRAKP3:
		return b.rakp3(payload)
	case payloadIPMI:
		s := b.sessions[id]
		if s == nil || !s.active || kind&0xc0 != 0xc0 {
			return nil // only encrypted, authenticated messages in a session
		}
		return b.inSession(s, p, n)
	}
	return nil
}

// open answers an Open Session Request: cipher suite 3 only.
func (b *BMC) open(q []byte) []byte {
	if len(q) < 32 {
		return nil
	}
	tag, console := q[0], le32(q[4:8])
	reply := func(status, priv byte, rest ...byte) []byte {
		return setup(payloadOpenReply, append([]byte{tag, status, priv, 0, q[4], q[5], q[6], q[7]}, rest...))
	}
	if q[8] != 0 || q[12] != 1 || q[16] != 1 || q[20] != 1 || q[24] != 2 || q[28] != 1 {
		return reply(statusNoCipherSuite, 0)
	}
	b.expire()
	b.next++
	s := &session{console: console, id: b.next, used: time.Now()}
	b.sessions[s.id] = s
	out := append([]byte{}, put32(s.id)...)
	out = append(out, 0, 0, 0, 8, 1, 0, 0, 0, 1, 0, 0, 8, 1, 0, 0, 0, 2, 0, 0, 8, 1, 0, 0, 0)
	return reply(statusOK, 4, out...) // up to administrator
}

func (b *BMC) expire() {
	for id, s := range b.sessions {
		if time.Since(s.used) > sessionIdle {
			delete(b.sessions, id)
		}
	}
}

// rakp1 answers RAKP 1 with RAKP 2: the BMC's random number and GUID, and
// a key exchange code only the password's holder can check.
func (b *BMC) rakp1(q []byte) []byte {
	if len(q) < 28 || len(q) < 28+int(q[27]) {
		return nil
	}
	tag, s := q[0], b.sessions[le32(q[4:8])]
	if s == nil {
		return setup(payloadRAKP2, []byte{tag, statusInvalidSession, 0, 0, 0, 0, 0, 0})
	}
	copy(s.rc[:], q[8:24])
	s.role, s.user = q[24], append([]byte(nil), q[28:28+int(q[27])]...)
	head := append([]byte{tag, 0, 0, 0}, put32(s.console)...)
	u := b.login(s.user)
	if u == nil {
		head[1] = statusUnauthorizedName
		return setup(payloadRAKP2, head)
	}
	s.uid = u.ID
	if s.role&0x0f > 4 {
		head[1] = statusIllegalParameters
		return setup(payloadRAKP2, head)
	}
	_, _ = rand.Read(s.rm[:])
	_, _ = rand.Read(s.guid[:])
	code := mac(b.kuid(s), put32(s.console), put32(s.id), s.rc[:], s.rm[:], s.guid[:], []byte{s.role, byte(len(s.user))}, s.user)
	return setup(payloadRAKP2, bytes.Join([][]byte{head, s.rm[:], s.guid[:], code}, nil))
}

// rakp3 checks the console's key exchange code, derives the session's
// keys and answers RAKP 4.
func (b *BMC) rakp3(q []byte) []byte {
	if len(q) < 8 {
		return nil
	}
	tag, s := q[0], b.sessions[le32(q[4:8])]
	if s == nil || s.user == nil {
		return setup(payloadRAKP4, []byte{tag, statusInvalidSession, 0, 0, 0, 0, 0, 0})
	}
	head := append([]byte{tag, 0, 0, 0}, put32(s.console)...)
	want := mac(b.kuid(s), s.rm[:], put32(s.console), []byte{s.role, byte(len(s.user))}, s.user)
	if q[1] != statusOK || len(q) < 28 || !hmac.Equal(q[8:28], want) {
		delete(b.sessions, s.id)
		head[1] = statusInvalidICV
		return setup(payloadRAKP4, head)
	}
	sik := mac(b.kuid(s), s.rc[:], s.rm[:], []byte{s.role, byte(len(s.user))}, s.user)
	s.k1, s.k2 = mac(sik, bytes.Repeat([]byte{1}, 20)), mac(sik, bytes.Repeat([]byte{2}, 20))
	s.active, s.priv = true, 2
	return setup(payloadRAKP4, append(head, mac(sik, s.rc[:], put32(s.id), s.guid[:])[:12]...))
}

// integrityPad is how many 0xff bytes make the authenticated part (from
// the auth type to the next header) a multiple of 4.
func integrityPad(headerAndPayload int) int { return (4 - (headerAndPayload+2)%4) % 4 }

// inSession checks a session message's integrity code, decrypts it,
// answers the IPMI request in it and wraps the answer the same way.
func (b *BMC) inSession(s *session, p []byte, n int) []byte {
	end := 16 + n
	pad := integrityPad(end - 4)
	if len(p) < end+pad+2+12 || int(p[end+pad]) != pad || p[end+pad+1] != 0x07 {
		return nil
	}
	if !hmac.Equal(p[end+pad+2:end+pad+14], mac(s.k1, p[4:end+pad+2])[:12]) {
		return nil // a forged or corrupted packet: dropped, as BMCs do
	}
	clear := decrypt(s.k2[:16], p[16:end])
	if clear == nil {
		return nil
	}
	m, ok := parseMessage(clear)
	if !ok {
		return nil
	}
	s.used = time.Now()
	cc, data := b.command(s, m)
	return s.seal(m.reply(cc, data))
}

// seal encrypts and authenticates an IPMI message for the console.
func (s *session) seal(msg []byte) []byte {
	s.out++
	body := encrypt(s.k2[:16], msg)
	out := []byte{rmcpVersion, 0, 0xff, classIPMI, authRMCPPlus, 0xc0 | payloadIPMI}
	out = append(out, put32(s.console)...)
	out = append(out, put32(s.out)...)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(body)))
	out = append(out, body...)
	pad := integrityPad(len(out) - 4)
	out = append(out, bytes.Repeat([]byte{0xff}, pad)...)
	out = append(out, byte(pad), 0x07)
	return append(out, mac(s.k1, out[4:])[:12]...)
}

// encrypt is AES-CBC-128 with a random IV ahead and the confidentiality
// trailer (pad bytes 1, 2, 3... and their count).
func encrypt(key, msg []byte) []byte {
	pad := (16 - (len(msg)+1)%16) % 16
	plain := append([]byte(nil), msg...)
	for i := 1; i <= pad; i++ {
		plain = append(plain, byte(i))
	}
	plain = append(plain, byte(pad))
	out := make([]byte, 16+len(plain))
	_, _ = rand.Read(out[:16])
	blk, _ := aes.NewCipher(key)
	cipher.NewCBCEncrypter(blk, out[:16]).CryptBlocks(out[16:], plain)
	return out
}

// decrypt undoes encrypt, or is nil.
func decrypt(key, body []byte) []byte {
	if len(body) < 32 || len(body)%16 != 0 {
		return nil
	}
	plain := make([]byte, len(body)-16)
	blk, _ := aes.NewCipher(key)
	cipher.NewCBCDecrypter(blk, body[:16]).CryptBlocks(plain, body[16:])
	pad := int(plain[len(plain)-1])
	if pad >= len(plain) {
		return nil
	}
	for i := 0; i < pad; i++ {
		if plain[len(plain)-1-pad+i] != byte(i+1) {
			return nil
		}
	}
	return plain[:len(plain)-1-pad]
}
