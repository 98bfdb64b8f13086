package bmc

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/bmc-toolbox/common"
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
)

func (d *client) Inventory(ctx context.Context) (*metal3api.HardwareDetails, error) {
	if d.addr.Protocol != Redfish {
		return nil, fmt.Errorf("%w: inventory needs Redfish; %s speaks %s", ErrUnsupported, d.addr.HostPort(), d.addr.Protocol)
	}
	var dev *common.Device
	if err := d.call(ctx, "read inventory", func(ctx context.Context) error {
		var err error
		dev, err = d.c.Inventory(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	hw := Hardware(dev)
	// Best effort: what bmclib read stands without it.
	if err := d.call(ctx, "read the system's Redfish resources", func(ctx context.Context) error {
		return d.rf.complete(ctx, hw)
	}); err != nil {
		d.log.Info("inventory: NICs, vendor or model not completed from the system's Redfish resources", "bmc", d.addr.HostPort(), "error", err.Error())
	}
	return hw, nil
}

// Hardware maps bmclib's inventory to metal3's HardwareDetails.
func Hardware(dev *common.Device) *metal3api.HardwareDetails {
	hw := &metal3api.HardwareDetails{
		SystemVendor: metal3api.HardwareSystemVendor{Manufacturer: dev.Vendor, ProductName: dev.Model, SerialNumber: dev.Serial},
	}
	if dev.BIOS != nil {
		hw.Firmware.BIOS.Vendor = dev.BIOS.Vendor
		if dev.BIOS.Firmware != nil {
			hw.Firmware.BIOS.Version = dev.BIOS.Firmware.Installed
		}
	}
	for _, c := range dev.CPUs {
		if c == nil {
			continue
		}
		hw.CPU.Count += max(c.Threads, c.Cores)
		if hw.CPU.Model == "" {
			hw.CPU.Model = c.Model
			hw.CPU.Arch = arch(c.Architecture)
			hw.CPU.ClockMegahertz = metal3api.ClockSpeed(float64(c.ClockSpeedHz) / 1e6)
		}
	}
	var ram int64
	for _, m := range dev.Memory {
		if m != nil {
			ram += m.SizeBytes
		}
	}
	hw.RAMMebibytes = int(ram >> 20)
	for _, dr := range dev.Drives {
		if dr == nil {
			continue
		}
		name := dr.ID
		if dr.LogicalName != "" {
			name = dr.LogicalName
		}
		hw.Storage = append(hw.Storage, metal3api.Storage{Name: name, Model: dr.Model, SerialNumber: dr.Serial, Vendor: dr.Vendor,
			SizeBytes: metal3api.Capacity(dr.CapacityBytes), Rotational: strings.EqualFold(dr.Type, "HDD")})
	}
	for _, n := range dev.NICs {
		if n == nil {
			continue
		}
		for _, p := range n.NICPorts {
			if p == nil || p.MacAddress == "" {
				continue
			}
			hw.NIC = append(hw.NIC, metal3api.NIC{Name: p.ID, Model: strings.TrimSpace(n.Vendor + " " + n.Model),
				MAC: strings.ToLower(p.MacAddress), SpeedGbps: int(p.SpeedBits / 1e9)})
		}
	}
	sort.Slice(hw.Storage, func(i, j int) bool { return hw.Storage[i].Name < hw.Storage[j].Name })
	sort.Slice(hw.NIC, func(i, j int) bool { return hw.NIC[i].Name < hw.NIC[j].Name })
	return hw
}

func arch(a string) string {
	switch strings.ToLower(a) {
	case "x86", "x86-64", "x86_64", "amd64", "":
		return "x86_64"
	case "arm", "aarch64", "arm64":
		return "aarch64"
	}
	return a
}
