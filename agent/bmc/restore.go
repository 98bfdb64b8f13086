package bmc

import (
	"context"
	"fmt"
	"net/http"
)

// Restorer is a BMC that puts a host back as its firmware baselines want
// it, out of band: what a tenant with root on the host can change from its
// operating system (firmware, BIOS settings, BMC accounts).
type Restorer interface {
	FirmwareReader
	// BIOS are the current BIOS attributes.
	BIOS(ctx context.Context) (map[string]string, error)
	// StageBIOS stages attributes, applied at the system's next boot.
	StageBIOS(ctx context.Context, attrs map[string]string) error
	// Accounts are the BMC's enabled user names.
	Accounts(ctx context.Context) ([]string, error)
	// RemoveAccount deletes the BMC account of user.
	RemoveAccount(ctx context.Context, user string) error
	// Flash starts an update of component (as Firmware names it) from
	// the image at url, and returns the task to follow (Task).
	Flash(ctx context.Context, component, url string) (string, error)
	// Task is how an update task stands.
	Task(ctx context.Context, task string) (TaskState, error)
}

// TaskState is how an update task stands: running, or done, failed or
// not, with the BMC's last message.
type TaskState struct {
	Done, Failed bool
	Message      string
}

// errRedfishOnly: what only Redfish serves.
func (d *client) errRedfishOnly(what string) error {
	return fmt.Errorf("%w: %s through ipmitool; %s speaks %s", ErrUnsupported, what, d.addr.HostPort(), d.addr.Protocol)
}

// BIOS reads the system's Bios resource.
func (d *client) BIOS(ctx context.Context) (map[string]string, error) {
	if d.rf == nil {
		return nil, d.errRedfishOnly("BIOS settings")
	}
	var out map[string]string
	err := d.call(ctx, "read BIOS settings", func(ctx context.Context) error {
		b, err := d.rf.bios(ctx)
		if err != nil {
			return err
		}
		out = map[string]string{}
		for k, v := range b.Attributes {
			out[k] = fmt.Sprint(v)
		}
		return nil
	})
	return out, err
}

// StageBIOS PATCHes the Bios resource's settings object.
func (d *client) StageBIOS(ctx context.Context, attrs map[string]string) error {
	if d.rf == nil {
		return d.errRedfishOnly("BIOS settings")
	}
	return d.call(ctx, "stage BIOS settings", func(ctx context.Context) error {
		b, err := d.rf.bios(ctx)
		if err != nil {
			return err
		}
		path := b.Settings.SettingsObject.ID
		if path == "" {
			return fmt.Errorf("the BIOS at %s has no settings object to stage attributes in", d.addr.HostPort())
		}
		return d.rf.send(ctx, http.MethodPatch, path, "", map[string]any{"Attributes": attrs})
	})
}

type biosResource struct {
	Attributes map[string]any
	Settings   struct {
		SettingsObject odataRef
	} `json:"@Redfish.Settings"`
}

func (r *redfishSystem) bios(ctx context.Context) (*biosResource, error) {
	path, err := r.system(ctx)
	if err != nil {
		return nil, err
	}
	var sys struct{ Bios odataRef }
	if err := r.get(ctx, path, &sys); err != nil {
		return nil, err
	}
	if sys.Bios.ID == "" {
		return nil, fmt.Errorf("%w: the system links no Bios resource", ErrUnsupported)
	}
	b := &biosResource{}
	return b, r.get(ctx, sys.Bios.ID, b)
}

type managerAccount struct {
	ID       string `json:"@odata.id"`
	UserName string
	Enabled  bool
}

func (r *redfishSystem) accounts(ctx context.Context) ([]managerAccount, error) {
	var root struct{ AccountService odataRef }
	if err := r.get(ctx, "/redfish/v1/", &root); err != nil {
		return nil, err
	}
	if root.AccountService.ID == "" {
		return nil, fmt.Errorf("%w: the BMC serves no AccountService", ErrUnsupported)
	}
	var as struct{ Accounts odataRef }
	if err := r.get(ctx, root.AccountService.ID, &as); err != nil {
		return nil, err
	}
	return members[managerAccount](ctx, r, as.Accounts.ID)
}

// Accounts lists AccountService's accounts that are enabled.
func (d *client) Accounts(ctx context.Context) ([]string, error) {
	if d.rf == nil {
		return nil, d.errRedfishOnly("BMC accounts")
	}
	var out []string
	err := d.call(ctx, "read BMC accounts", func(ctx context.Context) error {
		as, err := d.rf.accounts(ctx)
		out = []string{}
		for _, a := range as {
			if a.Enabled && a.UserName != "" {
				out = append(out, a.UserName)
			}
		}
		return err
	})
	return out, err
}

// RemoveAccount deletes user's ManagerAccount; one already gone is removed.
func (d *client) RemoveAccount(ctx context.Context, user string) error {
	if d.rf == nil {
		return d.errRedfishOnly("BMC accounts")
	}
	return d.call(ctx, "remove BMC account", func(ctx context.Context) error {
		as, err := d.rf.accounts(ctx)
		if err != nil {
			return err
		}
		for _, a := range as {
			if a.UserName == user {
				return d.rf.send(ctx, http.MethodDelete, a.ID, "", nil)
			}
		}
		return nil
	})
}

// Flash posts UpdateService.SimpleUpdate with the image and the
// FirmwareInventory member of component as its one target.
func (d *client) Flash(ctx context.Context, component, url string) (string, error) {
	if d.rf == nil {
		return "", d.errRedfishOnly("firmware updates")
	}
	var task string
	err := d.call(ctx, "update firmware "+component, func(ctx context.Context) error {
		var err error
		task, err = d.rf.flash(ctx, component, url)
		return err
	})
	return task, err
}

func (r *redfishSystem) flash(ctx context.Context, component, url string) (string, error) {
	var root struct{ UpdateService odataRef }
	if err := r.get(ctx, "/redfish/v1/", &root); err != nil {
		return "", err
	}
	if root.UpdateService.ID == "" {
		return "", fmt.Errorf("%w: the BMC serves no UpdateService", ErrUnsupported)
	}
	var us struct {
		FirmwareInventory odataRef
		Actions           struct {
			SimpleUpdate struct {
				Target string `json:"target"`
			} `json:"#UpdateService.SimpleUpdate"`
		}
	}
	if err := r.get(ctx, root.UpdateService.ID, &us); err != nil {
		return "", err
	}
	if us.Actions.SimpleUpdate.Target == "" {
		return "", fmt.Errorf("%w: the UpdateService has no SimpleUpdate action", ErrUnsupported)
	}
	items, err := members[struct {
		OdataID  string `json:"@odata.id"`
		ID, Name string
	}](ctx, r, us.FirmwareInventory.ID)
	if err != nil {
		return "", err
	}
	target := ""
	for _, it := range items {
		if ComponentName(it.ID, it.Name) == component {
			target = it.OdataID
			break
		}
	}
	if target == "" {
		return "", fmt.Errorf("the FirmwareInventory has no member for %s", component)
	}
	loc, err := r.sendFor(ctx, http.MethodPost, us.Actions.SimpleUpdate.Target, map[string]any{"ImageURI": url, "Targets": []string{target}})
	if err != nil {
		return "", err
	}
	if loc == "" {
		return "", fmt.Errorf("SimpleUpdate of %s answered without the task to follow (no Location)", component)
	}
	return loc, nil
}

// Task reads an update task: Completed is done; Exception, Killed and
// Cancelled are failed.
func (d *client) Task(ctx context.Context, task string) (TaskState, error) {
	if d.rf == nil {
		return TaskState{}, d.errRedfishOnly("firmware updates")
	}
	var st TaskState
	err := d.call(ctx, "read update task", func(ctx context.Context) error {
		var t struct {
			TaskState string
			Messages  []struct{ Message string }
		}
		if err := d.rf.get(ctx, task, &t); err != nil {
			return err
		}
		switch t.TaskState {
		case "Completed":
			st.Done = true
		case "Exception", "Killed", "Cancelled":
			st.Done, st.Failed = true, true
		}
		if n := len(t.Messages); n > 0 {
			st.Message = t.Messages[n-1].Message
		}
		return nil
	})
	return st, err
}
