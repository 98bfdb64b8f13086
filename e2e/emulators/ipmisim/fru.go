package ipmisim

import (
	"fmt"
	"strings"
)

// Option changes what a BMC serves.
type Option func(*config)

type config struct{ fru []byte }

// WithFRU serves a FRU inventory (device 0) whose product area names the
// system's manufacturer, product and serial number, as a server's BMC
// does: all the hardware IPMI tells.
func WithFRU(manufacturer, product, serial string) Option {
	return func(c *config) { c.fru = FRU(manufacturer, product, serial) }
}

// FRU is a FRU inventory (IPMI Platform Management FRU Information Storage
// Definition v1.0) with a common header and a product area: manufacturer,
// name, serial number, each 8-bit ASCII of at most 63 bytes.
func FRU(manufacturer, product, serial string) []byte {
	field := func(s string) []byte {
		s = s[:min(len(s), 63)]
		return append([]byte{0xc0 | byte(len(s))}, s...)
	}
	area := []byte{0x01, 0x00, 0x00} // version, length (below), English
	for _, f := range []string{manufacturer, product, "", "", serial, "", ""} {
		area = append(area, field(f)...) // manufacturer, name, part, version, serial, asset tag, file ID
	}
	area = append(area, 0xc1) // no more fields
	for (len(area)+1)%8 != 0 {
		area = append(area, 0)
	}
	area[1] = byte((len(area) + 1) / 8)
	area = append(area, checksum(area))
	header := []byte{0x01, 0, 0, 0, 1, 0, 0} // version; product area at 8 bytes
	header = append(header, checksum(header))
	return append(header, area...)
}

// checksum makes b and it sum to zero.
func checksum(b []byte) byte {
	var sum byte
	for _, x := range b {
		sum += x
	}
	return -sum
}

// fruCommand is the ipmi_sim command that loads data as FRU device 0.
func fruCommand(data []byte) string {
	bytes := make([]string, len(data))
	for i, b := range data {
		bytes[i] = fmt.Sprintf("0x%02x", b)
	}
	return fmt.Sprintf("mc_add_fru_data 0x20 0 %d data %s\n", len(data), strings.Join(bytes, " "))
}
