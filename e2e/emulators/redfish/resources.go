package redfish

import (
	"cmp"
	"fmt"
	"strings"
)

func (b *BMC) serviceRoot() map[string]any {
	return map[string]any{
		"@odata.id": Root, "@odata.type": "#ServiceRoot.v1_11_0.ServiceRoot",
		"Id": "RootService", "Name": "Root Service", "RedfishVersion": "1.11.0",
		"UUID":           "00000000-0000-0000-0000-" + fmt.Sprintf("%012x", len(b.Hardware.SerialNumber)),
		"Systems":        ref("/redfish/v1/Systems"),
		"Managers":       ref("/redfish/v1/Managers"),
		"Chassis":        ref("/redfish/v1/Chassis"),
		"SessionService": ref("/redfish/v1/SessionService"),
		"UpdateService":  ref(UpdateServicePath),
		"AccountService": ref(AccountServicePath),
		"Links":          map[string]any{"Sessions": ref(sessionsURI)},
	}
}

// resource is the GET answer for path, or nil. The caller holds b.mu.
func (b *BMC) resource(path string) any {
	hw := b.Hardware
	switch path {
	case "/redfish/v1/SessionService":
		return map[string]any{"@odata.id": path, "@odata.type": "#SessionService.v1_1_8.SessionService",
			"Id": "SessionService", "Name": "Session Service", "ServiceEnabled": true, "SessionTimeout": 1800,
			"Sessions": ref(sessionsURI)}
	case sessionsURI:
		var ids []string
		for id := range b.sessions {
			ids = append(ids, sessionsURI+"/"+id)
		}
		return collection(path, "#SessionCollection.SessionCollection", "Session Collection", ids...)
	case "/redfish/v1/Systems":
		return collection(path, "#ComputerSystemCollection.ComputerSystemCollection", "Computer System Collection", SystemPath)
	case SystemPath:
		return b.system()
	case SystemPath + "/Processors":
		var ids []string
		for i := 0; i < hw.CPUs; i++ {
			ids = append(ids, fmt.Sprintf("%s/Processors/CPU%d", SystemPath, i))
		}
		for i := range hw.GPUs {
			ids = append(ids, fmt.Sprintf("%s/Processors/GPU%d", SystemPath, i))
		}
		return collection(path, "#ProcessorCollection.ProcessorCollection", "Processors Collection", ids...)
	case SystemPath + "/Memory":
		return collection(path, "#MemoryCollection.MemoryCollection", "Memory Collection", SystemPath+"/Memory/DIMM0")
	case SystemPath + "/Memory/DIMM0":
		return map[string]any{"@odata.id": path, "@odata.type": "#Memory.v1_10_0.Memory", "Id": "DIMM0", "Name": "DIMM0",
			"CapacityMiB": hw.MemoryGiB * 1024, "VolatileSizeMiB": hw.MemoryGiB * 1024, "MemoryDeviceType": "DDR4", "OperatingSpeedMhz": 3200,
			"Manufacturer": hw.Manufacturer, "Status": map[string]string{"State": "Enabled", "Health": "OK"}}
	case SystemPath + "/Storage":
		return collection(path, "#StorageCollection.StorageCollection", "Storage Collection", SystemPath+"/Storage/1")
	case SystemPath + "/Storage/1":
		var drives []map[string]string
		for _, d := range hw.Disks {
			drives = append(drives, ref(SystemPath+"/Storage/1/Drives/"+d.Name))
		}
		return map[string]any{"@odata.id": path, "@odata.type": "#Storage.v1_9_0.Storage", "Id": "1", "Name": "Storage",
			"Drives": drives, "Drives@odata.count": len(drives), "Status": map[string]string{"State": "Enabled", "Health": "OK"}}
	case SystemPath + "/EthernetInterfaces":
		var ids []string
		for _, n := range hw.NICs {
			ids = append(ids, SystemPath+"/EthernetInterfaces/"+n.Name)
		}
		return collection(path, "#EthernetInterfaceCollection.EthernetInterfaceCollection", "Ethernet Network Interface Collection", ids...)
	case SystemPath + "/NetworkInterfaces":
		if b.ethOnly {
			return nil
		}
		var ids []string
		for _, n := range hw.NICs {
			ids = append(ids, SystemPath+"/NetworkInterfaces/"+n.Name)
		}
		return collection(path, "#NetworkInterfaceCollection.NetworkInterfaceCollection", "Network Interface Collection", ids...)
	case "/redfish/v1/Managers":
		return collection(path, "#ManagerCollection.ManagerCollection", "Manager Collection", ManagerPath)
	case ManagerPath:
		m := map[string]any{"@odata.id": path, "@odata.type": "#Manager.v1_10_0.Manager", "Id": "1", "Name": "Manager",
			"ManagerType": "BMC", "FirmwareVersion": b.version("BMC"), "Model": "Emulated BMC",
			"Status":       map[string]string{"State": "Enabled", "Health": "OK"},
			"VirtualMedia": ref(ManagerPath + "/VirtualMedia"),
			"Links":        map[string]any{"ManagerForServers": []map[string]string{ref(SystemPath)}},
			"Actions": map[string]any{"#Manager.Reset": map[string]any{"target": ManagerPath + "/Actions/Manager.Reset",
				"ResetType@Redfish.AllowableValues": []string{"GracefulRestart", "ForceRestart"}}}}
		if b.noMedia {
			delete(m, "VirtualMedia")
		}
		return m
	case ManagerPath + "/VirtualMedia":
		return collection(path, "#VirtualMediaCollection.VirtualMediaCollection", "Virtual Media Services", MediaPath)
	case MediaPath:
		return map[string]any{"@odata.id": path, "@odata.type": "#VirtualMedia.v1_3_0.VirtualMedia", "Id": "CD", "Name": "Virtual CD",
			"MediaTypes": []string{"CD", "DVD"}, "ConnectedVia": map[bool]string{true: "URI", false: "NotConnected"}[b.media.Inserted],
			"Inserted": b.media.Inserted, "Image": nullIfEmpty(b.media.Image), "ImageName": imageName(b.media.Image), "WriteProtected": true,
			"Actions": map[string]any{
				"#VirtualMedia.InsertMedia": map[string]string{"target": MediaPath + "/Actions/VirtualMedia.InsertMedia"},
				"#VirtualMedia.EjectMedia":  map[string]string{"target": MediaPath + "/Actions/VirtualMedia.EjectMedia"},
			}}
	case "/redfish/v1/Chassis":
		return collection(path, "#ChassisCollection.ChassisCollection", "Chassis Collection", ChassisPath)
	case ChassisPath:
		return map[string]any{"@odata.id": path, "@odata.type": "#Chassis.v1_14_0.Chassis", "Id": "1", "Name": "Chassis",
			"ChassisType": "RackMount", "Manufacturer": hw.Manufacturer, "Model": hw.Model, "SerialNumber": hw.SerialNumber,
			"PowerState": b.power, "Status": map[string]string{"State": "Enabled", "Health": "OK"},
			"Links": map[string]any{"ComputerSystems": []map[string]string{ref(SystemPath)}, "ManagedBy": []map[string]string{ref(ManagerPath)}}}
	}
	return b.member(path)
}

// member is the GET answer for a member of a collection whose members
// depend on the hardware (sessions, processors, drives, NICs), or nil. The
// caller holds b.mu.
func (b *BMC) member(path string) any {
	hw := b.Hardware
	if strings.HasPrefix(path, sessionsURI+"/") {
		id := strings.TrimPrefix(path, sessionsURI+"/")
		if a := b.sessions[id]; a != nil {
			return map[string]any{"@odata.id": path, "@odata.type": "#Session.v1_3_0.Session", "Id": id, "Name": "User Session", "UserName": a.user}
		}
		return nil
	}
	for i := 0; i < hw.CPUs; i++ {
		if path == fmt.Sprintf("%s/Processors/CPU%d", SystemPath, i) {
			return map[string]any{"@odata.id": path, "@odata.type": "#Processor.v1_11_0.Processor", "Id": fmt.Sprintf("CPU%d", i),
				"Name": fmt.Sprintf("CPU%d", i), "Socket": fmt.Sprintf("CPU%d", i), "ProcessorType": "CPU", "ProcessorArchitecture": "x86",
				"InstructionSet": "x86-64", "Manufacturer": hw.Manufacturer, "Model": hw.CPUModel, "MaxSpeedMHz": 2400,
				"TotalCores": hw.CoresPerCPU, "TotalThreads": 2 * hw.CoresPerCPU, "Status": map[string]string{"State": "Enabled", "Health": "OK"}}
		}
	}
	for i, g := range hw.GPUs {
		if path == fmt.Sprintf("%s/Processors/GPU%d", SystemPath, i) {
			return map[string]any{"@odata.id": path, "@odata.type": "#Processor.v1_11_0.Processor", "Id": fmt.Sprintf("GPU%d", i),
				"Name": fmt.Sprintf("GPU%d", i), "ProcessorType": "GPU", "Manufacturer": g.Manufacturer, "Model": g.Model,
				"Status": map[string]string{"State": "Enabled", "Health": "OK"}}
		}
	}
	for _, d := range hw.Disks {
		if path == SystemPath+"/Storage/1/Drives/"+d.Name {
			media := "SSD"
			if d.Rotational {
				media = "HDD"
			}
			return map[string]any{"@odata.id": path, "@odata.type": "#Drive.v1_9_0.Drive", "Id": d.Name, "Name": d.Name,
				"CapacityBytes": d.SizeBytes, "MediaType": media, "Protocol": "SATA", "Model": "Emulated Disk",
				"SerialNumber": hw.SerialNumber + "-" + d.Name, "Status": map[string]string{"State": "Enabled", "Health": "OK"}}
		}
	}
	for _, n := range hw.NICs {
		adapter := ChassisPath + "/NetworkAdapters/" + n.Name
		ok := map[string]string{"State": "Enabled", "Health": "OK"}
		switch {
		case b.ethOnly:
		case path == SystemPath+"/NetworkInterfaces/"+n.Name || strings.HasPrefix(path, adapter):
			return b.networkAdapter(path, adapter, n, ok)
		}
		if path == SystemPath+"/EthernetInterfaces/"+n.Name {
			e := map[string]any{"@odata.id": path, "@odata.type": "#EthernetInterface.v1_6_0.EthernetInterface", "Id": n.Name, "Name": n.Name,
				"MACAddress": n.MAC, "PermanentMACAddress": n.MAC, "SpeedMbps": n.SpeedMbps, "LinkStatus": "LinkUp",
				"Status": map[string]string{"State": "Enabled", "Health": "OK"}}
			if n.IP != "" {
				e["IPv4Addresses"] = []map[string]string{{"Address": n.IP, "AddressOrigin": "DHCP"}}
			}
			return e
		}
	}
	return nil
}

// networkAdapter answers for a NIC's NetworkInterface, its chassis
// NetworkAdapter and its port, where bmclib's inventory reads NICs.
func (b *BMC) networkAdapter(path, adapter string, n NIC, ok map[string]string) any {
	hw := b.Hardware
	switch path {
	case SystemPath + "/NetworkInterfaces/" + n.Name:
		return map[string]any{"@odata.id": path, "@odata.type": "#NetworkInterface.v1_2_0.NetworkInterface", "Id": n.Name, "Name": n.Name,
			"Status": ok, "Links": map[string]any{"NetworkAdapter": ref(adapter)}}
	case adapter:
		return map[string]any{"@odata.id": path, "@odata.type": "#NetworkAdapter.v1_5_0.NetworkAdapter", "Id": n.Name, "Name": n.Name,
			"Manufacturer": hw.Manufacturer, "Model": "Emulated NIC", "SerialNumber": hw.SerialNumber + "-" + n.Name, "Status": ok,
			"NetworkPorts": ref(adapter + "/NetworkPorts")}
	case adapter + "/NetworkPorts":
		return collection(path, "#NetworkPortCollection.NetworkPortCollection", "Network Port Collection", adapter+"/NetworkPorts/1")
	case adapter + "/NetworkPorts/1":
		return map[string]any{"@odata.id": path, "@odata.type": "#NetworkPort.v1_2_0.NetworkPort", "Id": n.Name, "Name": n.Name,
			"PhysicalPortNumber": "1", "LinkStatus": "Up", "ActiveLinkTechnology": "Ethernet",
			"AssociatedNetworkAddresses": []string{n.MAC}, "CurrentLinkSpeedMbps": n.SpeedMbps, "Status": ok}
	}
	return nil
}

func (b *BMC) system() map[string]any {
	hw := b.Hardware
	if b.erasing && b.power == "On" {
		b.eraseSeen = true
	}
	sys := map[string]any{
		"@odata.id": SystemPath, "@odata.type": "#ComputerSystem.v1_13_0.ComputerSystem",
		"Id": "1", "Name": "System", "SystemType": "Physical",
		"Manufacturer": hw.Manufacturer, "Model": hw.Model, "SerialNumber": hw.SerialNumber, "BiosVersion": b.version("BIOS"), "Bios": ref(BIOSPath),
		"UUID":       "00000000-0000-0000-0000-" + fmt.Sprintf("%012x", len(hw.SerialNumber)),
		"PowerState": b.power, "HostName": hw.HostName,
		"Status": map[string]string{"State": "Enabled", "Health": cmp.Or(b.health, "OK"), "HealthRollup": cmp.Or(b.rollup, "OK")},
		"Boot": map[string]any{
			"BootSourceOverrideEnabled": b.boot.Enabled, "BootSourceOverrideTarget": b.boot.Target,
			"BootSourceOverrideMode":                           b.boot.Mode,
			"BootSourceOverrideTarget@Redfish.AllowableValues": bootTargets,
		},
		"ProcessorSummary":   map[string]any{"Count": hw.CPUs, "Model": hw.CPUModel, "Status": map[string]string{"State": "Enabled", "Health": "OK"}},
		"MemorySummary":      map[string]any{"TotalSystemMemoryGiB": hw.MemoryGiB, "Status": map[string]string{"State": "Enabled", "Health": "OK"}},
		"Processors":         ref(SystemPath + "/Processors"),
		"Memory":             ref(SystemPath + "/Memory"),
		"Storage":            ref(SystemPath + "/Storage"),
		"EthernetInterfaces": ref(SystemPath + "/EthernetInterfaces"),
		"Links":              map[string]any{"Chassis": []map[string]string{ref(ChassisPath)}, "ManagedBy": []map[string]string{ref(ManagerPath)}},
		"Actions": map[string]any{"#ComputerSystem.Reset": map[string]any{
			"target":                            SystemPath + "/Actions/ComputerSystem.Reset",
			"ResetType@Redfish.AllowableValues": []string{"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "PowerCycle"},
		}},
	}
	if !b.ethOnly {
		sys["NetworkInterfaces"] = ref(SystemPath + "/NetworkInterfaces")
	}
	return sys
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func imageName(url string) string {
	if i := strings.LastIndex(url, "/"); i >= 0 {
		return url[i+1:]
	}
	return url
}
