// SPDX-License-Identifier: GPL-2.0
/*
 * papi-window: the truth's windows around a PAPI program's counting
 * sessions, without changing the program. Linked into the test builds of
 * examples/papi (make papi: data_range-truth, instr_range-truth) with
 *   -Wl,--wrap=refcnt_count_open,--wrap=ioctl
 * so that the refcnt component's calls into librefcnt, and librefcnt's
 * ioctls, go through here. The window (truth-mark.h) opens as the
 * RCB_COUNT_START that makes a session returns, and is dumped as the
 * first RCB_COUNT_READ of it (PAPI_stop(), PAPI_read()) is entered: it
 * holds what the session counted in user mode, and nothing of PAPI's or
 * librefcnt's own work before or after. Before a session opens, its
 * window is described on stdout:
 *   papi-window: N data START END instr START END
 * (the session's ranges, 0 0 for none), for tools/testing/papi-check to
 * sum the truth of dump N over.
 *
 * Between the session's start and the mark, and between the mark and the
 * read, this code touches only its stack and its state, which lives in a
 * page of its own at a fixed address, away from any data a program
 * measures: a global variable could share a hardware page with it.
 *
 * Before each session opens, hub_filter_session() narrows the hub's
 * stream to what it can take, when the environment asks (hub-filter.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <refcnt/refcnt.h>

#include "hub-filter.h"
#include "truth-mark.h"

int __real_refcnt_count_open(const struct refcnt_count_attr *attr);
int __real_ioctl(int fd, unsigned long req, ...);
int __wrap_refcnt_count_open(const struct refcnt_count_attr *attr);
int __wrap_ioctl(int fd, unsigned long req, ...);

struct window_state {
	int fd;			/* the session of the open window, or -1 */
	int describing;		/* in refcnt_count_open(), window described */
	unsigned int windows;
};

#define STATE_ADDR	0x7e0000000000UL
#define state		((volatile struct window_state *)STATE_ADDR)

static void __attribute__((constructor)) window_state_map(void)
{
	void *p = mmap((void *)STATE_ADDR, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p != (void *)STATE_ADDR) {
		perror("papi-window: mmap");
		exit(1);
	}
	state->fd = -1;
}

static void range(const char *what, const struct rcb_count_range *r,
		  size_t n)
{
	printf(" %s 0x%llx 0x%llx", what,
	       n ? (unsigned long long)r->start : 0ULL,
	       n ? (unsigned long long)(r->start + r->len) : 0ULL);
}

int __wrap_refcnt_count_open(const struct refcnt_count_attr *attr)
{
	int fd;

	hub_filter_session(attr);
	if (state->fd < 0) {
		printf("papi-window: %u", ++state->windows);
		range("data", attr->data_ranges, attr->nr_data_ranges);
		range("instr", attr->instr_ranges, attr->nr_instr_ranges);
		printf("\n");
		fflush(stdout);
		state->describing = 1;
	}
	fd = __real_refcnt_count_open(attr);
	state->describing = 0;
	return fd;
}

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == RCB_COUNT_READ && fd == state->fd) {
		state->fd = -1;
		truth_mark_dump();
	}
	ret = __real_ioctl(fd, req, arg);
	if (req == RCB_COUNT_START && ret >= 0 && state->describing) {
		truth_mark_start();
		state->fd = ret;
	}
	return ret;
}
