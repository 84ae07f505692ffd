// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt-track.so on the host (make track-check): the tracker preloaded
 * into this program run again as a child, its table read back from the
 * run's directory, without refcnt-run or the module.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/track/track-table.h"
#include "kselftest_harness.h"

#define THRESHOLD	(256 * 1024)

static const char *self, *tracker;

/* The child's part: a calloc() of 2 MiB, its address on stdout. */
static int child_calloc(void)
{
	unsigned long *p = calloc(2 * 1024 * 1024 / sizeof(*p), sizeof(*p));

	if (!p)
		return 1;
	p[0] = 1;
	printf("%lx\n", (unsigned long)(uintptr_t)p);
	return 0;
}

/*
 * Small allocations from two sites (folded by return address), in runs
 * that reuse the other site's freed memory of the same size: 2000 of
 * 48 bytes from A, 1500 of 100 bytes from B, half of each freed, then
 * 300 of 100 bytes from A, 300 of 48 from B, and 900 taking turns. Each
 * allocation as "ADDR SIZE TAG" on stdout, written without stdio, which
 * would allocate from a third site among them.
 */
#define SMALL_N		5000
static void *kept[SMALL_N];

/* Two functions, not folded into one (noipa): two return addresses. */
#define SITE(tag) \
	__attribute__((noipa)) static void *site_##tag(size_t n) \
	{ void *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
SITE(a)
SITE(b)

static char small_out[SMALL_N * 40];

/* The tag and size of allocation i. */
static char small_step(size_t i, size_t *n)
{
	char tag;

	if (i < 2000)
		tag = 'a', *n = 48;
	else if (i < 3500)
		tag = 'b', *n = 100;
	else if (i < 3800)
		tag = 'a', *n = 100;
	else if (i < 4100)
		tag = 'b', *n = 48;
	else
		tag = i % 3 ? 'a' : 'b', *n = i % 2 ? 48 : 100;
	return tag;
}

static int child_small(void)
{
	size_t len = 0, n, i, k;
	char tag;

	for (i = 0; i < SMALL_N; i++) {
		if (i == 3500)
			for (k = 0; k < 3500; k += 2)
				free(kept[k]);
		tag = small_step(i, &n);
		kept[i] = tag == 'a' ? site_a(n) : site_b(n);
		if (!kept[i])
			return 1;
		len += (size_t)snprintf(small_out + len, sizeof(small_out) - len,
					"%lx %zu %c\n", (unsigned long)(uintptr_t)kept[i], n, tag);
	}
	return write(1, small_out, len) == (ssize_t)len ? 0 : 1;
}

struct run {
	char dir[64];
	pid_t pid;
	uint64_t addr;		/* what the child's allocation returned */
	struct track_header *h;
	size_t size;
	char out[sizeof(small_out) + 1];	/* the child's stdout */
};

/* Run this program's WHAT under the tracker; 0, or -1. */
static int run_tracked(struct run *r, const char *what)
{
	char thr[32], path[128];
	int fds[2], st, fd;
	struct stat sb;
	ssize_t n, got = 0;

	snprintf(r->dir, sizeof(r->dir), "/tmp/track_test.XXXXXX");
	if (!mkdtemp(r->dir) || pipe(fds))
		return -1;
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (!r->pid) {
		dup2(fds[1], 1);
		snprintf(thr, sizeof(thr), "%d", THRESHOLD);
		setenv(TRACK_ENV_DIR, r->dir, 1);
		setenv(TRACK_ENV_THRESHOLD, thr, 1);
		setenv("LD_PRELOAD", tracker, 1);
		execl(self, self, what, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], r->out + got, sizeof(r->out) - 1 - got)) > 0)
		got += n;
	close(fds[0]);
	r->out[got] = '\0';
	if (waitpid(r->pid, &st, 0) != r->pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) || got <= 0)
		return -1;
	r->addr = strtoull(r->out, NULL, 16);
	snprintf(path, sizeof(path), "%s/" TRACK_FILE_PREFIX "%d", r->dir, (int)r->pid);
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &sb))
		return -1;
	r->size = (size_t)sb.st_size;
	r->h = mmap(NULL, r->size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return r->h == MAP_FAILED ? -1 : 0;
}

static void run_done(struct run *r)
{
	char path[128];

	if (r->h && r->h != MAP_FAILED)
		munmap(r->h, r->size);
	snprintf(path, sizeof(path), "%s/" TRACK_FILE_PREFIX "%d", r->dir, (int)r->pid);
	unlink(path);
	rmdir(r->dir);
}

/* A calloc() of the threshold or more: an object, with its length, ready. */
TEST(calloc_large_recorded)
{
	struct run r = { 0 };
	const struct track_obj *objs, *o = NULL;
	uint32_t i;

	ASSERT_EQ(0, run_tracked(&r, "--calloc"));
	ASSERT_EQ(TRACK_MAGIC, r.h->magic);
	ASSERT_EQ(THRESHOLD, r.h->threshold);
	EXPECT_EQ(1, r.h->calls[TRACK_CALL_CALLOC]);
	objs = (const struct track_obj *)((const char *)r.h + r.h->objs_off);
	for (i = 0; i < r.h->objs_nr && i < r.h->objs_cap; i++)
		if (objs[i].start == r.addr)
			o = &objs[i];
	ASSERT_NE(NULL, o);
	EXPECT_EQ(TRACK_CALLOC, o->kind);
	EXPECT_EQ(2 * 1024 * 1024, o->size);
	EXPECT_EQ(2 * 1024 * 1024, o->len);
	EXPECT_EQ(1, o->ready);
	EXPECT_EQ(0, o->flags);
	EXPECT_LT(o->site, r.h->sites_nr);
	run_done(&r);
}

/* The page map's entry for page pg: site + 1, 0 none (or no leaf). */
static uint32_t page_entry(const struct track_header *h, uint64_t pg)
{
	const uint64_t *keys = (const void *)((const char *)h + h->keys_off);
	const uint32_t *leaves = (const void *)((const char *)h + h->leaves_off);
	uint64_t key = (pg >> (TRACK_LEAF_SHIFT - TRACK_PAGE_SHIFT)) + 1;
	uint32_t i;

	for (i = 0; i < h->leaves_cap; i++)
		if (keys[i] == key)
			return leaves[(size_t)i * TRACK_LEAF_PAGES +
				      (pg & (TRACK_LEAF_PAGES - 1))];
	return 0;
}

/*
 * Small allocations folded by site: each site's calls and bytes exact,
 * and each page given to the site of the last allocation on it that the
 * tracker looked at in full (the page map): every change of site, and one
 * every TRACK_SAMPLE_BYTES (plus one a call) of the same site; the two
 * sites apart.
 */
TEST(small_folded_by_site)
{
	static uint32_t last[SMALL_N];	/* tag of each line */
	static uint64_t first_pg[SMALL_N], last_pg[SMALL_N];
	static int full[SMALL_N];	/* looked at in full */
	int64_t left = 0;
	int prev = -1, owned[2] = { 0 };
	const struct track_site *sites;
	uint64_t calls[2] = { 0 }, bytes[2] = { 0 };
	int64_t site[2] = { -1, -1 };
	struct run *r = calloc(1, sizeof(*r));
	size_t nl = 0, i, j;
	char *line;

	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, run_tracked(r, "--small"));
	for (line = strtok(r->out, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long a;
		size_t n;
		char tag;

		ASSERT_EQ(3, sscanf(line, "%lx %zu %c", &a, &n, &tag));
		ASSERT_LT(nl, SMALL_N);
		last[nl] = tag == 'b';
		/* The tracker's countdown, as track_small_fast() keeps it. */
		if ((int)last[nl] != prev || (left -= (int64_t)n + 1) <= 0) {
			full[nl] = 1;
			left = TRACK_SAMPLE_BYTES < THRESHOLD ? TRACK_SAMPLE_BYTES : THRESHOLD;
		}
		prev = last[nl];
		first_pg[nl] = a >> TRACK_PAGE_SHIFT;
		last_pg[nl] = (a + n - 1) >> TRACK_PAGE_SHIFT;
		calls[tag == 'b']++;
		bytes[tag == 'b'] += n;
		nl++;
	}
	ASSERT_EQ(SMALL_N, nl);
	/* A page's owner: the tag of the last line looked at in full on it. */
	for (i = 0; i < nl; i++) {
		if (!full[i])
			continue;
		for (uint64_t pg = first_pg[i]; pg <= last_pg[i]; pg++) {
			uint32_t owner = last[i], e;

			for (j = i + 1; j < nl; j++)
				if (full[j] && first_pg[j] <= pg && pg <= last_pg[j])
					owner = last[j];
			e = page_entry(r->h, pg);
			ASSERT_NE(0, e);
			if (site[owner] < 0)
				site[owner] = e - 1;
			ASSERT_EQ(site[owner], (int64_t)e - 1);
			owned[owner]++;
		}
	}
	/* Both sites own pages (not only their first). */
	EXPECT_LT(10, owned[0]);
	EXPECT_LT(10, owned[1]);
	ASSERT_NE(-1, site[0]);
	ASSERT_NE(-1, site[1]);
	ASSERT_NE(site[0], site[1]);
	sites = (const void *)((const char *)r->h + r->h->sites_off);
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(calls[i], sites[site[i]].calls);
		EXPECT_EQ(bytes[i], sites[site[i]].bytes);
		EXPECT_EQ(0, sites[site[i]].large);
	}
	run_done(r);
	free(r);
}

int main(int argc, char **argv)
{
	static char lib[4096];

	if (argc == 2 && !strcmp(argv[1], "--calloc"))
		return child_calloc();
	if (argc == 2 && !strcmp(argv[1], "--small"))
		return child_small();
	self = "/proc/self/exe";
	self = realpath(self, NULL);
	tracker = getenv("TRACK_LIB");
	if (!tracker) {
		snprintf(lib, sizeof(lib), "%s", self);
		/* build/objects/track_test -> build/tools/librefcnt-track.so */
		*strrchr(lib, '/') = '\0';
		*strrchr(lib, '/') = '\0';
		strncat(lib, "/tools/librefcnt-track.so", sizeof(lib) - strlen(lib) - 1);
		tracker = lib;
	}
	return test_harness_run(argc, argv);
}
