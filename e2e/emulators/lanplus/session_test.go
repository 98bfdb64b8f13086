package lanplus

import (
	"bytes"
	"encoding/binary"
	"testing"

	. "github.com/onsi/gomega"
)

// TestForgedPacketsDropped: a session message is answered only when its
// integrity code is the session's and it is encrypted and authenticated;
// anything else is dropped unanswered.
func TestForgedPacketsDropped(t *testing.T) {
	g := NewWithT(t)
	s := &session{console: 7, k1: bytes.Repeat([]byte{1}, 20), k2: bytes.Repeat([]byte{2}, 20), active: true, priv: privAdministrator}
	b := &BMC{sessions: map[uint32]*session{7: s}}
	status := []byte{bmcAddress, netFnChassis << 2, 0, 0x81, 0x04, cmdGetChassisStatus, 0}
	status[2], status[6] = checksum(status[:2]), checksum(status[3:6])
	// What a console sends is sealed as the BMC seals its answers (the
	// session id aside, which the BMC does not check here).
	sealed := s.seal(status)
	n := int(binary.LittleEndian.Uint16(sealed[14:16]))

	answer := b.packet(sealed)
	g.Expect(answer).NotTo(BeNil())
	clear := decrypt(s.k2[:16], answer[16:16+int(binary.LittleEndian.Uint16(answer[14:16]))])
	g.Expect(clear[6]).To(Equal(byte(ccOK)))
	g.Expect(clear[5]).To(Equal(byte(cmdGetChassisStatus)))

	for name, change := range map[string]func(p []byte){
		"a payload byte":        func(p []byte) { p[20] ^= 1 },
		"the integrity code":    func(p []byte) { p[len(p)-1] ^= 1 },
		"the sequence number":   func(p []byte) { p[10]++ },
		"in clear":              func(p []byte) { p[5] = payloadIPMI },
		"another session":       func(p []byte) { p[6] = 8 },
		"a short integrity pad": func(p []byte) { p[16+n+integrityPad(12+n)] = 9 },
	} {
		p := append([]byte(nil), sealed...)
		change(p)
		g.Expect(b.packet(p)).To(BeNil(), name)
	}
	other := &session{k1: bytes.Repeat([]byte{3}, 20), k2: s.k2, active: true}
	g.Expect(b.inSession(other, sealed, n)).To(BeNil(), "another session's key")
}

func TestEncryptRoundTrip(t *testing.T) {
	g := NewWithT(t)
	key := bytes.Repeat([]byte{9}, 16)
	for n := 0; n < 40; n++ {
		msg := bytes.Repeat([]byte{byte(n)}, n)
		body := encrypt(key, msg)
		g.Expect(len(body) % 16).To(BeZero())
		g.Expect(decrypt(key, body)).To(Equal(msg), "%d bytes", n)
	}
}
