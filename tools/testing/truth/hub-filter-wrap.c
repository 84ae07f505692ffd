// SPDX-License-Identifier: GPL-2.0
/*
 * The hub's filters (hub-filter.c) for a program whose sessions' windows
 * the truth does not need (papi_test): linked with
 *   -Wl,--wrap=refcnt_count_open
 * (papi-window.c does the same for the programs it marks).
 */
#include <refcnt/refcnt.h>

#include "hub-filter.h"

int __real_refcnt_count_open(const struct refcnt_count_attr *attr);
int __wrap_refcnt_count_open(const struct refcnt_count_attr *attr);

int __wrap_refcnt_count_open(const struct refcnt_count_attr *attr)
{
	hub_filter_session(attr);
	return __real_refcnt_count_open(attr);
}
