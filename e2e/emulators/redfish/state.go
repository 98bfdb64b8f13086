package redfish

import (
	"fmt"
	"net/http"
	"strings"
)

// Power is the system's power state: "On" or "Off", or, with a
// PowerChange latency, "PoweringOn" or "PoweringOff" while it changes.
func (b *BMC) Power() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.settle()
	return b.power
}

// BootOverride is the boot source override: enabled ("Disabled", "Once",
// "Continuous") and target ("None", "Pxe", "Hdd", "Cd", "BiosSetup").
func (b *BMC) BootOverride() (enabled, target string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.boot.Enabled, b.boot.Target
}

// Media is the virtual CD: whether inserted, its image URL, and how many
// bytes of it were fetched.
func (b *BMC) Media() (inserted bool, image string, size int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.media.Inserted, b.media.Image, b.media.Size
}

// Actions are the state-changing requests served, in order ("Reset On",
// "InsertMedia http://...", "PATCH Boot Once/Cd", ...).
func (b *BMC) Actions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.log...)
}

// Resets are the Reset actions the BMC accepted, in order ("On",
// "ForceOff", ...): the power commands a client sent that it acted on.
func (b *BMC) Resets() []string {
	var out []string
	for _, a := range b.Actions() {
		if t, ok := strings.CutPrefix(a, "Reset "); ok && !strings.Contains(t, " refused") {
			out = append(out, t)
		}
	}
	return out
}

// Repeats are the power commands the BMC accepted that found the system
// already where they lead ("On while On", "ForceOff while Off"): a command
// sent twice, or sent on a stale reading.
func (b *BMC) Repeats() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.repeats...)
}

// Traffic is how many connections the BMC accepted (each a TLS handshake
// on HTTPS) and how many requests it served.
func (b *BMC) Traffic() (connections, requests int64) {
	return b.conns.Load(), b.requests.Load()
}

// SetPowerForTest changes the power as a person at the console would.
func (b *BMC) SetPowerForTest(state string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.power, b.target = state, ""
}

// ResetForTest sends a ComputerSystem.Reset of resetType to the BMC over
// HTTP, as any client would, without looking at the power first.
func (b *BMC) ResetForTest(resetType string) error {
	req, err := http.NewRequest(http.MethodPost, b.URL()+SystemPath+"/Actions/ComputerSystem.Reset", strings.NewReader(`{"ResetType":"`+resetType+`"}`))
	if err != nil {
		return err
	}
	req.SetBasicAuth(b.Username, b.Password)
	resp, err := b.srv.Client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("reset %s: HTTP %d", resetType, resp.StatusCode)
	}
	return nil
}
