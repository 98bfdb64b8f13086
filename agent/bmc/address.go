package bmc

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
)

// Protocol is how a BMC is spoken to.
type Protocol string

const (
	IPMI    Protocol = "ipmi"
	Redfish Protocol = "redfish"
)

// Address is a parsed BMC address.
type Address struct {
	Protocol Protocol
	// Host and Port reach the BMC; Port is empty for the default.
	Host, Port string
	// HTTP is true for redfish+http:// (no TLS).
	HTTP bool
	// SystemPath is the Redfish system's path, when the address names one.
	SystemPath string
	// VirtualMedia is true when the scheme asks for virtual media boot.
	VirtualMedia bool
}

// schemes maps baremetal-operator's BMC address schemes to how this driver
// speaks to them. Vendor Redfish flavours are plain Redfish here.
var schemes = map[string]Address{
	"ipmi":                       {Protocol: IPMI},
	"libvirt":                    {Protocol: IPMI},
	"redfish":                    {Protocol: Redfish},
	"redfish+https":              {Protocol: Redfish},
	"redfish+http":               {Protocol: Redfish, HTTP: true},
	"redfish-virtualmedia":       {Protocol: Redfish, VirtualMedia: true},
	"redfish-virtualmedia+https": {Protocol: Redfish, VirtualMedia: true},
	"redfish-virtualmedia+http":  {Protocol: Redfish, VirtualMedia: true, HTTP: true},
	"idrac-redfish":              {Protocol: Redfish},
	"idrac-virtualmedia":         {Protocol: Redfish, VirtualMedia: true},
	"ilo5-redfish":               {Protocol: Redfish},
	"ilo5-virtualmedia":          {Protocol: Redfish, VirtualMedia: true},
}

// ParseAddress reads a BareMetalHost's spec.bmc.address.
func ParseAddress(addr string) (Address, error) {
	if !strings.Contains(addr, "://") {
		// baremetal-operator takes a bare host as IPMI.
		addr = "ipmi://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return Address{}, fmt.Errorf("BMC address %q: %w", addr, err)
	}
	a, ok := schemes[u.Scheme]
	if !ok {
		known := make([]string, 0, len(schemes))
		for s := range schemes {
			known = append(known, s+"://")
		}
		sort.Strings(known)
		return Address{}, fmt.Errorf("BMC address %q: scheme %q is not one the agent drives (%s)", addr, u.Scheme, strings.Join(known, ", "))
	}
	if u.Hostname() == "" {
		return Address{}, fmt.Errorf("BMC address %q has no host", addr)
	}
	a.Host, a.Port = u.Hostname(), u.Port()
	if a.Protocol == Redfish {
		a.SystemPath = strings.TrimSuffix(u.Path, "/")
	}
	return a, nil
}

// HostPort is host:port, with the protocol's default port.
func (a Address) HostPort() string {
	port := a.Port
	if port == "" {
		switch {
		case a.Protocol == IPMI:
			port = "623"
		case a.HTTP:
			port = "80"
		default:
			port = "443"
		}
	}
	return net.JoinHostPort(a.Host, port)
}
