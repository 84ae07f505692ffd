// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * librefcnt: node facts. cnodeids as refcnt.ko numbered the nodes at load
 * (/sys/kernel/refcnt/cnodes; without the module, the online nodes, which
 * it would number), CPUs and distances through libnuma.
 *
 * libnuma reports trouble through numa_warn()/numa_error(), which print.
 * Overriding them from a library would change them for the whole program,
 * so instead libnuma is only asked about nodes whose sysfs files exist,
 * the one case in which those calls cannot warn. Its caches are not
 * thread-safe: every libnuma call here holds refcnt_numa_lock.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <numa.h>

#include "internal.h"

#define REFCNT_SYSNODE	"/sys/devices/system/node"
#define REFCNT_CNODES	"/sys/kernel/refcnt/cnodes"

static pthread_once_t refcnt_numa_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t refcnt_numa_lock = PTHREAD_MUTEX_INITIALIZER;
static bool refcnt_numa_ok;

static void refcnt_numa_init(void)
{
	int err = errno;

	refcnt_numa_ok = numa_available() == 0;
	errno = err;
}

/* libnuma usable: numa_available() said so, once. */
static bool refcnt_numa(void)
{
	pthread_once(&refcnt_numa_once, refcnt_numa_init);
	return refcnt_numa_ok;
}

int refcnt__parse_list(const char *s, int *out, size_t cap)
{
	size_t n = 0;

	while (*s) {
		char *end;
		long a, b;

		a = strtol(s, &end, 10);
		if (end == s || a < 0 || a > INT_MAX)
			return refcnt__err(EINVAL);
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a || b > INT_MAX)
				return refcnt__err(EINVAL);
			s = end;
		}
		for (; a <= b; a++, n++) {
			if (n >= INT_MAX)
				return refcnt__err(EOVERFLOW);
			if (n < cap)
				out[n] = (int)a;
		}
		if (*s == ',')
			s++;
		else if (*s)
			return refcnt__err(EINVAL);
	}
	return (int)n;
}

/* The node list in file @path (malloc'ed ids). Count or -1/errno. */
static int refcnt_node_list(const char *path, int **nids)
{
	const size_t size = 65536;
	char *buf;
	int n, *ids = NULL;

	buf = malloc(size);
	if (!buf)
		return refcnt__err(ENOMEM);
	n = refcnt__read_file(path, buf, size);
	if (n >= 0)
		n = refcnt__parse_list(buf, NULL, 0);
	if (n >= 0) {
		ids = malloc((n ? n : 1) * sizeof(*ids));
		if (!ids)
			n = refcnt__err(ENOMEM);
		else
			refcnt__parse_list(buf, ids, n);
	}
	free(buf);
	if (n < 0)
		return -1;
	*nids = ids;
	return n;
}

int refcnt__cnode_nids(int **nids)
{
	int n;

	/* A node online since the load has no cnodeid: the module's list. */
	n = refcnt_node_list(REFCNT_CNODES, nids);
	if (n < 0 && errno == ENOENT)
		n = refcnt_node_list(REFCNT_SYSNODE "/online", nids);
	return n;
}

/* Is @nid online (whether or not it has a cnodeid)? 0 or -1/errno. */
static int refcnt_nid_online(int nid)
{
	int *ids = NULL, n, i, found = 0;

	n = refcnt_node_list(REFCNT_SYSNODE "/online", &ids);
	if (n < 0)
		return -1;
	for (i = 0; i < n; i++)
		found |= ids[i] == nid;
	free(ids);
	return found ? 0 : refcnt__err(ENOENT);
}

REFCNT_API int refcnt_num_cnodes(void)
{
	int *ids = NULL, n;

	n = refcnt__cnode_nids(&ids);
	free(ids);
	return n;
}

REFCNT_API int refcnt_cnode_to_nid(int cnodeid)
{
	int *ids = NULL, n, nid;

	n = refcnt__cnode_nids(&ids);
	if (n < 0)
		return -1;
	nid = cnodeid >= 0 && cnodeid < n ? ids[cnodeid] : -1;
	free(ids);
	return nid >= 0 ? nid : refcnt__err(EINVAL);
}

REFCNT_API int refcnt_nid_to_cnode(int nid)
{
	int *ids = NULL, n, i, cnode = -1;

	if (nid < 0)
		return refcnt__err(EINVAL);
	n = refcnt__cnode_nids(&ids);
	if (n < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (ids[i] == nid)
			cnode = i;
	free(ids);
	return cnode >= 0 ? cnode : refcnt__err(ENOENT);
}

/*
 * Can libnuma be asked about nid without warning: it is online, libnuma
 * knows it (it sized its tables at start-up) and its sysfs file is there?
 * 0 or -1/errno.
 */
static int refcnt_numa_node_ok(int nid, const char *file)
{
	char path[128];

	if (nid < 0)
		return refcnt__err(EINVAL);
	if (refcnt_nid_online(nid))
		return -1;
	if (!refcnt_numa())
		return refcnt__err(ENOSYS);
	if (nid > numa_max_node())
		return refcnt__err(ENOENT);
	snprintf(path, sizeof(path), REFCNT_SYSNODE "/node%d/%s", nid, file);
	if (access(path, R_OK))
		return -1;
	return 0;
}

REFCNT_API int refcnt_nid_cpus(int nid, int *cpus, size_t cap)
{
	struct bitmask *mask;
	unsigned int cpu;
	int n = 0, ret;

	if (cap && !cpus)
		return refcnt__err(EFAULT);
	if (refcnt_numa_node_ok(nid, "cpumap"))
		return -1;
	pthread_mutex_lock(&refcnt_numa_lock);
	mask = numa_allocate_cpumask();
	ret = mask ? numa_node_to_cpus(nid, mask) : -1;
	if (!ret) {
		for (cpu = 0; cpu < mask->size; cpu++) {
			if (!numa_bitmask_isbitset(mask, cpu))
				continue;
			if ((size_t)n < cap)
				cpus[n] = (int)cpu;
			n++;
		}
	}
	numa_bitmask_free(mask);
	pthread_mutex_unlock(&refcnt_numa_lock);
	return ret ? refcnt__err(EIO) : n;
}

REFCNT_API int refcnt_nid_distance(int from, int to)
{
	int d;

	if (refcnt_numa_node_ok(from, "distance") ||
	    refcnt_numa_node_ok(to, "distance"))
		return -1;
	pthread_mutex_lock(&refcnt_numa_lock);
	d = numa_distance(from, to);
	pthread_mutex_unlock(&refcnt_numa_lock);
	return d > 0 ? d : refcnt__err(ENODATA);
}
