/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hub device's filters around a program's counting sessions
 * (hub-filter.c): linked into the test builds of the PAPI programs.
 */
#ifndef REFCNT_HUB_FILTER_H
#define REFCNT_HUB_FILTER_H

struct refcnt_count_attr;

int hub_filter_session(const struct refcnt_count_attr *attr);
void hub_filter_off(void);

#endif
