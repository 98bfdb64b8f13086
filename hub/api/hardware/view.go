// Package hardware is what a claim may ask of a host's hardware: the view
// of a host's hardware (version v1), the profile hosts of one make share,
// and the requirement a claim writes over the view, a CEL expression.
package hardware

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Version names the view's fields and meaning; a profile names it.
const Version = "v1"

// The most disks, NICs and GPUs a view holds (the first, in the view's
// order): a requirement's cost is bounded by them.
const (
	MaxDisks = 64
	MaxNICs  = 64
	MaxGPUs  = 16
	// MaxFirmware is the most firmware components a view holds (the
	// first, by name).
	MaxFirmware = 32
)

// View is a host's hardware as a requirement sees it (the CEL variable
// host); the API's HardwareView.
type View = hostfleetv1alpha1.HardwareView

// The view's parts.
type (
	CPU    = hostfleetv1alpha1.HardwareCPU
	Disk   = hostfleetv1alpha1.HardwareDisk
	NIC    = hostfleetv1alpha1.HardwareNIC
	GPU    = hostfleetv1alpha1.HardwareGPU
	System = hostfleetv1alpha1.HardwareSystem
)

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
	if bios := d.Firmware.BIOS.Version; bios != "" {
		v.Firmware = map[string]string{"bios": bios}
	}
	for _, s := range d.Storage {
		v.Disks = append(v.Disks, Disk{SizeGiB: int64(s.SizeBytes / metal3api.GibiByte), Rotational: s.Rotational, Type: string(s.Type)})
	}
	for _, n := range d.NIC {
		v.NICs = append(v.NICs, NIC{SpeedGbps: int64(n.SpeedGbps), Model: n.Model})
	}
	Normalize(v)
	return v
}

// AnnotationGPUs, on a HardwareData, lists the host's GPUs as JSON
// ([{"vendor":"NVIDIA","model":"A100"}]): the agent's BMC driver writes it
// from the Redfish inventory, as HardwareDetails has no place for them.
const AnnotationGPUs = "hostfleet.io/gpus"

// AnnotationFirmware, on a HardwareData, maps the host's firmware
// components to their versions as JSON ({"bios":"2.19.1","bmc":"7.10"}):
// the agent's BMC driver writes it from what the BMC reads out of band, as
// HardwareDetails has a place for the BIOS's only.
const AnnotationFirmware = "hostfleet.io/firmware"

// OfData is the view of a HardwareData: its details, the GPUs its
// AnnotationGPUs lists and the firmware its AnnotationFirmware maps (none
// when it lists none, or does not parse).
func OfData(hd *metal3api.HardwareData) *View {
	v := Of(hd.Spec.HardwareDetails)
	if v == nil {
		return nil
	}
	if s := hd.Annotations[AnnotationGPUs]; s != "" {
		var gpus []GPU
		if json.Unmarshal([]byte(s), &gpus) == nil {
			v.GPUs = gpus
		}
	}
	if s := hd.Annotations[AnnotationFirmware]; s != "" {
		var fw map[string]string
		if json.Unmarshal([]byte(s), &fw) == nil && len(fw) > 0 {
			if v.Firmware == nil {
				v.Firmware = map[string]string{}
			}
			maps.Copy(v.Firmware, fw)
		}
	}
	Normalize(v)
	return v
}

// Normalize sorts the view's lists (largest disks and fastest NICs first)
// and cuts them to their maxima; a missing list is empty.
func Normalize(v *View) {
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
	if len(v.Firmware) == 0 {
		v.Firmware = nil
	}
	if len(v.Firmware) > MaxFirmware {
		for _, k := range slices.Sorted(maps.Keys(v.Firmware))[MaxFirmware:] {
			delete(v.Firmware, k)
		}
	}
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
func Profile(v *View) string {
	n := *v
	n.Disks, n.NICs, n.GPUs, n.Firmware = slices.Clone(v.Disks), slices.Clone(v.NICs), slices.Clone(v.GPUs), maps.Clone(v.Firmware)
	Normalize(&n)
	data, _ := json.Marshal(n) // plain fields: cannot fail
	sum := sha256.Sum256(data)
	return Version + "-" + hex.EncodeToString(sum[:6])
}

// Compare orders views by how much a host has, the least first: fewer GPUs,
// then fewer cores, less memory, less disk in all, slower NICs. A claim
// takes the least host that meets its requirement, so that a 64-core
// request leaves a 256-core host to the claims that need one.
func Compare(a, b *View) int {
	return cmp.Or(
		cmp.Compare(len(a.GPUs), len(b.GPUs)),
		cmp.Compare(a.CPU.Count, b.CPU.Count),
		cmp.Compare(a.MemoryMiB, b.MemoryMiB),
		cmp.Compare(diskGiB(a), diskGiB(b)),
		cmp.Compare(fastest(a), fastest(b)),
	)
}

func diskGiB(v *View) (n int64) {
	for _, d := range v.Disks {
		n += d.SizeGiB
	}
	return n
}

func fastest(v *View) int64 {
	if len(v.NICs) == 0 {
		return 0
	}
	return slices.MaxFunc(v.NICs, func(a, b NIC) int { return cmp.Compare(a.SpeedGbps, b.SpeedGbps) }).SpeedGbps
}

// Describe says a view in a few words: "48 cores x86_64, 64 GiB, 2 disks
// (1 NVME), 25 Gb/s, no GPU".
func Describe(v *View) string {
	nvme := 0
	for _, d := range v.Disks {
		if d.Type == string(metal3api.NVME) {
			nvme++
		}
	}
	gpus := "no GPU"
	if len(v.GPUs) > 0 {
		gpus = fmt.Sprintf("%d GPU (%s)", len(v.GPUs), v.GPUs[0].Model)
	}
	return fmt.Sprintf("%d cores %s, %d GiB, %d disks (%d NVME), %d Gb/s, %s",
		v.CPU.Count, v.CPU.Arch, v.MemoryMiB/1024, len(v.Disks), nvme, fastest(v), gpus)
}
