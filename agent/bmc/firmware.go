package bmc

import (
	"context"
	"fmt"
	"strings"
)

// FirmwareReader is a BMC that reads the host's firmware versions out of
// band, without the host's operating system.
type FirmwareReader interface {
	// Firmware is each component's version, named as baremetal-operator's
	// HostFirmwareComponents name them: "bios", "bmc", and "nic:<Id>" for
	// a network adapter's. A component the BMC does not report is absent.
	Firmware(ctx context.Context) (map[string]string, error)
}

// Firmware reads the system's BiosVersion, its manager's FirmwareVersion
// and the UpdateService's FirmwareInventory; what the system and the
// manager say of the BIOS and the BMC wins over the inventory's members.
func (d *client) Firmware(ctx context.Context) (map[string]string, error) {
	if d.rf == nil {
		return nil, fmt.Errorf("%w: firmware through ipmitool; %s speaks %s", ErrUnsupported, d.addr.HostPort(), d.addr.Protocol)
	}
	var fw map[string]string
	err := d.call(ctx, "read firmware", func(ctx context.Context) error {
		var err error
		fw, err = d.rf.firmware(ctx)
		return err
	})
	return fw, err
}

func (r *redfishSystem) firmware(ctx context.Context) (map[string]string, error) {
	_, sys, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if sys.BiosVersion != "" {
		out["bios"] = sys.BiosVersion
	}
	if len(sys.Links.ManagedBy) > 0 {
		var m struct{ FirmwareVersion string }
		if err := r.get(ctx, sys.Links.ManagedBy[0].ID, &m); err != nil {
			return nil, err
		}
		if m.FirmwareVersion != "" {
			out["bmc"] = m.FirmwareVersion
		}
	}
	var root struct{ UpdateService odataRef }
	if err := r.get(ctx, "/redfish/v1/", &root); err != nil {
		return nil, err
	}
	if root.UpdateService.ID == "" {
		return out, nil
	}
	var us struct{ FirmwareInventory odataRef }
	if err := r.get(ctx, root.UpdateService.ID, &us); err != nil {
		return nil, err
	}
	items, err := members[struct{ ID, Name, Version string }](ctx, r, us.FirmwareInventory.ID)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if name := ComponentName(it.ID, it.Name); name != "" && out[name] == "" && it.Version != "" {
			out[name] = it.Version
		}
	}
	return out, nil
}

// ComponentName names a FirmwareInventory member (its Id and Name) as
// baremetal-operator names host firmware components: "bios", "bmc",
// "nic:<Id>"; "" for one it has no name for (a drive's, a power supply's).
func ComponentName(id, name string) string {
	both := strings.ToLower(id + " " + name)
	switch {
	case strings.Contains(both, "bios") || strings.Contains(both, "uefi"):
		return "bios"
	case strings.Contains(both, "bmc") || strings.Contains(both, "idrac") || strings.Contains(both, "ilo") || strings.Contains(both, "manager"):
		return "bmc"
	case strings.Contains(both, "nic") || strings.Contains(both, "ethernet") || strings.Contains(both, "network"):
		return "nic:" + id
	}
	return ""
}
