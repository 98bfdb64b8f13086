package redfish

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Paths of the firmware and BIOS resources.
const (
	UpdateServicePath = "/redfish/v1/UpdateService"
	InventoryPath     = UpdateServicePath + "/FirmwareInventory"
	SimpleUpdatePath  = UpdateServicePath + "/Actions/UpdateService.SimpleUpdate"
	TasksPath         = "/redfish/v1/TaskService/Tasks"
	BIOSPath          = SystemPath + "/Bios"
	BIOSSettingsPath  = BIOSPath + "/Settings"
)

// Component is one firmware of the server, as its FirmwareInventory lists
// it: Id ("BIOS", "BMC", "NIC.1"), Name and Version.
type Component struct {
	ID, Name, Version string
}

// DefaultFirmware is the BIOS (at the hardware's BIOSVersion), the BMC
// and one NIC.
func DefaultFirmware(biosVersion string) []Component {
	return []Component{{ID: "BIOS", Name: "BIOS", Version: biosVersion}, {ID: "BMC", Name: "BMC Firmware", Version: "1.0.0"},
		{ID: "NIC.1", Name: "Ethernet Controller eno1", Version: "22.31.6"}}
}

// DefaultBIOS are the BIOS attributes a server starts with.
func DefaultBIOS() map[string]string {
	return map[string]string{"BootMode": "Uefi", "SecureBoot": "Enabled", "PxeDev1Interface": "NIC.1", "SriovGlobalEnable": "Disabled"}
}

// firmware is the BMC's firmware, BIOS settings and update tasks.
type firmware struct {
	components []*Component
	// update is how long an update's task runs.
	update time.Duration
	tasks  map[string]*task
	// bios are the current attributes, pending those PATCHed to the
	// settings object, applied at the system's next boot.
	bios, pending map[string]string
}

// task is one SimpleUpdate under way or done.
type task struct {
	id                    string
	target                *Component
	version, failure      string
	doneAt                time.Time
	state, status, reason string
}

func newFirmware(o Options, biosVersion string) firmware {
	comps := o.Firmware
	if len(comps) == 0 {
		comps = DefaultFirmware(biosVersion)
	}
	f := firmware{update: o.UpdateTime, tasks: map[string]*task{}, bios: DefaultBIOS(), pending: map[string]string{}}
	if f.update <= 0 {
		f.update = time.Second
	}
	for _, c := range comps {
		f.components = append(f.components, &c)
	}
	return f
}

// version is a component's version ("" without it). The caller holds b.mu.
func (b *BMC) version(id string) string {
	if c := b.fw.component(id); c != nil {
		return c.Version
	}
	return ""
}

func (f *firmware) component(id string) *Component {
	for _, c := range f.components {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// settleTasks ends the tasks whose time has come: the version read back
// from then on is the image's. The caller holds b.mu.
func (b *BMC) settleTasks() {
	now := time.Now()
	for _, t := range b.fw.tasks {
		if t.state != "Running" || now.Before(t.doneAt) {
			continue
		}
		if t.failure != "" {
			t.state, t.status, t.reason = "Exception", "Critical", t.failure
			b.record("Update %s failed: %s", t.target.ID, t.failure)
			continue
		}
		t.target.Version = t.version
		t.state, t.status, t.reason = "Completed", "OK", fmt.Sprintf("%s updated to %s", t.target.ID, t.version)
		b.record("Update %s %s", t.target.ID, t.version)
	}
}

// applyBIOS applies the pending BIOS settings: the system boots. The
// caller holds b.mu.
func (b *BMC) applyBIOS() {
	if len(b.fw.pending) == 0 {
		return
	}
	maps.Copy(b.fw.bios, b.fw.pending)
	b.record("BIOS settings applied: %s", strings.Join(slices.Sorted(maps.Keys(b.fw.pending)), ","))
	b.fw.pending = map[string]string{}
}

// firmwareResource is the GET answer for a firmware, BIOS or task path, or
// nil. The caller holds b.mu.
func (b *BMC) firmwareResource(path string) any {
	switch path {
	case UpdateServicePath:
		return map[string]any{"@odata.id": path, "@odata.type": "#UpdateService.v1_11_0.UpdateService", "Id": "UpdateService",
			"Name": "Update Service", "ServiceEnabled": true, "FirmwareInventory": ref(InventoryPath),
			"Actions": map[string]any{"#UpdateService.SimpleUpdate": map[string]any{"target": SimpleUpdatePath,
				"TransferProtocol@Redfish.AllowableValues": []string{"HTTP", "HTTPS"}}}}
	case InventoryPath:
		var ids []string
		for _, c := range b.fw.components {
			ids = append(ids, InventoryPath+"/"+c.ID)
		}
		return collection(path, "#SoftwareInventoryCollection.SoftwareInventoryCollection", "Firmware Collection", ids...)
	case BIOSPath:
		return map[string]any{"@odata.id": path, "@odata.type": "#Bios.v1_2_0.Bios", "Id": "BIOS", "Name": "BIOS Configuration Current Settings",
			"Attributes": maps.Clone(b.fw.bios), "@Redfish.Settings": map[string]any{"@odata.type": "#Settings.v1_3_5.Settings",
				"SettingsObject": ref(BIOSSettingsPath), "SupportedApplyTimes": []string{"OnReset"}}}
	case BIOSSettingsPath:
		return map[string]any{"@odata.id": path, "@odata.type": "#Bios.v1_2_0.Bios", "Id": "Settings", "Name": "BIOS Configuration Pending Settings",
			"Attributes": maps.Clone(b.fw.pending)}
	}
	if id, ok := strings.CutPrefix(path, InventoryPath+"/"); ok {
		if c := b.fw.component(id); c != nil {
			return map[string]any{"@odata.id": path, "@odata.type": "#SoftwareInventory.v1_10_0.SoftwareInventory", "Id": c.ID, "Name": c.Name,
				"Version": c.Version, "Updateable": true, "Status": map[string]string{"State": "Enabled", "Health": "OK"}}
		}
	}
	if id, ok := strings.CutPrefix(path, TasksPath+"/"); ok {
		if t := b.fw.tasks[id]; t != nil {
			return t.resource()
		}
	}
	return nil
}

func (t *task) resource() map[string]any {
	percent := 0
	if t.state != "Running" {
		percent = 100
	}
	return map[string]any{"@odata.id": TasksPath + "/" + t.id, "@odata.type": "#Task.v1_7_0.Task", "Id": t.id, "Name": "Update " + t.target.ID,
		"TaskState": t.state, "TaskStatus": t.status, "PercentComplete": percent,
		"Messages": []map[string]any{{"MessageId": "Update.1.0.UpdateInProgress", "Message": t.reason}}}
}

// patchBIOSSettings stages BIOS attributes for the next boot; an unknown
// attribute is refused, as BMCs refuse what their registry lacks. The
// caller holds b.mu.
func (b *BMC) patchBIOSSettings(w http.ResponseWriter, r *http.Request) {
	var in struct{ Attributes map[string]any }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Attributes) == 0 {
		writeError(w, http.StatusBadRequest, "PATCH the BIOS settings with Attributes: name to value")
		return
	}
	for name := range in.Attributes {
		if _, ok := b.fw.bios[name]; !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("attribute %s is not in the BIOS attribute registry", name))
			return
		}
	}
	for name, v := range in.Attributes {
		b.fw.pending[name] = fmt.Sprint(v)
	}
	b.record("PATCH BIOS %s", strings.Join(slices.Sorted(maps.Keys(in.Attributes)), ","))
	w.WriteHeader(http.StatusNoContent)
}

// simpleUpdate fetches the image, as a BMC does, and starts a task that
// flashes it onto its one target after the update time: the version is
// the image's own (its "version=" line); an image without one fails the
// task, as firmware for another component does. The caller holds b.mu.
func (b *BMC) simpleUpdate(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ImageURI         string
		Targets          []string
		TransferProtocol string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.ImageURI == "" {
		writeError(w, http.StatusBadRequest, "SimpleUpdate needs an ImageURI")
		return
	}
	if len(in.Targets) != 1 {
		writeError(w, http.StatusBadRequest, "SimpleUpdate needs one of the FirmwareInventory's members in Targets")
		return
	}
	target := b.fw.component(strings.TrimPrefix(strings.TrimSuffix(in.Targets[0], "/"), InventoryPath+"/"))
	if target == nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("target %s is not in the FirmwareInventory", in.Targets[0]))
		return
	}
	b.mu.Unlock()
	version, err := imageVersion(r.Context(), in.ImageURI)
	b.mu.Lock()
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("cannot fetch image %s: %v", in.ImageURI, err))
		return
	}
	t := &task{id: fmt.Sprintf("%d", len(b.fw.tasks)+1), target: target, version: version, doneAt: time.Now().Add(b.fw.update),
		state: "Running", status: "OK", reason: "flashing " + target.ID}
	if version == "" {
		t.failure = "the image is not firmware for " + target.ID
	}
	b.fw.tasks[t.id] = t
	b.record("SimpleUpdate %s %s", target.ID, in.ImageURI)
	w.Header().Set("Location", TasksPath+"/"+t.id)
	writeJSON(w, http.StatusAccepted, t.resource())
}

// imageVersion fetches a firmware image and reads its version= line.
func imageVersion(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	// The header is in the first KiB; anything else is no firmware.
	head, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(head)) {
		if v, ok := strings.CutPrefix(line, "version="); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", nil
}

// FirmwareImage is the body of a firmware image of version for the
// emulator, as a test's HTTP server serves it.
func FirmwareImage(version string) []byte {
	return []byte("HOSTFLEET EMULATED FIRMWARE\nversion=" + version + "\n")
}

// FinishUpdates ends every update under way now, as if its time had come:
// a test that reads a task mid-way runs its BMC with a long UpdateTime,
// which a busy machine cannot outrun, then finishes it.
func (b *BMC) FinishUpdates() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.fw.tasks {
		if t.state == "Running" {
			t.doneAt = time.Now()
		}
	}
	b.settleTasks()
}

// Firmware is each component's version, by Id.
func (b *BMC) Firmware() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settleTasks()
	out := map[string]string{}
	for _, c := range b.fw.components {
		out[c.ID] = c.Version
	}
	return out
}

// BIOS are the current BIOS attributes, and those pending the next boot.
func (b *BMC) BIOS() (current, pending map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.fw.bios), maps.Clone(b.fw.pending)
}

// FlashInBand writes a component's firmware from the host's operating
// system, as a tenant with root and the vendor's tool would: the BMC's
// inventory reads the new version.
func (b *BMC) FlashInBand(id, version string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.fw.component(id)
	if c == nil {
		return fmt.Errorf("no firmware %s", id)
	}
	c.Version = version
	return nil
}

// SetBIOSInBand changes a BIOS attribute from the host's operating system
// (and the reboot after it), as a tenant with root would.
func (b *BMC) SetBIOSInBand(name, value string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fw.bios[name] = value
}
