// SPDX-License-Identifier: GPL-2.0
/* Named address ranges from a region file or nm -S (regions.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regions.h"
#include "rtools.h"

static int cmp_start(const void *a, const void *b)
{
	const struct region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int all_hex(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* One line's words into a region: 0, 1 to skip it, -1 bad. */
static int parse_line(char **w, int nw, struct region *r)
{
	uint64_t a, b;

	if (nw == 4 && all_hex(w[0]) && all_hex(w[1]) && strlen(w[2]) == 1) {
		/* nm -S: ADDR SIZE TYPE NAME */
		a = strtoull(w[0], NULL, 16);
		b = strtoull(w[1], NULL, 16);
		if (!b)
			return 1;
		snprintf(r->name, sizeof(r->name), "%s", w[3]);
		r->start = a;
		r->end = a + b;
		return 0;
	}
	if (nw == 3 && all_hex(w[0]) && strlen(w[1]) == 1)
		return 1;	/* nm -S: a symbol without a size */
	if (nw >= 3 && !strcmp(w[0], "array") && !rt_parse_range(w[2], &a, &b)) {
		/* demo-workload's labels, as refcnt-run --labels reads them */
		snprintf(r->name, sizeof(r->name), "%s", w[1]);
		r->start = a;
		r->end = b;
		return r->end > r->start ? 0 : -1;
	}
	if (nw == 3 && !rt_parse_u64(w[1], &a) && !rt_parse_u64(w[2], &b)) {
		r->start = a;
		r->end = b;
	} else if (nw == 2 && !rt_parse_range(w[1], &a, &b)) {
		r->start = a;
		r->end = b;
	} else {
		return -1;
	}
	if (r->end <= r->start)
		return -1;
	snprintf(r->name, sizeof(r->name), "%s", w[0]);
	return 0;
}

int regions_read(struct regions *rs, const char *path)
{
	char line[512];
	unsigned long no = 0;
	FILE *f = fopen(path, "r");

	rs->r = NULL;
	rs->maxend = NULL;
	rs->n = 0;
	if (!f) {
		rt_err("%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *w[8], *save, *p = strchr(line, '#');
		struct region r, *nr;
		int nw = 0, rc;

		no++;
		if (p)
			*p = 0;
		for (p = strtok_r(line, " \t\r\n", &save); p && nw < 8;
		     p = strtok_r(NULL, " \t\r\n", &save))
			w[nw++] = p;
		if (!nw)
			continue;
		rc = parse_line(w, nw, &r);
		if (rc > 0)
			continue;
		if (rc < 0) {
			rt_err("%s: line %lu: want NAME START END, NAME START+LEN, NAME START-END or nm -S's ADDR SIZE TYPE NAME",
			       path, no);
			fclose(f);
			regions_free(rs);
			return -1;
		}
		nr = realloc(rs->r, (rs->n + 1) * sizeof(*nr));
		if (!nr) {
			fclose(f);
			regions_free(rs);
			return -1;
		}
		rs->r = nr;
		rs->r[rs->n++] = r;
	}
	fclose(f);
	qsort(rs->r, rs->n, sizeof(*rs->r), cmp_start);
	rs->maxend = calloc(rs->n + 1, sizeof(*rs->maxend));
	if (!rs->maxend) {
		regions_free(rs);
		return -1;
	}
	for (int i = 0; i < rs->n; i++)
		rs->maxend[i] = i && rs->maxend[i - 1] > rs->r[i].end ?
				rs->maxend[i - 1] : rs->r[i].end;
	return 0;
}

int regions_find(const struct regions *rs, uint64_t addr)
{
	int lo = 0, hi = rs->n - 1, best = -1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (rs->r[mid].start <= addr) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	/* The closest start below; an earlier, larger region may hold it. */
	for (; best >= 0 && rs->maxend[best] > addr; best--)
		if (addr < rs->r[best].end)
			return best;
	return -1;
}

void regions_free(struct regions *rs)
{
	free(rs->r);
	free(rs->maxend);
	rs->r = NULL;
	rs->maxend = NULL;
	rs->n = 0;
}
