package bmc

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Inventory reads the system's hardware from its Redfish resources: the
// system, its Processors, Memory, Storage (or SimpleStorage) and
// EthernetInterfaces, about a dozen requests on one kept connection.
func (d *client) Inventory(ctx context.Context) (*metal3api.HardwareDetails, error) {
	if d.rf == nil {
		return nil, fmt.Errorf("%w: inventory needs Redfish; %s speaks %s", ErrUnsupported, d.addr.HostPort(), d.addr.Protocol)
	}
	var hw *metal3api.HardwareDetails
	err := d.call(ctx, "read inventory", func(ctx context.Context) error {
		var err error
		hw, err = d.rf.inventory(ctx)
		return err
	})
	return hw, err
}

// GPUReader is a BMC that reports its GPUs, which HardwareDetails has no
// place for: Redfish lists them among the system's Processors.
type GPUReader interface {
	GPUs(ctx context.Context) ([]hostfleetv1alpha1.HardwareGPU, error)
}

// GPUs reads the Processors whose ProcessorType is GPU.
func (d *client) GPUs(ctx context.Context) ([]hostfleetv1alpha1.HardwareGPU, error) {
	if d.rf == nil {
		return nil, fmt.Errorf("%w: GPUs need Redfish; %s speaks %s", ErrUnsupported, d.addr.HostPort(), d.addr.Protocol)
	}
	var gpus []hostfleetv1alpha1.HardwareGPU
	err := d.call(ctx, "read GPUs", func(ctx context.Context) error {
		_, sys, err := d.rf.read(ctx)
		if err != nil {
			return err
		}
		procs, err := members[struct {
			state
			ProcessorType, Manufacturer, Model string
		}](ctx, d.rf, sys.Processors.ID)
		gpus = nil
		for _, p := range procs {
			if !p.absent() && p.ProcessorType == "GPU" {
				gpus = append(gpus, hostfleetv1alpha1.HardwareGPU{Vendor: p.Manufacturer, Model: p.Model})
			}
		}
		return err
	})
	return gpus, err
}

// inventory reads what HardwareDetails holds. A resource the system does
// not link is left out; one it links and does not serve fails the read.
func (r *redfishSystem) inventory(ctx context.Context) (*metal3api.HardwareDetails, error) {
	_, sys, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	hw := &metal3api.HardwareDetails{
		SystemVendor: metal3api.HardwareSystemVendor{Manufacturer: sys.Manufacturer, ProductName: sys.Model, SerialNumber: sys.SerialNumber},
		Hostname:     sys.HostName,
	}
	hw.Firmware.BIOS.Version = sys.BiosVersion
	if err := r.processors(ctx, sys.Processors.ID, hw); err != nil {
		return nil, err
	}
	if err := r.memory(ctx, sys.Memory.ID, hw); err != nil {
		return nil, err
	}
	if hw.RAMMebibytes == 0 {
		hw.RAMMebibytes = int(math.Round(sys.MemorySummary.TotalSystemMemoryGiB * 1024))
	}
	if err := r.storage(ctx, sys.Storage.ID, sys.SimpleStorage.ID, hw); err != nil {
		return nil, err
	}
	if sys.EthernetInterfaces.ID != "" {
		if hw.NIC, err = r.ethernetInterfaces(ctx, sys.EthernetInterfaces.ID); err != nil {
			return nil, err
		}
	}
	return hw, nil
}

// state is a Redfish resource's Status; an Absent one is an empty slot.
type state struct {
	Status struct{ State string }
}

func (s state) absent() bool { return s.Status.State == "Absent" }

// members reads a collection's members into out, one GET each; an empty
// path reads nothing.
func members[T any](ctx context.Context, r *redfishSystem, path string) ([]T, error) {
	if path == "" {
		return nil, nil
	}
	var list struct{ Members []odataRef }
	if err := r.get(ctx, path, &list); err != nil {
		return nil, err
	}
	out := make([]T, len(list.Members))
	for i, m := range list.Members {
		if err := r.get(ctx, m.ID, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// processors counts the CPUs' threads (their cores where threads are not
// reported) and takes the first CPU's model, clock and architecture.
func (r *redfishSystem) processors(ctx context.Context, path string, hw *metal3api.HardwareDetails) error {
	cpus, err := members[struct {
		state
		ProcessorType, Model, ProcessorArchitecture, InstructionSet string
		TotalCores, TotalThreads                                    int
		MaxSpeedMHz                                                 float64
	}](ctx, r, path)
	for _, c := range cpus {
		if c.absent() || (c.ProcessorType != "" && c.ProcessorType != "CPU") {
			continue // an empty socket, a GPU or an FPGA
		}
		hw.CPU.Count += max(c.TotalThreads, c.TotalCores)
		if hw.CPU.Model == "" {
			hw.CPU.Model = c.Model
			hw.CPU.Arch = arch(first(c.InstructionSet, c.ProcessorArchitecture))
			hw.CPU.ClockMegahertz = metal3api.ClockSpeed(c.MaxSpeedMHz)
		}
	}
	return err
}

func (r *redfishSystem) memory(ctx context.Context, path string, hw *metal3api.HardwareDetails) error {
	dimms, err := members[struct {
		state
		CapacityMiB int
	}](ctx, r, path)
	for _, m := range dimms {
		if !m.absent() {
			hw.RAMMebibytes += m.CapacityMiB
		}
	}
	return err
}

// storage reads the drives of every Storage controller, or the devices of
// SimpleStorage on a BMC without Storage.
func (r *redfishSystem) storage(ctx context.Context, storagePath, simplePath string, hw *metal3api.HardwareDetails) error {
	type drive struct {
		state
		ID                                      string `json:"Id"`
		Name, Model, SerialNumber, Manufacturer string
		MediaType                               string
		CapacityBytes                           int64
	}
	add := func(d drive) {
		if d.absent() || d.CapacityBytes <= 0 {
			return
		}
		hw.Storage = append(hw.Storage, metal3api.Storage{Name: first(d.ID, d.Name), Model: d.Model, SerialNumber: d.SerialNumber,
			Vendor: d.Manufacturer, SizeBytes: metal3api.Capacity(d.CapacityBytes), Rotational: strings.EqualFold(d.MediaType, "HDD")})
	}
	controllers, err := members[struct{ Drives []odataRef }](ctx, r, storagePath)
	if err != nil {
		return err
	}
	for _, c := range controllers {
		for _, ref := range c.Drives {
			var d drive
			if err := r.get(ctx, ref.ID, &d); err != nil {
				return err
			}
			add(d)
		}
	}
	if storagePath == "" {
		simple, err := members[struct{ Devices []drive }](ctx, r, simplePath)
		if err != nil {
			return err
		}
		for _, s := range simple {
			for _, d := range s.Devices {
				add(d)
			}
		}
	}
	sort.Slice(hw.Storage, func(i, j int) bool { return hw.Storage[i].Name < hw.Storage[j].Name })
	return nil
}

func arch(a string) string {
	switch strings.ToLower(a) {
	case "x86", "x86-64", "x86_64", "amd64", "":
		return "x86_64"
	case "arm", "arm-a64", "aarch64", "arm64":
		return "aarch64"
	}
	return a
}
