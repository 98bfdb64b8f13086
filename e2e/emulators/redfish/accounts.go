package redfish

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Paths of the account service.
const (
	AccountServicePath = "/redfish/v1/AccountService"
	AccountsPath       = AccountServicePath + "/Accounts"
)

// account is one BMC user: what AccountService lists, and whom the BMC
// lets in.
type account struct {
	id, user, password, role string
	enabled                  bool
}

// accountFor is the enabled account with these credentials, or nil. The
// caller holds b.mu.
func (b *BMC) accountFor(user, password string) *account {
	for _, a := range b.accounts {
		if a.enabled && a.user == user && a.password == password {
			return a
		}
	}
	return nil
}

func (b *BMC) accountByID(id string) *account {
	for _, a := range b.accounts {
		if a.id == id {
			return a
		}
	}
	return nil
}

// addAccount adds an account in the first free slot. The caller holds
// b.mu.
func (b *BMC) addAccount(user, password, role string) *account {
	id := 1
	for b.accountByID(strconv.Itoa(id)) != nil {
		id++
	}
	a := &account{id: strconv.Itoa(id), user: user, password: password, role: role, enabled: true}
	b.accounts = append(b.accounts, a)
	return a
}

// accountResource is the GET answer for an account service path, or nil.
// The caller holds b.mu.
func (b *BMC) accountResource(path string) any {
	switch path {
	case AccountServicePath:
		return map[string]any{"@odata.id": path, "@odata.type": "#AccountService.v1_10_0.AccountService", "Id": "AccountService",
			"Name": "Account Service", "ServiceEnabled": true, "Accounts": ref(AccountsPath)}
	case AccountsPath:
		var ids []string
		for _, a := range b.accounts {
			ids = append(ids, AccountsPath+"/"+a.id)
		}
		return collection(path, "#ManagerAccountCollection.ManagerAccountCollection", "Accounts Collection", ids...)
	}
	if id, ok := strings.CutPrefix(path, AccountsPath+"/"); ok {
		if a := b.accountByID(id); a != nil {
			return map[string]any{"@odata.id": path, "@odata.type": "#ManagerAccount.v1_8_0.ManagerAccount", "Id": a.id, "Name": "User Account",
				"UserName": a.user, "RoleId": a.role, "Enabled": a.enabled, "Locked": false}
		}
	}
	return nil
}

// serveAccounts creates, changes and deletes accounts; whoever asks must
// be an Administrator, and none deletes or disables the account it asks
// with. The caller holds b.mu.
func (b *BMC) serveAccounts(w http.ResponseWriter, r *http.Request, path string, caller *account) bool {
	id, one := strings.CutPrefix(path, AccountsPath+"/")
	if path != AccountsPath && !one {
		return false
	}
	if r.Method == http.MethodGet {
		return false
	}
	if caller == nil || caller.role != "Administrator" {
		writeError(w, http.StatusForbidden, "only an Administrator manages accounts")
		return true
	}
	switch {
	case !one && r.Method == http.MethodPost:
		var in struct{ UserName, Password, RoleId string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.UserName == "" || in.Password == "" {
			writeError(w, http.StatusBadRequest, "a new account needs a UserName and a Password")
			return true
		}
		a := b.addAccount(in.UserName, in.Password, cmp.Or(in.RoleId, "Operator"))
		b.record("Account %s added", a.user)
		w.Header().Set("Location", AccountsPath+"/"+a.id)
		writeJSON(w, http.StatusCreated, b.accountResource(AccountsPath+"/"+a.id))
	case one && r.Method == http.MethodDelete:
		a := b.accountByID(id)
		if a == nil {
			writeError(w, http.StatusNotFound, "no account "+id)
			return true
		}
		if a == caller {
			writeError(w, http.StatusConflict, "an account cannot delete itself")
			return true
		}
		b.accounts = deleteAccount(b.accounts, a)
		b.record("Account %s deleted", a.user)
		w.WriteHeader(http.StatusNoContent)
	case one && r.Method == http.MethodPatch:
		b.patchAccount(w, r, id, caller)
	default:
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s is not allowed", r.Method, path))
	}
	return true
}

func (b *BMC) patchAccount(w http.ResponseWriter, r *http.Request, id string, caller *account) {
	a := b.accountByID(id)
	if a == nil {
		writeError(w, http.StatusNotFound, "no account "+id)
		return
	}
	var in struct {
		Password *string
		Enabled  *bool
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "malformed PATCH: "+err.Error())
		return
	}
	if in.Enabled != nil && !*in.Enabled && a == caller {
		writeError(w, http.StatusConflict, "an account cannot disable itself")
		return
	}
	if in.Password != nil {
		a.password = *in.Password
		if a.user == b.Username {
			b.Password = a.password
		}
		b.record("Account %s password changed", a.user)
	}
	if in.Enabled != nil {
		a.enabled = *in.Enabled
		b.record("Account %s enabled %t", a.user, a.enabled)
	}
	w.WriteHeader(http.StatusNoContent)
}

func deleteAccount(as []*account, a *account) []*account {
	out := as[:0]
	for _, x := range as {
		if x != a {
			out = append(out, x)
		}
	}
	return out
}

// Accounts are the BMC's enabled accounts' user names, in slot order.
func (b *BMC) Accounts() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, a := range b.accounts {
		if a.enabled {
			out = append(out, a.user)
		}
	}
	return out
}

// AddAccountInBand adds an Administrator account from the host's
// operating system, as a tenant with root does over the in-band
// interface (ipmitool user set name, or the vendor's tool).
func (b *BMC) AddAccountInBand(user, password string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addAccount(user, password, "Administrator")
}

// SetPasswordInBand changes an account's password from the host's
// operating system, as an administrator rotating it does: the old password
// is refused from then on.
func (b *BMC) SetPasswordInBand(user, password string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.accounts {
		if a.user == user {
			a.password = password
		}
	}
}
