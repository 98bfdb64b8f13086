package redfish_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/stmcginnis/gofish"
	gofishredfish "github.com/stmcginnis/gofish/redfish"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
)

// firmwareImages serves /bios-<version>.bin as firmware of that version
// and /other.bin as an image that is no firmware of the component.
func firmwareImages() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v, ok := strings.CutPrefix(strings.TrimSuffix(r.URL.Path, ".bin"), "/bios-"); ok {
			_, _ = w.Write(redfish.FirmwareImage(v))
			return
		}
		_, _ = w.Write([]byte("not firmware"))
	}))
}

// TestFirmwareBIOSAndAccounts: a real Redfish client (gofish) reads the
// firmware inventory, updates the BIOS with SimpleUpdate (a task that
// takes time, then reads back the new version; an image that is no
// firmware fails its task), stages BIOS settings applied at the next
// boot, and lists and deletes the accounts a tenant added in-band.
func TestFirmwareBIOSAndAccounts(t *testing.T) {
	g := NewWithT(t)
	images := firmwareImages()
	defer images.Close()
	b := redfish.Start(redfish.Options{TLS: true, UpdateTime: time.Hour})
	defer b.Close()
	c, err := gofish.Connect(gofish.ClientConfig{Endpoint: b.URL(), Username: "admin", Password: "password", Insecure: true, BasicAuth: true})
	g.Expect(err).NotTo(HaveOccurred())
	defer c.Logout()

	t.Log("the inventory, as FirmwareInventory, the system's BiosVersion and the manager's FirmwareVersion say it")
	us, err := c.Service.UpdateService()
	g.Expect(err).NotTo(HaveOccurred())
	inventory := func() map[string]string {
		fws, err := us.FirmwareInventories()
		g.Expect(err).NotTo(HaveOccurred())
		out := map[string]string{}
		for _, fw := range fws {
			out[fw.ID] = fw.Version
		}
		return out
	}
	g.Expect(inventory()).To(Equal(map[string]string{"BIOS": "1.2.3", "BMC": "1.0.0", "NIC.1": "22.31.6"}))

	t.Log("a tenant flashes an older BIOS in-band; SimpleUpdate puts the wanted one back, through a task")
	g.Expect(b.FlashInBand("BIOS", "1.0.0")).To(Succeed())
	g.Expect(inventory()).To(HaveKeyWithValue("BIOS", "1.0.0"))
	task := simpleUpdate(g, b, images.URL+"/bios-1.2.3.bin")
	g.Expect(taskState(g, b, task)).To(Equal("Running"))
	g.Expect(inventory()).To(HaveKeyWithValue("BIOS", "1.0.0"), "not before the task is done")
	b.FinishUpdates()
	g.Expect(taskState(g, b, task)).To(Equal("Completed"))
	g.Expect(inventory()).To(HaveKeyWithValue("BIOS", "1.2.3"))
	systems, err := c.Service.Systems()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(systems[0].BIOSVersion).To(Equal("1.2.3"))

	t.Log("an image that is no firmware for the target fails its task; the version stays")
	task = simpleUpdate(g, b, images.URL+"/other.bin")
	g.Expect(taskState(g, b, task)).To(Equal("Running"))
	b.FinishUpdates()
	g.Expect(taskState(g, b, task)).To(Equal("Exception"))
	g.Expect(inventory()).To(HaveKeyWithValue("BIOS", "1.2.3"))

	t.Log("BIOS settings: a tenant turned Secure Boot off in-band; the settings object stages it back, applied at the next boot")
	b.SetBIOSInBand("SecureBoot", "Disabled")
	bios, err := systems[0].Bios()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bios.Attributes).To(HaveKeyWithValue("SecureBoot", "Disabled"))
	g.Expect(bios.UpdateBiosAttributes(gofishredfish.SettingsAttributes{"SecureBoot": "Enabled"})).To(Succeed())
	current, pending := b.BIOS()
	g.Expect(current).To(HaveKeyWithValue("SecureBoot", "Disabled"))
	g.Expect(pending).To(Equal(map[string]string{"SecureBoot": "Enabled"}))
	g.Expect(b.ResetForTest("On")).To(Succeed())
	current, pending = b.BIOS()
	g.Expect(current).To(HaveKeyWithValue("SecureBoot", "Enabled"))
	g.Expect(pending).To(BeEmpty())
	g.Expect(bios.UpdateBiosAttributes(gofishredfish.SettingsAttributes{"NoSuchSetting": "x"})).NotTo(Succeed(), "not in the registry")

	t.Log("accounts: a tenant adds one in-band, and gets in with it; the administrator's client lists and deletes it")
	b.AddAccountInBand("ghost", "s3cret")
	g.Expect(b.Accounts()).To(Equal([]string{"admin", "ghost"}))
	as, err := c.Service.AccountService()
	g.Expect(err).NotTo(HaveOccurred())
	accounts, err := as.Accounts()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(accounts).To(HaveLen(2))
	byName := map[string]*gofishredfish.ManagerAccount{}
	for _, a := range accounts {
		byName[a.UserName] = a
	}
	ghost, admin := byName["ghost"], byName["admin"]
	g.Expect(ghost).NotTo(BeNil())
	g.Expect(admin).NotTo(BeNil())
	g.Expect(get(b, "ghost", "s3cret", redfish.SystemPath)).To(Equal(http.StatusOK), "in with the tenant's account")
	g.Expect(c.Delete(ghost.ODataID)).Error().NotTo(HaveOccurred())
	g.Expect(b.Accounts()).To(Equal([]string{"admin"}))
	g.Expect(get(b, "ghost", "s3cret", redfish.SystemPath)).To(Equal(http.StatusUnauthorized))
	g.Expect(c.Delete(admin.ODataID)).Error().To(HaveOccurred(), "an account cannot delete itself")
}

// simpleUpdate posts a SimpleUpdate of the BIOS and returns its task's
// path (the Location).
func simpleUpdate(g Gomega, b *redfish.BMC, image string) string {
	body := `{"ImageURI":"` + image + `","Targets":["` + redfish.InventoryPath + `/BIOS"]}`
	req, err := http.NewRequest(http.MethodPost, b.URL()+redfish.SimpleUpdatePath, strings.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	req.SetBasicAuth("admin", "password")
	resp, err := insecure.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusAccepted))
	return resp.Header.Get("Location")
}

func taskState(g Gomega, b *redfish.BMC, path string) string {
	req, err := http.NewRequest(http.MethodGet, b.URL()+path, nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.SetBasicAuth("admin", "password")
	resp, err := insecure.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var task struct{ TaskState string }
	g.Expect(json.NewDecoder(resp.Body).Decode(&task)).To(Succeed())
	return task.TaskState
}

func get(b *redfish.BMC, user, pass, path string) int {
	req, _ := http.NewRequest(http.MethodGet, b.URL()+path, nil)
	req.SetBasicAuth(user, pass)
	resp, err := insecure.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// insecure is a client of the emulators' self-signed HTTPS.
var insecure = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the emulator's own certificate
