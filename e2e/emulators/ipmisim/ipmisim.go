// Package ipmisim runs OpenIPMI's ipmi_sim as an IPMI BMC on 127.0.0.1 for
// tests and the demo: IPMI 2.0 (lanplus) with an admin user, and a chassis
// control script so that power and boot device really change and can be
// read back. ipmi_sim and ipmitool come from Debian's openipmi and ipmitool
// packages, which hack/tools.sh installs.
//
// It is test infrastructure: nothing in the shipped binaries imports it.
package ipmisim

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hostfleet/hostfleet/agent/bmc"
)

// chassis is ipmi_sim's chassis control program: <mc> get|set|check <parm>
// [<value>]...; state lives in files beside it. A soft shutdown (the ACPI
// power button) powers the chassis off, as an operating system that obeys
// it does, unless the file ignore-shutdown exists. With a latency (file
// latency, in milliseconds), a power change lands that long after it was
// set, and until then the old state is read, as IPMI reports no change
// under way. With a network erase (file erase-after, in milliseconds), a
// power-on that boots from the network (boot pxe, consumed by the boot)
// runs the erase image, which powers the chassis off that long after, and
// not before its power was read on once (a real erase takes minutes:
// whoever polls sees it run).
const chassis = `#!/bin/sh
dir="$(dirname "$0")"
op="$2"; shift 2
now() { date +%s%3N; }
settle() {
  [ -f "$dir/target" ] || return 0
  if [ "$(now)" -ge "$(cat "$dir/settle")" ]; then mv "$dir/target" "$dir/power"; fi
}
erased() {
  [ -f "$dir/erase-at" ] || return 0
  if [ -f "$dir/erase-seen" ] && [ "$(now)" -ge "$(cat "$dir/erase-at")" ] && [ "$(cat "$dir/power")" = 1 ]; then
    rm -f "$dir/erase-at" "$dir/erase-seen"; echo 0 > "$dir/power"; echo "erased" >> "$dir/log"
  fi
}
seen() {
  if [ -f "$dir/erase-at" ] && [ "$(cat "$dir/power" 2>/dev/null)" = 1 ]; then : > "$dir/erase-seen"; fi
}
set_power() {
  # A chassis already (or on its way) where it is asked to go does nothing:
  # a power-on sent twice (the client retries a slow answer) boots once.
  [ "$(cat "$dir/target" 2>/dev/null || cat "$dir/power" 2>/dev/null || echo 0)" = "$1" ] && return 0
  rm -f "$dir/erase-at" "$dir/erase-seen"
  lat="$(cat "$dir/latency" 2>/dev/null || echo 0)"
  if [ "$1" = 1 ] && [ "$(cat "$dir/boot" 2>/dev/null)" = pxe ]; then
    echo default > "$dir/boot"
    if [ -f "$dir/erase-after" ]; then echo $(( $(now) + lat + $(cat "$dir/erase-after") )) > "$dir/erase-at"; fi
  fi
  if [ "$lat" -gt 0 ]; then
    echo $(( $(now) + lat )) > "$dir/settle"; echo "$1" > "$dir/target"
  else
    rm -f "$dir/target"; echo "$1" > "$dir/power"
  fi
}
case "$op" in
check) exit 0 ;;
get)
  for p in "$@"; do
    case "$p" in
      power) settle; erased; echo "power:$(cat "$dir/power" 2>/dev/null || echo 0)"; seen ;;
      boot) echo "boot:$(cat "$dir/boot" 2>/dev/null || echo default)" ;;
    esac
  done ;;
set)
  while [ $# -gt 0 ]; do
    p="$1"; v="$2"; shift 2
    case "$p" in
      power) set_power "$v" ;;
      shutdown) [ "$v" = 1 ] && [ ! -f "$dir/ignore-shutdown" ] && set_power 0 ;;
      boot) echo "$v" > "$dir/boot" ;;
    esac
    echo "$p $v" >> "$dir/log"
  done ;;
esac
`

// BMC is one running ipmi_sim.
type BMC struct {
	Username, Password string
	Host               string
	Port               int
	dir                string
	cmd                *exec.Cmd
}

// Available says whether ipmi_sim and ipmitool are installed.
func Available() error {
	for _, bin := range []string{"ipmi_sim", "ipmitool"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s is not installed: run hack/tools.sh ipmi (Debian packages openipmi and ipmitool)", bin)
		}
	}
	return nil
}

// Start runs ipmi_sim in dir on a free UDP port of 127.0.0.1 and waits
// until it answers.
func Start(dir, username, password string, opts ...Option) (*BMC, error) {
	return StartAt(dir, "127.0.0.1", username, password, opts...)
}

// StartAt is Start on another address of this machine (one that
// containers reach, such as a container network's gateway).
func StartAt(dir, host, username, password string, opts ...Option) (*BMC, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if err := Available(); err != nil {
		return nil, err
	}
	port, err := freeUDPPort(host)
	if err != nil {
		return nil, err
	}
	b := &BMC{Username: username, Password: password, Host: host, Port: port, dir: dir}
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "chassis.sh")
	lan := fmt.Sprintf(`name "sim"
set_working_mc 0x20
  startlan 1
    addr %s %d
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
  endlan
  chassis_control "%s 0x20"
  user 2 true "%s" "%s" admin 10 none md2 md5 straight
`, host, port, script, username, password)
	emu := "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\n"
	if cfg.fru != nil {
		emu += fruCommand(cfg.fru)
	}
	emu += "mc_enable 0x20\n"
	for name, data := range map[string]string{"lan.conf": lan, "cmds.emu": emu, "chassis.sh": chassis, "power": "0\n"} {
		mode := os.FileMode(0o644)
		if name == "chassis.sh" {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), mode); err != nil {
			return nil, err
		}
	}
	log, err := os.Create(filepath.Join(dir, "ipmi_sim.log"))
	if err != nil {
		return nil, err
	}
	b.cmd = exec.Command("ipmi_sim", "-c", filepath.Join(dir, "lan.conf"), "-f", filepath.Join(dir, "cmds.emu"), "-s", state, "-n")
	b.cmd.Stdout, b.cmd.Stderr = log, log
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := b.cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start ipmi_sim: %w", err)
	}
	_ = log.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if bmc.Ping(ctx, b.Address()) == nil {
			return b, nil
		}
		if ctx.Err() != nil {
			b.Close()
			return nil, fmt.Errorf("ipmi_sim on port %d does not answer (see %s)", port, filepath.Join(dir, "ipmi_sim.log"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Address is host:port.
func (b *BMC) Address() string { return net.JoinHostPort(b.Host, strconv.Itoa(b.Port)) }

// Close stops ipmi_sim.
func (b *BMC) Close() {
	if b.cmd != nil && b.cmd.Process != nil {
		_ = b.cmd.Process.Kill()
		_ = b.cmd.Wait()
	}
}

// Power is the chassis power, as the control script last set it (a change
// under way, with a latency, not yet).
func (b *BMC) Power() bool { return strings.TrimSpace(b.read("power")) == "1" }

// IgnoreShutdown makes the emulated operating system ignore (true) or obey
// (false) a soft shutdown.
func (b *BMC) IgnoreShutdown(ignore bool) error {
	path := filepath.Join(b.dir, "ignore-shutdown")
	if !ignore {
		return ignoreMissing(os.Remove(path))
	}
	return os.WriteFile(path, nil, 0o644)
}

// ignoreMissing ignores a file that is already gone.
func ignoreMissing(err error) error {
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

// EraseByNetwork makes a power-on that boots from the network run an erase
// image that powers the chassis off after d, as the cluster's PXE server
// serving one would. Without it a network boot never powers off by itself.
func (b *BMC) EraseByNetwork(d time.Duration) error {
	return os.WriteFile(filepath.Join(b.dir, "erase-after"), []byte(strconv.FormatInt(d.Milliseconds(), 10)+"\n"), 0o644)
}

// SetLatency makes every later power change land d after it is set (zero:
// at once), as a server takes seconds to power on or off.
func (b *BMC) SetLatency(d time.Duration) error {
	return os.WriteFile(filepath.Join(b.dir, "latency"), []byte(strconv.FormatInt(d.Milliseconds(), 10)+"\n"), 0o644)
}

// Boot is the boot device last set ("pxe", "cdrom", "default", ...).
func (b *BMC) Boot() string { return strings.TrimSpace(b.read("boot")) }

// Log is every chassis control set, in order ("power 1", "boot pxe").
func (b *BMC) Log() []string {
	var out []string
	for _, l := range strings.Split(b.read("log"), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (b *BMC) read(name string) string {
	data, _ := os.ReadFile(filepath.Join(b.dir, name))
	return string(data)
}

func freeUDPPort(host string) (int, error) {
	c, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}
