// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-run: the allocation tracker, seen from refcnt-run. Before the
 * command runs: find librefcnt-track.so, make the run's directory for the
 * tables (in /dev/shm, a tmpfs, where a sparse table costs only what is
 * written), and give the command LD_PRELOAD, REFCNT_TRACK_DIR and the
 * threshold. At a process's exit: read its table (track.PID). At the end:
 * name the processes that wrote a table but were not traced, and remove
 * the directory.
 *
 * The preload needs the dynamic loader: a statically linked command runs
 * without it (said in the report; its variables are still named from its
 * symbols), and so does a set-user-ID one (the loader ignores LD_PRELOAD).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

#ifndef REFCNT_LIBDIR
#define REFCNT_LIBDIR "/usr/local/lib/refcnt"
#endif
#define TRACK_LIB "librefcnt-track.so"

static char track_lib[PATH_MAX];
static char track_dir[PATH_MAX];
const char *track_off_why;	/* why nothing is tracked, or NULL */

static int usable(const char *path)
{
	return access(path, R_OK) == 0;
}

/* The tracker library: $REFCNT_TRACK_LIB, beside refcnt-run, or installed. */
static int find_lib(void)
{
	const char *env = getenv("REFCNT_TRACK_LIB");
	char self[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		snprintf(track_lib, sizeof(track_lib), "%s", env);
		return usable(track_lib) ? 0 : -1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(track_lib, sizeof(track_lib), "%.4000s/" TRACK_LIB, self);
			if (usable(track_lib))
				return 0;
			snprintf(track_lib, sizeof(track_lib),
				 "%.4000s/../lib/refcnt/" TRACK_LIB, self);
			if (usable(track_lib))
				return 0;
		}
	}
	snprintf(track_lib, sizeof(track_lib), REFCNT_LIBDIR "/" TRACK_LIB);
	return usable(track_lib) ? 0 : -1;
}

int elf_is_static(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), dyn = -1;
	size_t i, n;
	Elf *e;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && elf_kind(e) == ELF_K_ELF && !elf_getphdrnum(e, &n)) {
		dyn = 0;
		for (i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
				dyn = 1;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return dyn < 0 ? -1 : !dyn;
}

/* cmd as execvp() finds it, into buf: 0, or -1. */
static int which(const char *cmd, char *buf, size_t size)
{
	const char *path = getenv("PATH"), *p;

	if (strchr(cmd, '/')) {
		snprintf(buf, size, "%s", cmd);
		return access(buf, X_OK);
	}
	for (p = path ? path : "/bin:/usr/bin"; p && *p;) {
		const char *e = strchr(p, ':');
		int len = e ? (int)(e - p) : (int)strlen(p);

		snprintf(buf, size, "%.*s/%s", len, p, cmd);
		if (!access(buf, X_OK))
			return 0;
		p = e ? e + 1 : NULL;
	}
	return -1;
}

/* --no-track, or nothing to preload: say why once. */
int track_setup(char **argv)
{
	const char *base = getenv("TMPDIR");
	char exe[PATH_MAX];
	struct stat st;

	if (opt.no_track) {
		track_off_why = "--no-track";
		return 0;
	}
	if (find_lib()) {
		track_off_why = "librefcnt-track.so was not found (beside refcnt-run, in " REFCNT_LIBDIR ", or $REFCNT_TRACK_LIB)";
		say("no allocation tracking: %s", track_off_why);
		return 0;
	}
	if (!which(argv[0], exe, sizeof(exe)) && !stat(exe, &st) &&
	    st.st_mode & (S_ISUID | S_ISGID))
		say("note: %s is set-user-ID or set-group-ID: the dynamic loader ignores LD_PRELOAD, its allocations are not tracked", exe);
	if (!access("/dev/shm", W_OK))
		base = "/dev/shm";
	else if (!base)
		base = "/tmp";
	snprintf(track_dir, sizeof(track_dir), "%s/refcnt-run.XXXXXX", base);
	if (!mkdtemp(track_dir)) {
		rt_err("cannot make a directory for the allocation tables (%s): %s",
		       track_dir, strerror(errno));
		track_dir[0] = '\0';
		track_off_why = "no directory for its tables";
		return 0;
	}
	return 0;
}

/* In the command, before exec: the preload and where its table goes. */
void track_child_env(void)
{
	const char *old = getenv("LD_PRELOAD");
	char buf[2 * PATH_MAX + 2], thr[32];

	if (!track_dir[0])
		return;
	if (old && *old)
		snprintf(buf, sizeof(buf), "%s:%s", track_lib, old);
	else
		snprintf(buf, sizeof(buf), "%s", track_lib);
	snprintf(thr, sizeof(thr), "%llu", (unsigned long long)opt.track_threshold);
	setenv("LD_PRELOAD", buf, 1);
	setenv(TRACK_ENV_DIR, track_dir, 1);
	setenv(TRACK_ENV_THRESHOLD, thr, 1);
}

int track_enabled(void)
{
	return track_dir[0] != '\0';
}

/* pread of exactly len bytes at off into a new buffer; NULL if short. */
static void *read_part(int fd, uint64_t off, uint64_t len)
{
	void *p = xcalloc(1, len ? len : 1);

	if (len && pread(fd, p, len, (off_t)off) != (ssize_t)len) {
		free(p);
		return NULL;
	}
	return p;
}

static int header_ok(const struct track_header *h, uint64_t size)
{
	return h->magic == TRACK_MAGIC && h->version == TRACK_VERSION &&
	       h->file_size <= size &&
	       h->sites_off + (uint64_t)h->sites_cap * sizeof(struct track_site) <= size &&
	       h->objs_off + (uint64_t)h->objs_cap * sizeof(struct track_obj) <= size &&
	       h->reads_off + (uint64_t)h->reads_cap * sizeof(struct track_reading) <= size &&
	       h->keys_off + (uint64_t)h->leaves_cap * 8 <= size &&
	       h->leaves_off + (uint64_t)h->leaves_cap * 4 * TRACK_LEAF_PAGES <= size;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* The leaves in use: their keys and page entries. */
static int read_leaves(int fd, struct track_data *t)
{
	uint64_t *keys = read_part(fd, t->h.keys_off, (uint64_t)t->h.leaves_cap * 8);
	uint32_t i;

	if (!keys)
		return -1;
	t->leaf_keys = xcalloc(t->h.leaves_nr + 1, sizeof(uint64_t));
	t->leaves = xcalloc((size_t)(t->h.leaves_nr + 1) * TRACK_LEAF_PAGES,
			    sizeof(uint32_t));
	for (i = 0; i < t->h.leaves_cap && t->nr_leaves < t->h.leaves_nr; i++) {
		size_t len = 4 * TRACK_LEAF_PAGES;

		if (!keys[i])
			continue;
		if (pread(fd, t->leaves + (size_t)t->nr_leaves * TRACK_LEAF_PAGES,
			  len, (off_t)(t->h.leaves_off + (uint64_t)i * len)) !=
		    (ssize_t)len)
			break;
		t->leaf_keys[t->nr_leaves++] = keys[i];
	}
	free(keys);
	return 0;
}

struct track_data *track_read(pid_t pid)
{
	struct track_data *t;
	char path[PATH_MAX + 32];
	struct stat st;
	int fd;

	if (!track_dir[0])
		return NULL;
	snprintf(path, sizeof(path), "%s/" TRACK_FILE_PREFIX "%d", track_dir, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	t = xcalloc(1, sizeof(*t));
	if (fstat(fd, &st) || pread(fd, &t->h, sizeof(t->h), 0) != sizeof(t->h) ||
	    !header_ok(&t->h, (uint64_t)st.st_size))
		goto bad;
	t->nr_sites = min_u32(t->h.sites_nr, t->h.sites_cap);
	t->nr_objs = min_u32(t->h.objs_nr, t->h.objs_cap);
	t->nr_reads = min_u32(t->h.reads_nr, t->h.reads_cap);
	t->sites = read_part(fd, t->h.sites_off, (uint64_t)t->nr_sites * sizeof(*t->sites));
	t->objs = read_part(fd, t->h.objs_off, (uint64_t)t->nr_objs * sizeof(*t->objs));
	t->reads = read_part(fd, t->h.reads_off, (uint64_t)t->nr_reads * sizeof(*t->reads));
	if (!t->sites || !t->objs || !t->reads || read_leaves(fd, t))
		goto bad;
	close(fd);
	return t;
bad:
	rt_err("%s: not a table of this version of librefcnt-track.so, or cut short", path);
	close(fd);
	track_free(t);
	return NULL;
}

void track_free(struct track_data *t)
{
	if (!t)
		return;
	free(t->sites);
	free(t->objs);
	free(t->reads);
	free(t->leaf_keys);
	free(t->leaves);
	free(t);
}

/* A table's reading idx + 1 (track_obj.base_read), or NULL. */
const struct track_reading *track_reading_of(const struct track_data *t,
					     uint32_t idx1)
{
	return idx1 && idx1 <= t->nr_reads ? &t->reads[idx1 - 1] : NULL;
}

/* The processes that wrote a table (the caller knows which it traced). */
void track_tables(void (*cb)(void *arg, pid_t pid), void *arg)
{
	struct dirent *de;
	DIR *d;

	if (!track_dir[0] || !(d = opendir(track_dir)))
		return;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, TRACK_FILE_PREFIX, strlen(TRACK_FILE_PREFIX))) {
			pid_t pid = atoi(de->d_name + strlen(TRACK_FILE_PREFIX));

			if (pid > 0)
				cb(arg, pid);
		}
	closedir(d);
}

/* Remove the run's directory and the tables in it. */
void track_cleanup(void)
{
	struct dirent *de;
	char path[PATH_MAX + 300];
	DIR *d;

	if (!track_dir[0] || !(d = opendir(track_dir)))
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", track_dir, de->d_name);
			unlink(path);
		}
	closedir(d);
	rmdir(track_dir);
}

/* Is path one of the run's tables (a mapping of the tracker)? */
int track_is_table(const char *path)
{
	size_t n = strlen(track_dir);

	return n && !strncmp(path, track_dir, n) && path[n] == '/';
}

const char *track_kind_name(uint32_t kind)
{
	static const char *const names[TRACK_NR_KINDS] = {
		[TRACK_MALLOC] = "malloc",
		[TRACK_CALLOC] = "calloc",
		[TRACK_REALLOC] = "realloc",
		[TRACK_MEMALIGN] = "memalign",
		[TRACK_MMAP] = "mmap",
		[TRACK_MMAP_FILE] = "mmap-file",
		[TRACK_NUMA_ONNODE] = "numa_alloc_onnode",
		[TRACK_NUMA_INTERLEAVED] = "numa_alloc_interleaved",
		[TRACK_NUMA_LOCAL] = "numa_alloc_local",
	};

	return kind < TRACK_NR_KINDS && names[kind] ? names[kind] : "?";
}
