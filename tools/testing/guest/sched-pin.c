// SPDX-License-Identifier: GPL-2.0
/*
 * sched-pin: hold perf's scheduler hooks and the fault events' static
 * keys on for the life of a refcnt-vm guest under TCG.
 *
 * Why: a counting session (RCB_COUNT_START) opens task-bound perf
 * events. The first one switches the kernel's perf_sched_events static
 * key on, and a second after the last one closes it goes off again:
 * each switch rewrites __schedule() with text_poke_bp() while the other
 * CPUs run it. On 72 vCPUs QEMU 7.2's multi-threaded TCG has been seen
 * to run the breakpoint of that rewrite after the kernel finished it and
 * synchronised every CPU (Oops: int3 in __schedule, on the patching CPU
 * itself), which real CPUs never do. One disabled task event of each
 * kind, held from boot, makes that switch happen once, before anything
 * else runs. It never counts: nothing a test measures changes.
 *
 * The switch itself can meet the same fault (seen once at boot, with a
 * program running on another CPU): the guest's init runs this first,
 * before anything else, and waits. A child opens the events and stays,
 * holding them, until poweroff; the parent returns once they are open,
 * so the rewrite happens while nothing else runs. One line if the
 * kernel refuses an event.
 */
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int open_disabled(unsigned long long config)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = config;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.sample_period = 1;
	return syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
}

int main(void)
{
	static const unsigned long long configs[] = {
		PERF_COUNT_SW_PAGE_FAULTS_MIN,
		PERF_COUNT_SW_PAGE_FAULTS_MAJ,
	};
	unsigned int i;
	int done[2];
	char c = 0;

	if (pipe(done))
		return 1;
	switch (fork()) {
	case -1:
		return 1;
	case 0:
		close(done[0]);
		for (i = 0; i < sizeof(configs) / sizeof(configs[0]); i++)
			if (open_disabled(configs[i]) < 0)
				perror("refcnt-vm: sched-pin: perf_event_open");
		if (write(done[1], &c, 1) != 1)
			return 1;
		close(done[1]);
		for (;;)
			pause();
	default:
		close(done[1]);
		/* EOF too: the child died; the guest goes on without it. */
		return read(done[0], &c, 1) == 1 ? 0 : 1;
	}
}
