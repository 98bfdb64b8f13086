// Package hardware is what a claim may ask of a host's hardware: the view
// of a host's hardware (version v1), the profile hosts of one make share,
// and the requirement a claim writes over the view, a CEL expression.
//
// Not wired yet: no controller reads a requirement or writes a profile.
package hardware

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
)

// Version names the view's fields and meaning; a profile names it.
const Version = "v1"

// The most disks, NICs and GPUs a view holds (the first, in the view's
// order): a requirement's cost is bounded by them.
const (
	MaxDisks = 64
	MaxNICs  = 64
	MaxGPUs  = 16
)

// View is a host's hardware as a requirement sees it (the CEL variable
// host): what inspection or the BMC driver reports, without serial
// numbers, MACs, names or addresses, so that hosts of one make and fit
// have one view. Lists are sorted.
type View struct {
	CPU CPU `json:"cpu"`
	// MemoryMiB is the RAM in MiB.
	MemoryMiB int64  `json:"memoryMiB"`
	Disks     []Disk `json:"disks"`
	NICs      []NIC  `json:"nics"`
	// GPUs are reported by the BMC driver's Redfish inventory only:
	// baremetal-operator's inspection lists no PCI devices.
	GPUs   []GPU  `json:"gpus"`
	System System `json:"system"`
}

// CPU is the host's processors: Count is its logical CPUs.
type CPU struct {
	Count int64  `json:"count"`
	Arch  string `json:"arch"`
	Model string `json:"model"`
}

// Disk is one disk: its size in GiB (rounded down), whether it spins, and
// its type (HDD, SSD or NVME; empty when inspection does not say).
type Disk struct {
	SizeGiB    int64  `json:"sizeGiB"`
	Rotational bool   `json:"rotational"`
	Type       string `json:"type"`
}

// NIC is one network interface: its link speed (0: unknown or down) and
// model.
type NIC struct {
	SpeedGbps int64  `json:"speedGbps"`
	Model     string `json:"model"`
}

// GPU is one GPU.
type GPU struct {
	Vendor string `json:"vendor"`
	Model  string `json:"model"`
}

// System is the host's maker and product.
type System struct {
	Manufacturer string `json:"manufacturer"`
	Product      string `json:"product"`
}

// Of is the view of what inspection reported, or nil when it reported
// nothing (a host not inspected has no view and meets no requirement).
func Of(d *metal3api.HardwareDetails) *View {
	if d == nil {
		return nil
	}
	v := &View{
		CPU:       CPU{Count: int64(d.CPU.Count), Arch: d.CPU.Arch, Model: d.CPU.Model},
		MemoryMiB: int64(d.RAMMebibytes),
		System:    System{Manufacturer: d.SystemVendor.Manufacturer, Product: d.SystemVendor.ProductName},
	}
	for _, s := range d.Storage {
		v.Disks = append(v.Disks, Disk{SizeGiB: int64(s.SizeBytes / metal3api.GibiByte), Rotational: s.Rotational, Type: string(s.Type)})
	}
	for _, n := range d.NIC {
		v.NICs = append(v.NICs, NIC{SpeedGbps: int64(n.SpeedGbps), Model: n.Model})
	}
	v.Normalize()
	return v
}

// Normalize sorts the view's lists (largest disks and fastest NICs first)
// and cuts them to their maxima; a missing list is empty.
func (v *View) Normalize() {
	v.Disks, v.NICs, v.GPUs = orEmpty(v.Disks), orEmpty(v.NICs), orEmpty(v.GPUs)
	slices.SortFunc(v.Disks, func(a, b Disk) int {
		return cmp.Or(cmp.Compare(b.SizeGiB, a.SizeGiB), cmp.Compare(a.Type, b.Type), cmpBool(a.Rotational, b.Rotational))
	})
	slices.SortFunc(v.NICs, func(a, b NIC) int {
		return cmp.Or(cmp.Compare(b.SpeedGbps, a.SpeedGbps), cmp.Compare(a.Model, b.Model))
	})
	slices.SortFunc(v.GPUs, func(a, b GPU) int {
		return cmp.Or(cmp.Compare(a.Vendor, b.Vendor), cmp.Compare(a.Model, b.Model))
	})
	v.Disks, v.NICs, v.GPUs = v.Disks[:min(len(v.Disks), MaxDisks)], v.NICs[:min(len(v.NICs), MaxNICs)], v.GPUs[:min(len(v.GPUs), MaxGPUs)]
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// Profile names the view: hosts with equal views have one profile. It is
// the version and a hash of the normalized view.
func (v *View) Profile() string {
	n := *v
	n.Disks, n.NICs, n.GPUs = slices.Clone(v.Disks), slices.Clone(v.NICs), slices.Clone(v.GPUs)
	n.Normalize()
	data, _ := json.Marshal(n) // plain fields: cannot fail
	sum := sha256.Sum256(data)
	return Version + "-" + hex.EncodeToString(sum[:6])
}
