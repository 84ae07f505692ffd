// SPDX-License-Identifier: GPL-2.0
/*
 * truth-inject TRUTH.csv: the control feed of `make accuracy`.  Delivers
 * every reference of a truth table (refcnt-truth's refcnt-dump --csv
 * layout) to refcnt through RCB_INJECT, after RCB_RESET of every node, so
 * that refcnt-dump afterwards must give back the truth exactly: the
 * comparison of the two must score 100%.  The counter columns of the
 * truth are in cnodeid order (refcnt-vm passes the online nodes in order).
 *
 * A hardware counter pegs at its maximum (2047 with 11 bits) until the
 * threshold interrupt (at 7/8 of it + 1) folds it into the extended
 * counter, and RCB_INJECT_SYNC runs those interrupts only when a call
 * returns.  So references go in rounds of at most CHUNK per counter and
 * call: below the threshold plus CHUNK stays below the maximum.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/refcnt.h>

#define CHUNK	250

struct want {
	uint64_t paddr;
	uint32_t cnode;
	uint64_t left;
};

static struct want *wants;
static size_t nr_wants, cap_wants;
static struct rcb_ref batch[RCB_INJECT_MAX];
static unsigned int nr;
static unsigned long long skipped;

static void die(const char *what)
{
	fprintf(stderr, "truth-inject: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void flush(int fd)
{
	struct rcb_inject in = {
		.refs = (uintptr_t)batch, .nr_refs = nr, .flags = RCB_INJECT_SYNC,
	};

	unsigned int i;

	if (nr && ioctl(fd, RCB_INJECT, &in)) {
		if (errno != EINVAL)
			die("RCB_INJECT");
		/* An address in no node's slot fails the batch: one by one. */
		for (i = 0; i < nr; i++) {
			struct rcb_inject one = {
				.refs = (uintptr_t)&batch[i], .nr_refs = 1,
				.flags = RCB_INJECT_SYNC,
			};

			if (!ioctl(fd, RCB_INJECT, &one))
				continue;
			if (errno != EINVAL)
				die("RCB_INJECT");
			skipped += batch[i].count;
		}
	}
	nr = 0;
}

static void want(uint64_t paddr, uint32_t cnode, uint64_t count)
{
	if (nr_wants == cap_wants) {
		cap_wants = cap_wants ? 2 * cap_wants : 65536;
		wants = realloc(wants, cap_wants * sizeof(*wants));
		if (!wants)
			die("realloc");
	}
	wants[nr_wants].paddr = paddr;
	wants[nr_wants].cnode = cnode;
	wants[nr_wants].left = count;
	nr_wants++;
}

/* Rounds of at most CHUNK per counter, each batch synchronous. */
static void deliver(int fd)
{
	size_t i, active = nr_wants;

	while (active) {
		active = 0;
		for (i = 0; i < nr_wants; i++) {
			uint32_t c;

			if (!wants[i].left)
				continue;
			c = wants[i].left > CHUNK ? CHUNK : (uint32_t)wants[i].left;
			if (nr == RCB_INJECT_MAX)
				flush(fd);
			batch[nr].paddr = wants[i].paddr;
			batch[nr].src_cnodeid = wants[i].cnode;
			batch[nr].count = c;
			nr++;
			wants[i].left -= c;
			active += !!wants[i].left;
		}
		flush(fd);
	}
}

int main(int argc, char **argv)
{
	char line[4096], dev[64];
	unsigned long long total = 0;
	FILE *f;
	int fd, n;

	if (argc != 2) {
		fprintf(stderr, "usage: truth-inject TRUTH.csv\n");
		return 2;
	}
	f = fopen(argv[1], "r");
	if (!f || !fgets(line, sizeof(line), f))
		die(argv[1]);
	fd = open("/dev/refcnt/node0", O_RDWR);
	if (fd < 0)
		die("/dev/refcnt/node0");
	/* Every node's table from zero. */
	for (n = 0; n < 1024; n++) {
		int nfd;

		snprintf(dev, sizeof(dev), "/dev/refcnt/node%d", n);
		nfd = open(dev, O_RDWR);
		if (nfd < 0)
			continue;
		if (ioctl(nfd, RCB_RESET))
			die("RCB_RESET");
		close(nfd);
	}
	while (fgets(line, sizeof(line), f)) {
		char *tok, *save;
		uint64_t paddr = 0;
		int field = 0;

		for (tok = strtok_r(line, ",\n", &save); tok;
		     tok = strtok_r(NULL, ",\n", &save), field++) {
			if (field == 1)
				paddr = strtoull(tok, NULL, 0);
			/* set,paddr,node,cnodeid,refs, then counters, then lost */
			if (field >= 5) {
				uint64_t c = strtoull(tok, NULL, 10);

				if (save && *save && c) {
					want(paddr, field - 5, c);
					total += c;
				}
			}
		}
	}
	deliver(fd);
	printf("truth-inject: %llu references injected, %llu on pages refcnt has no slot for\n",
	       total - skipped, skipped);
	return 0;
}
