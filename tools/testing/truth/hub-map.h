/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The hub device's memory from a guest's user space: BAR 2 of its ivshmem
 * device (layout: tools/testing/kmod/uapi/linux/refcnt_hub.h). Shared by
 * hub-pmu and selftests/refcnt/hub_test.
 */
#ifndef REFCNT_HUB_MAP_H
#define REFCNT_HUB_MAP_H

#include <stddef.h>

void *hub_map(int writable, size_t *size);

#endif
