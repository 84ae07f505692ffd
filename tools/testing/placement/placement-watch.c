// SPDX-License-Identifier: GPL-2.0
/*
 * placement-watch: which pages of the processes in a cgroup changed node,
 * for make placement, without knowing anything of the programs. Every -i
 * ms it reads the cgroup's processes' private anonymous mappings from
 * /proc/PID/maps and their pages' frames from /proc/PID/pagemap (root),
 * the node of each frame from the memory blocks in sysfs, and counts the
 * node changes of each (pid, page). On SIGTERM or SIGINT it samples once
 * more and prints one line:
 *
 *   watch samples=S pages=P moves=M pages_moved=N moved_twice=T on=0:a,1:b
 *
 * (pages: distinct pages seen; moves: node changes seen; moved_twice:
 * pages that changed node more than once; on: pages per node at the end).
 * A page that moves and comes back between two samples is missed: the
 * figures are lower bounds at the sampling rate.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SLOTS		(1U << 21)
#define MAX_BLOCKS	4096
#define MAX_NODES	64

struct page_ent {
	uint64_t key;		/* pid << 40 | virtual page number; 0: free */
	int16_t node;
	uint16_t changes;
	uint32_t seen;		/* sample in which it was last seen */
};

static struct page_ent *tab;
static int block_node[MAX_BLOCKS];
static uint64_t block_pages;	/* pages per memory block */
static volatile sig_atomic_t done;
static uint32_t sample_no;
static uint64_t nr_pages;

static void on_signal(int sig)
{
	(void)sig;
	done = 1;
}

/* The node of every memory block, from /sys/devices/system/node. */
static int read_blocks(void)
{
	char path[256], buf[64];
	int fd, n, i;
	ssize_t r;

	fd = open("/sys/devices/system/memory/block_size_bytes", O_RDONLY);
	if (fd < 0)
		return -1;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return -1;
	buf[r] = 0;
	block_pages = strtoull(buf, NULL, 16) / 4096;
	for (i = 0; i < MAX_BLOCKS; i++)
		block_node[i] = -1;
	for (n = 0; n < MAX_NODES; n++) {
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", n);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			int b;

			if (sscanf(de->d_name, "memory%d", &b) == 1 && b >= 0 &&
			    b < MAX_BLOCKS)
				block_node[b] = n;
		}
		closedir(d);
	}
	return block_pages ? 0 : -1;
}

static struct page_ent *lookup(uint64_t key)
{
	uint64_t h = key * 0x9E3779B97F4A7C15ULL;
	uint32_t i;

	for (i = 0; i < 64; i++) {
		struct page_ent *p = &tab[(h + i) & (SLOTS - 1)];

		if (p->key == key)
			return p;
		if (!p->key) {
			p->key = key;
			p->node = -1;
			nr_pages++;
			return p;
		}
	}
	return NULL;	/* full around here: not counted */
}

static void page_seen(pid_t pid, uint64_t vpn, uint64_t pfn)
{
	uint64_t b = pfn / block_pages;
	int node = b < MAX_BLOCKS ? block_node[b] : -1;
	struct page_ent *p = lookup((uint64_t)pid << 40 | vpn);

	if (!p || node < 0)
		return;
	if (p->node >= 0 && p->node != node && p->changes < UINT16_MAX)
		p->changes++;
	p->node = node;
	p->seen = sample_no;
}

static void scan_process(pid_t pid)
{
	char path[64], line[512];
	uint64_t pm[512];
	FILE *maps;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	maps = fopen(path, "re");
	while (fd >= 0 && maps && fgets(line, sizeof(line), maps)) {
		unsigned long long s, e, a;
		char perms[8], name[256] = "";

		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %255s", &s, &e,
			   perms, name) < 3 || perms[1] != 'w' || perms[3] != 'p' ||
		    (name[0] && name[0] != '['))
			continue;
		for (a = s; a < e; a += 512 * 4096ULL) {
			size_t n = (e - a) / 4096 < 512 ? (e - a) / 4096 : 512, k;
			ssize_t got = pread(fd, pm, n * 8, (a / 4096) * 8);

			for (k = 0; got > 0 && k < (size_t)got / 8; k++)
				if ((pm[k] >> 63) & 1 && (pm[k] & ((1ULL << 55) - 1)))
					page_seen(pid, a / 4096 + k,
						  pm[k] & ((1ULL << 55) - 1));
		}
	}
	if (maps)
		fclose(maps);
	if (fd >= 0)
		close(fd);
}

static void sample(const char *cgroup)
{
	char path[512];
	FILE *f;
	int pid;

	sample_no++;
	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fscanf(f, "%d", &pid) == 1)
		scan_process(pid);
	fclose(f);
}

static void report(void)
{
	uint64_t moves = 0, moved = 0, twice = 0, on[MAX_NODES] = { 0 };
	uint32_t i;
	int n, first = 1;

	for (i = 0; i < SLOTS; i++) {
		const struct page_ent *p = &tab[i];

		if (!p->key)
			continue;
		moves += p->changes;
		moved += p->changes > 0;
		twice += p->changes > 1;
		if (p->seen == sample_no && p->node >= 0 && p->node < MAX_NODES)
			on[p->node]++;
	}
	printf("watch samples=%u pages=%llu moves=%llu pages_moved=%llu moved_twice=%llu on=",
	       sample_no, (unsigned long long)nr_pages, (unsigned long long)moves,
	       (unsigned long long)moved, (unsigned long long)twice);
	for (n = 0; n < MAX_NODES; n++)
		if (on[n]) {
			printf("%s%d:%llu", first ? "" : ",", n, (unsigned long long)on[n]);
			first = 0;
		}
	printf("\n");
}

int main(int argc, char **argv)
{
	const char *cgroup = NULL;
	int ms = 500, c;
	struct sigaction sa = { .sa_handler = on_signal };

	while ((c = getopt(argc, argv, "c:i:h")) != -1) {
		switch (c) {
		case 'c': cgroup = optarg; break;
		case 'i': ms = atoi(optarg); break;
		default:
			fprintf(stderr, "Usage: placement-watch -c CGROUP_DIR [-i MS]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (!cgroup || ms <= 0) {
		fprintf(stderr, "Usage: placement-watch -c CGROUP_DIR [-i MS]\n");
		return 2;
	}
	if (read_blocks()) {
		fprintf(stderr, "placement-watch: no memory blocks in /sys/devices/system/memory\n");
		return 1;
	}
	tab = calloc(SLOTS, sizeof(*tab));
	if (!tab) {
		fprintf(stderr, "placement-watch: out of memory\n");
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	while (!done) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		sample(cgroup);
		nanosleep(&ts, NULL);
	}
	sample(cgroup);
	report();
	return 0;
}
