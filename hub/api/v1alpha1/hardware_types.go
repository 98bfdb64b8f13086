package v1alpha1

// HardwareView is a host's hardware as a claim's requirement
// (AnnotationHardware) sees it, version v1: what baremetal-operator's
// inspection or the agent's BMC driver reports, without serial numbers,
// MACs, names or addresses, so that hosts of one make and fit have one
// view. Lists are sorted: the largest disks, the fastest NICs first.
type HardwareView struct {
	CPU HardwareCPU `json:"cpu"`
	// MemoryMiB is the RAM in MiB.
	MemoryMiB int64 `json:"memoryMiB"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Disks []HardwareDisk `json:"disks"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	NICs []HardwareNIC `json:"nics"`
	// GPUs are reported by the BMC driver's Redfish inventory only:
	// baremetal-operator's inspection lists no PCI devices.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	GPUs   []HardwareGPU  `json:"gpus"`
	System HardwareSystem `json:"system"`
	// Firmware is the host's firmware versions by component, named as
	// baremetal-operator's HostFirmwareComponents name them ("bios",
	// "bmc", "nic:<Id>"): the BIOS version inspection reports, and what
	// the agent's BMC driver reads out of band. Empty where nothing was
	// read; a view without firmware has the profile it had before
	// firmware was read.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Firmware map[string]string `json:"firmware,omitempty"`
}

// HardwareCPU is the host's processors: Count is its logical CPUs.
type HardwareCPU struct {
	Count int64  `json:"count"`
	Arch  string `json:"arch"`
	Model string `json:"model"`
}

// HardwareDisk is one disk: its size in GiB (rounded down), whether it
// spins, and its type (HDD, SSD or NVME; empty when inspection does not
// say).
type HardwareDisk struct {
	SizeGiB    int64  `json:"sizeGiB"`
	Rotational bool   `json:"rotational"`
	Type       string `json:"type"`
}

// HardwareNIC is one network interface: its link speed in Gbps (0: unknown
// or down) and model.
type HardwareNIC struct {
	SpeedGbps int64  `json:"speedGbps"`
	Model     string `json:"model"`
}

// HardwareGPU is one GPU.
type HardwareGPU struct {
	Vendor string `json:"vendor"`
	Model  string `json:"model"`
}

// HardwareSystem is the host's maker and product.
type HardwareSystem struct {
	Manufacturer string `json:"manufacturer"`
	Product      string `json:"product"`
}

// HardwareProfile is the hardware the hosts of one or more pools share.
type HardwareProfile struct {
	// Name is the view's version and a hash of the view
	// (hardware.Profile): pools name it.
	Name string `json:"name"`
	// Hardware is the view.
	Hardware HardwareView `json:"hardware"`
}
