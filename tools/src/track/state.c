// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt-track.so: what every part shares: the real functions, the
 * table, the thread's "tracker at work" mark, the bootstrap heap that
 * serves dlsym before the real allocator is known, and the clock and
 * thread id objects are stamped with.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "track.h"

struct track_real real;
struct track_state T;
__thread int track_busy __attribute__((tls_model("initial-exec")));

/* What dlsym allocates before the real functions are known. */
char track_boot_heap[TRACK_BOOT_SIZE] __attribute__((aligned(64)));
static size_t boot_used;

void *track_boot_alloc(size_t size)
{
	size_t at = __atomic_fetch_add(&boot_used, (size + 63) & ~(size_t)63,
				       __ATOMIC_RELAXED);

	if (at + size > sizeof(track_boot_heap)) {
		errno = ENOMEM;
		return NULL;
	}
	return track_boot_heap + at;	/* static: zeroed, as calloc wants */
}

uint64_t track_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static __thread pid_t my_tid __attribute__((tls_model("initial-exec")));

pid_t track_tid(void)
{
	if (!my_tid)
		my_tid = (pid_t)syscall(SYS_gettid);
	return my_tid;
}

/* In a forked child: its thread id is its own. */
void track_tid_forget(void)
{
	my_tid = 0;
}
