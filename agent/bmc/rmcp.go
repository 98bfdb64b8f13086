package bmc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"time"
)

// Ping sends an RMCP/ASF presence ping to addr and waits for the pong:
// whether an IPMI BMC answers there at all, without credentials.
func Ping(ctx context.Context, addr string) error {
	d := net.Dialer{}
	c, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	// RMCP header (version 6, reserved, seq 0xff, class ASF) then ASF
	// message: IANA 4542, type 0x80 (presence ping), tag, reserved, length 0.
	msg := []byte{0x06, 0x00, 0xff, 0x06, 0, 0, 0x11, 0xbe, 0x80, 0x01, 0x00, 0x00}
	deadline, ok := ctx.Deadline()
	if !ok || time.Until(deadline) > 2*time.Second {
		deadline = time.Now().Add(2 * time.Second)
	}
	_ = c.SetDeadline(deadline)
	if _, err := c.Write(msg); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if n < 9 || !bytes.Equal(buf[4:8], msg[4:8]) || buf[8] != 0x40 || binary.BigEndian.Uint32(buf[4:8]) != 4542 {
		return errors.New("not an RMCP presence pong")
	}
	return nil
}
