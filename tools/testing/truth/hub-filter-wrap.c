// SPDX-License-Identifier: GPL-2.0
/*
 * The hub's filters (hub-filter.c) for a program whose sessions' windows
 * the truth does not need (papi_test): linked with
 *   -Wl,--wrap=refcnt_count_open,--wrap=refcnt_count_stop
 * (papi-window.c sets them for the programs it marks, whose sessions
 * all have ranges). A session without ranges opens the stream whole;
 * when it stops, the stream is closed again, so that what runs until
 * the next session (a test's PAPI_library_init(), in a new process)
 * makes no records for that session's start to drain.
 */
#include <refcnt/refcnt.h>

#include "hub-filter.h"

int __real_refcnt_count_open(const struct refcnt_count_attr *attr);
int __wrap_refcnt_count_open(const struct refcnt_count_attr *attr);
int __real_refcnt_count_stop(int fd);
int __wrap_refcnt_count_stop(int fd);

static int wide_fd = -1;

int __wrap_refcnt_count_open(const struct refcnt_count_attr *attr)
{
	int wide = hub_filter_session(attr);
	int fd = __real_refcnt_count_open(attr);

	if (wide && fd >= 0)
		wide_fd = fd;
	return fd;
}

int __wrap_refcnt_count_stop(int fd)
{
	int ret = __real_refcnt_count_stop(fd);

	if (fd >= 0 && fd == wide_fd) {
		wide_fd = -1;
		hub_filter_off();
	}
	return ret;
}
