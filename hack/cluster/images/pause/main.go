// Command pause is the sandbox ("pause") container of every pod in the test
// cluster. containerd starts it first to hold the pod's network namespace open;
// no pause image can be pulled here, so hack/cluster builds this one and
// imports it under the sandbox_image name of containerd's config. As PID 1 of
// a pod that shares its process namespace it also reaps orphaned children.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking, so none stays a zombie.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
