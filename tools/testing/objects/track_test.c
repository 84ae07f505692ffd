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

struct run {
	char dir[64];
	pid_t pid;
	uint64_t addr;		/* what the child's allocation returned */
	struct track_header *h;
	size_t size;
};

/* Run this program's WHAT under the tracker; 0, or -1. */
static int run_tracked(struct run *r, const char *what)
{
	char thr[32], out[64] = "", path[128];
	int fds[2], st, fd;
	struct stat sb;
	ssize_t n;

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
	n = read(fds[0], out, sizeof(out) - 1);
	close(fds[0]);
	if (waitpid(r->pid, &st, 0) != r->pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) || n <= 0)
		return -1;
	r->addr = strtoull(out, NULL, 16);
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

int main(int argc, char **argv)
{
	static char lib[4096];

	if (argc == 2 && !strcmp(argv[1], "--calloc"))
		return child_calloc();
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
