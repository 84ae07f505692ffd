// SPDX-License-Identifier: GPL-2.0
/*
 * truth-inject TRUTH.csv: the control feed of `make accuracy`.  Delivers
 * every reference of a truth table (refcnt-truth's refcnt-dump --csv
 * layout) to refcnt through RCB_INJECT, after RCB_RESET of every node, so
 * that refcnt-dump afterwards must give back the truth exactly: the
 * comparison of the two must score 100%.  The counter columns of the
 * truth are in cnodeid order (refcnt-vm passes the online nodes in order).
 *
 * Each counter's references go in one entry (or a few, above 2^32-1): a
 * delivery of many references folds as it crosses the threshold instead
 * of pegging (Documentation/design.rst, "Weighted references").
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

/* Every counter's references, in batches. */
static void deliver(int fd)
{
	size_t i;

	for (i = 0; i < nr_wants; i++) {
		while (wants[i].left) {
			uint32_t c = wants[i].left > UINT32_MAX ? UINT32_MAX :
				     (uint32_t)wants[i].left;

			if (nr == RCB_INJECT_MAX)
				flush(fd);
			batch[nr].paddr = wants[i].paddr;
			batch[nr].src_cnodeid = wants[i].cnode;
			batch[nr].count = c;
			nr++;
			wants[i].left -= c;
		}
	}
	flush(fd);
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
