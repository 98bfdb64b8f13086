package nodes

import "syscall"

// cpuShares is the cpu.shares of a node's cgroup root: the scheduler weight
// of this process's nice value. On cgroup v1 a cgroup competes for CPU as
// one task of its shares, whatever the nice value of the tasks in it; with
// the default 1024 a node's pods together would get what one nice 0 process
// gets, and a niced test (e2e-local runs at nice -10) would not lift them.
func cpuShares() int {
	// getpriority(2) returns 20 - nice.
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return 1024
	}
	return niceWeight(20 - prio)
}

// niceWeight is the kernel's weight of a nice value (sched_prio_to_weight).
func niceWeight(nice int) int {
	weights := [40]int{
		88761, 71755, 56483, 46273, 36291, // -20 .. -16
		29154, 23254, 18705, 14949, 11916, // -15 .. -11
		9548, 7620, 6100, 4904, 3906, // -10 .. -6
		3121, 2501, 1991, 1586, 1277, // -5 .. -1
		1024, 820, 655, 526, 423, // 0 .. 4
		335, 272, 215, 172, 137, // 5 .. 9
		110, 87, 70, 56, 45, // 10 .. 14
		36, 29, 23, 18, 15, // 15 .. 19
	}
	return weights[min(max(nice, -20), 19)+20]
}
