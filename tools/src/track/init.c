// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt-track.so: start-up. The real allocation functions come from
 * dlsym(RTLD_NEXT), whatever allocator the program has (glibc's, or
 * jemalloc as redis-server links it); dlsym may itself allocate, which a
 * small bootstrap heap serves. The table is a file of the directory
 * refcnt-run made for the run (REFCNT_TRACK_DIR), mapped shared: without
 * that variable the tracker only passes calls through. A forked child gets
 * a table of its own, a copy of its parent's (pthread_atfork).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "track.h"

/* Areas of the table. */
#define SITES_CAP	(1U << 16)
#define INDEX_CAP	(1U << 17)
#define OBJS_CAP	(1U << 18)
#define READS_CAP	(1U << 15)
#define LEAVES_CAP	(1U << 14)

static int init_state;		/* 0 not started, 1 running, 2 done */
static __thread int in_init __attribute__((tls_model("initial-exec")));
static char table_dir[PATH_MAX];

#define REAL(name) \
	(*(void **)&real.name = dlsym(RTLD_NEXT, #name))

static void resolve(void)
{
	REAL(malloc);
	REAL(free);
	REAL(calloc);
	REAL(realloc);
	REAL(posix_memalign);
	REAL(aligned_alloc);
	REAL(memalign);
	REAL(valloc);
	REAL(pvalloc);
	REAL(mmap);
	REAL(munmap);
	REAL(mremap);
	if (real.malloc)
		track_text_of((uintptr_t)real.malloc, &T.alloc_lo, &T.alloc_hi);
}

/* Lay the areas out in a table of T.size bytes at h. */
static void lay_out(struct track_header *h)
{
	uint64_t off = TRACK_HEADER_SIZE;

	h->sites_off = off;
	h->sites_cap = SITES_CAP;
	off += (uint64_t)SITES_CAP * sizeof(struct track_site);
	h->index_off = off;
	h->index_cap = INDEX_CAP;
	off += (uint64_t)INDEX_CAP * sizeof(uint32_t);
	h->objs_off = off;
	h->objs_cap = OBJS_CAP;
	off += (uint64_t)OBJS_CAP * sizeof(struct track_obj);
	h->reads_off = off;
	h->reads_cap = READS_CAP;
	off += (uint64_t)READS_CAP * sizeof(struct track_reading);
	h->keys_off = off;
	h->leaves_cap = LEAVES_CAP;
	off += (uint64_t)LEAVES_CAP * sizeof(uint64_t);
	off = (off + 4095) & ~4095ULL;
	h->leaves_off = off;
	off += (uint64_t)LEAVES_CAP * 4 * TRACK_LEAF_PAGES;
	h->file_size = off;
}

static size_t table_size(void)
{
	struct track_header h;

	memset(&h, 0, sizeof(h));
	lay_out(&h);
	return h.file_size;
}

static void point_at(struct track_header *h)
{
	char *base = (char *)h;

	T.size = h->file_size;
	T.sites = (struct track_site *)(base + h->sites_off);
	T.index = (uint32_t *)(base + h->index_off);
	T.objs = (struct track_obj *)(base + h->objs_off);
	T.reads = (struct track_reading *)(base + h->reads_off);
	T.keys = (uint64_t *)(base + h->keys_off);
	T.leaves = (uint32_t *)(base + h->leaves_off);
	T.threshold = h->threshold;
	/* Last: other threads test T.h before they use the rest. */
	__atomic_store_n(&T.h, h, __ATOMIC_RELEASE);
}

/* track.PID of the run's directory, opened: fd or -1. */
static int open_file(pid_t pid, int trunc)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/" TRACK_FILE_PREFIX "%d", table_dir,
		 (int)pid);
	return open(path, O_RDWR | O_CREAT | O_CLOEXEC | (trunc ? O_TRUNC : 0),
		    0600);
}

/* The file, sized and mapped shared; NULL if it cannot be. */
static struct track_header *map_file(int fd, size_t size, void *at)
{
	void *p;

	if (ftruncate(fd, (off_t)size))
		return NULL;
	p = real.mmap(at, size, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_NORESERVE | (at ? MAP_FIXED : 0), fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void open_table(void)
{
	const char *dir = getenv(TRACK_ENV_DIR), *thr = getenv(TRACK_ENV_THRESHOLD);
	struct track_header *h;
	size_t size = table_size();
	int fd;

	if (!dir || !*dir || strlen(dir) >= sizeof(table_dir) || !real.mmap)
		return;
	snprintf(table_dir, sizeof(table_dir), "%s", dir);
	fd = open_file(getpid(), 1);
	if (fd < 0)
		return;
	h = map_file(fd, size, NULL);
	close(fd);
	if (!h)
		return;
	lay_out(h);
	h->version = TRACK_VERSION;
	h->header_size = TRACK_HEADER_SIZE;
	h->pid = getpid();
	h->threshold = thr ? strtoull(thr, NULL, 0) : 0;
	if (!h->threshold)
		h->threshold = TRACK_DEFAULT_THRESHOLD;
	h->start_ns = track_now_ns();
	track_objects_init();
	track_readings_init(h);
	track_own_memory(h);
	track_small_init();
	point_at(h);
	__atomic_store_n(&h->magic, TRACK_MAGIC, __ATOMIC_RELEASE);
}

/*
 * Copy what the parent recorded into the child's own file (only the
 * parts in use: the file is sparse) and map it where the parent's was.
 */
static int copy_table(int fd)
{
	struct track_header *h = T.h;
	const char *base = (const char *)h;
	uint64_t n = h->objs_nr < h->objs_cap ? h->objs_nr : h->objs_cap;
	uint64_t r = h->reads_nr < h->reads_cap ? h->reads_nr : h->reads_cap;
	uint64_t s = h->sites_nr < h->sites_cap ? h->sites_nr : h->sites_cap;
	struct { uint64_t off, len; } parts[] = {
		{ 0, TRACK_HEADER_SIZE },
		{ h->sites_off, s * sizeof(struct track_site) },
		{ h->index_off, (uint64_t)h->index_cap * sizeof(uint32_t) },
		{ h->objs_off, n * sizeof(struct track_obj) },
		{ h->reads_off, r * sizeof(struct track_reading) },
		{ h->keys_off, (uint64_t)h->leaves_cap * sizeof(uint64_t) },
	};
	unsigned int i;

	if (ftruncate(fd, (off_t)T.size))
		return -1;
	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (pwrite(fd, base + parts[i].off, parts[i].len,
			   (off_t)parts[i].off) != (ssize_t)parts[i].len)
			return -1;
	for (i = 0; i < h->leaves_cap; i++) {
		size_t len = 4 * TRACK_LEAF_PAGES;
		uint64_t off = h->leaves_off + (uint64_t)i * len;

		if (T.keys[i] && pwrite(fd, base + off, len, (off_t)off) != (ssize_t)len)
			return -1;
	}
	return 0;
}

static void after_fork_child(void)
{
	struct track_header *h = T.h;
	uint32_t i, n;
	int fd;

	track_tid_forget();
	if (!h)
		return;
	track_busy++;
	fd = open_file(getpid(), 1);
	if (fd < 0 || copy_table(fd) || !map_file(fd, T.size, h)) {
		/* Stop recording rather than write into the parent's table. */
		T.h = NULL;
		real.munmap(h, T.size);
	} else {
		h->ppid = h->pid;
		h->pid = getpid();
		h->flags |= TRACK_F_FORKED;
		n = h->objs_nr < h->objs_cap ? h->objs_nr : h->objs_cap;
		for (i = 0; i < n; i++)
			T.objs[i].flags |= TRACK_O_INHERITED;
	}
	if (fd >= 0)
		close(fd);
	track_busy--;
}

void track_init(void)
{
	int zero = 0;

	if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == 2 || in_init)
		return;
	if (!__atomic_compare_exchange_n(&init_state, &zero, 1, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
			sched_yield();
		return;
	}
	in_init = 1;
	track_busy++;
	resolve();
	open_table();
	/*
	 * glibc's backtrace() loads libgcc_s the first time, which allocates:
	 * done now, it never has to happen inside an allocator's call later.
	 */
	if (T.h)
		track_stack_prime();
	pthread_atfork(NULL, NULL, after_fork_child);
	track_busy--;
	in_init = 0;
	__atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
}

__attribute__((constructor(101))) static void track_ctor(void)
{
	track_init();
}
