// Command pause is the nodes' pod sandbox program (e2e/harness/nodes): it
// holds a pod's namespaces, reaps the zombies it inherits as PID 1, and
// exits on SIGINT or SIGTERM. Built static, it is the whole of the pause
// image the nodes' containerd runs.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
