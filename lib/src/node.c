// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librefcnt: node devices, their rcb_info and slots, the mapped table.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

int refcnt__read_file(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return refcnt__err(err);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return (int)n;
}

int refcnt__open_dev(int nid)
{
	char path[64];

	if (nid < 0)
		return refcnt__err(EINVAL);
	snprintf(path, sizeof(path), REFCNT_DEV_DIR "/node%d", nid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int refcnt__info(int fd, struct rcb_info *info)
{
	return ioctl(fd, RCB_INFO_GET, info) ? -1 : 0;
}

/* "node<digits>" -> id, or -1. */
static int refcnt_dev_name_nid(const char *name)
{
	const char *p = name + 4;
	long v = 0;

	if (strncmp(name, "node", 4) || !*p)
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || v > INT_MAX / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v <= INT_MAX ? (int)v : -1;
}

static int refcnt_cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Node ids of the devices, sorted, malloc'ed. Count or -1/errno. */
static int refcnt_dev_nids(int **out)
{
	size_t n = 0, alloc = 0;
	struct dirent *de;
	int *ids = NULL;
	DIR *d;

	d = opendir(REFCNT_DEV_DIR);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		int nid = refcnt_dev_name_nid(de->d_name);

		if (nid < 0)
			continue;
		if (n == alloc) {
			size_t na = alloc ? 2 * alloc : 16;
			int *t = realloc(ids, na * sizeof(*ids));

			if (!t || n >= INT_MAX) {
				free(t ? t : ids);
				closedir(d);
				return refcnt__err(ENOMEM);
			}
			ids = t;
			alloc = na;
		}
		ids[n++] = nid;
	}
	closedir(d);
	if (n)
		qsort(ids, n, sizeof(*ids), refcnt_cmp_int);
	*out = ids;
	return (int)n;
}

REFCNT_API int refcnt_nodes(int *nids, size_t cap)
{
	int *ids = NULL, n, i;

	if (cap && !nids)
		return refcnt__err(EFAULT);
	n = refcnt_dev_nids(&ids);
	if (n < 0)
		return -1;
	for (i = 0; i < n && (size_t)i < cap; i++)
		nids[i] = ids[i];
	free(ids);
	return n;
}

int refcnt__open_any(void)
{
	int *ids = NULL, n, i, fd = -1, err = ENOENT;

	n = refcnt_dev_nids(&ids);
	if (n < 0)
		return -1;
	for (i = 0; i < n; i++) {
		fd = refcnt__open_dev(ids[i]);
		if (fd >= 0)
			break;
		if (i == 0)
			err = errno;
	}
	free(ids);
	return fd >= 0 ? fd : refcnt__err(err);
}

/* RCB_SLOT_QUERY into a new array; also the first set of each slot. */
static int refcnt_load_slots(struct refcnt_node *node)
{
	struct rcb_slot_query q = { 0 };
	unsigned int i;
	uint64_t set = 0;

	for (;;) {
		unsigned int want;

		if (ioctl(node->fd, RCB_SLOT_QUERY, &q))
			return -1;
		want = q.num_slots;
		if (node->slots && want <= node->nr_slots) {
			node->nr_slots = want;
			break;
		}
		free(node->slots);
		node->slots = calloc(want ? want : 1, sizeof(*node->slots));
		if (!node->slots)
			return refcnt__err(ENOMEM);
		node->nr_slots = want;
		q.slots = (uintptr_t)node->slots;
		q.num_slots = want;
		q.flags = 0;
	}
	node->first_set = calloc(node->nr_slots ? node->nr_slots : 1,
				 sizeof(*node->first_set));
	if (!node->first_set)
		return refcnt__err(ENOMEM);
	for (i = 0; i < node->nr_slots; i++) {
		node->first_set[i] = set;
		set += node->slots[i].size / node->info.rcb_granularity;
	}
	return 0;
}

REFCNT_API struct refcnt_node *refcnt_node_open(int nid, int flags)
{
	struct refcnt_node *node;
	long psz = sysconf(_SC_PAGESIZE);
	int err;

	if (nid < 0 || flags)
		return refcnt__err_ptr(EINVAL);
	node = calloc(1, sizeof(*node));
	if (!node)
		return refcnt__err_ptr(ENOMEM);
	node->nid = nid;
	node->fd = refcnt__open_dev(nid);
	if (node->fd < 0) {
		err = errno;
		free(node);
		return refcnt__err_ptr(err);
	}
	if (refcnt__info(node->fd, &node->info) || refcnt_load_slots(node))
		goto fail;
	if (!node->info.rcb_granularity || psz <= 0) {
		errno = EIO;
		goto fail;
	}
	if (node->info.rcb_len > SIZE_MAX - (size_t)psz) {
		errno = EOVERFLOW;
		goto fail;
	}
	node->map_len = (node->info.rcb_len + psz - 1) / psz * psz;
	return node;
fail:
	err = errno;
	refcnt_node_close(node);
	return refcnt__err_ptr(err);
}

REFCNT_API void refcnt_node_close(struct refcnt_node *node)
{
	int err = errno;

	if (!node)
		return;
	if (node->map)
		munmap((void *)node->map, node->map_len);
	if (node->fd >= 0)
		close(node->fd);
	free(node->first_set);
	free(node->slots);
	free(node);
	errno = err;
}

REFCNT_API int refcnt_node_fd(const struct refcnt_node *node)
{
	if (!node)
		return refcnt__err(EINVAL);
	return node->fd;
}

REFCNT_API int refcnt_node_nid(const struct refcnt_node *node)
{
	if (!node)
		return refcnt__err(EINVAL);
	return node->nid;
}

REFCNT_API int refcnt_node_cnodeid(const struct refcnt_node *node)
{
	if (!node)
		return refcnt__err(EINVAL);
	return (int)node->info.rcb_cnodeid;
}

REFCNT_API int refcnt_node_info(struct refcnt_node *node, struct rcb_info *info)
{
	if (!node || !info)
		return refcnt__err(node ? EFAULT : EINVAL);
	return refcnt__info(node->fd, info);
}

REFCNT_API int refcnt_node_slots(struct refcnt_node *node,
				 struct rcb_slot *slots, size_t cap)
{
	size_t i;

	if (!node)
		return refcnt__err(EINVAL);
	if (cap && !slots)
		return refcnt__err(EFAULT);
	for (i = 0; i < node->nr_slots && i < cap; i++)
		slots[i] = node->slots[i];
	return (int)node->nr_slots;
}

REFCNT_API const uint32_t *refcnt_node_map(struct refcnt_node *node,
					   size_t *len)
{
	const uint32_t *map, *expected = NULL;
	void *p;

	if (!node)
		return refcnt__err_ptr(EINVAL);
	map = __atomic_load_n(&node->map, __ATOMIC_ACQUIRE);
	if (!map) {
		p = mmap(NULL, node->map_len, PROT_READ, MAP_SHARED, node->fd, 0);
		if (p == MAP_FAILED)
			return NULL;
		map = p;
		if (!__atomic_compare_exchange_n(&node->map, &expected, map,
						 false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			munmap(p, node->map_len);
			map = expected;
		}
	}
	if (len)
		*len = node->info.rcb_len;
	return map;
}

REFCNT_API int64_t refcnt_node_locate(struct refcnt_node *node, uint64_t paddr)
{
	unsigned int lo = 0, hi;
	const struct rcb_slot *s;

	if (!node)
		return refcnt__err(EINVAL);
	/* The last slot whose base is <= paddr. */
	hi = node->nr_slots;
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (node->slots[mid].base <= paddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return refcnt__err(ENOENT);
	s = &node->slots[lo - 1];
	if (paddr - s->base >= s->size)
		return refcnt__err(ENOENT);
	return (int64_t)(node->first_set[lo - 1] +
			 (paddr - s->base) / node->info.rcb_granularity);
}

REFCNT_API const uint32_t *refcnt_node_set_counters(struct refcnt_node *node,
						    uint64_t set)
{
	const uint32_t *map;

	if (!node || set >= node->info.rcb_sw_sets)
		return refcnt__err_ptr(EINVAL);
	map = refcnt_node_map(node, NULL);
	if (!map)
		return NULL;
	return map + set * node->info.rcb_sw_counters_per_set;
}

REFCNT_API int refcnt_node_read_sets(struct refcnt_node *node,
				     uint64_t first_set, uint64_t nr_sets,
				     uint32_t *hw, uint32_t *ext,
				     uint32_t *lost)
{
	struct rcb_sets_read r = {
		.first_set = first_set,
		.nr_sets = nr_sets,
		.hw = (uintptr_t)hw,
		.ext = (uintptr_t)ext,
		.lost = (uintptr_t)lost,
	};

	if (!node)
		return refcnt__err(EINVAL);
	return ioctl(node->fd, RCB_SETS_READ, &r) ? -1 : 0;
}

REFCNT_API int refcnt_node_sync(struct refcnt_node *node)
{
	if (!node)
		return refcnt__err(EINVAL);
	return ioctl(node->fd, RCB_SYNC) ? -1 : 0;
}
