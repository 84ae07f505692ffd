// SPDX-License-Identifier: GPL-2.0
/*
 * Output files written whole or not at all, and parsing helpers, for the
 * trace analyses (trace-tool.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rtools.h"
#include "trace-tool.h"

int tt_open(struct tt_out *o, const char *path)
{
	memset(o, 0, sizeof(*o));
	if (!strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	if (asprintf(&o->tmp, "%s.tmp", path) < 0 || !(o->path = strdup(path))) {
		rt_err("out of memory");
		return -1;
	}
	o->f = fopen(o->tmp, "w");
	if (!o->f) {
		rt_err("cannot write %s: %s", o->tmp, strerror(errno));
		free(o->tmp);
		free(o->path);
		return -1;
	}
	return 0;
}

int tt_commit(struct tt_out *o)
{
	int rc = 0;

	if (!o->f)
		return 0;
	if (o->f == stdout) {
		if (fflush(stdout)) {
			rt_err("cannot write the standard output: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	if (fflush(o->f) || ferror(o->f) || fclose(o->f)) {
		rt_err("cannot write %s: %s", o->tmp, strerror(errno));
		unlink(o->tmp);
		rc = -1;
	} else if (rename(o->tmp, o->path)) {
		rt_err("cannot rename %s to %s: %s", o->tmp, o->path, strerror(errno));
		unlink(o->tmp);
		rc = -1;
	}
	o->f = NULL;
	free(o->tmp);
	free(o->path);
	return rc;
}

void tt_discard(struct tt_out *o)
{
	if (!o->f || o->f == stdout)
		return;
	fclose(o->f);
	unlink(o->tmp);
	o->f = NULL;
	free(o->tmp);
	free(o->path);
}

double tt_pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

/* "A" or "A-B" into [*a, *b]: the end of the item, or NULL. */
static const char *parse_item(const char *s, long *a, long *b)
{
	char *end;

	*a = strtol(s, &end, 10);
	if (end == s || *a < 0)
		return NULL;
	*b = *a;
	if (*end == '-') {
		s = end + 1;
		*b = strtol(s, &end, 10);
		if (end == s || *b < *a)
			return NULL;
	}
	return end;
}

int tt_parse_nodes(const char *opt, const char *s, int **nids)
{
	const char *p = s;
	int n = 0, *v = NULL;

	while (*p) {
		long a, b;

		p = parse_item(p, &a, &b);
		if (!p || b > 4095 || (*p && *p != ',')) {
			rt_err("%s %s: want node ids, as 0,1,3 or 0-3", opt, s);
			free(v);
			return -1;
		}
		for (; a <= b; a++) {
			int *nv = realloc(v, (n + 1) * sizeof(*v));

			if (!nv) {
				free(v);
				return -1;
			}
			v = nv;
			v[n++] = (int)a;
		}
		if (*p)
			p++;
	}
	if (!n) {
		rt_err("%s: no node given", opt);
		return -1;
	}
	*nids = v;
	return n;
}

int tt_parse_map(const char *s, int *map, int nr)
{
	const char *p = s;

	while (*p) {
		long a, b, node;
		char *end;

		p = parse_item(p, &a, &b);
		if (!p || *p != '=')
			goto bad;
		node = strtol(p + 1, &end, 10);
		if (end == p + 1 || node < 0 || node > 4095 || (*end && *end != ','))
			goto bad;
		for (; a <= b; a++) {
			if (a >= nr) {
				rt_err("--map %s: thread %ld: the traces have %d threads",
				       s, a, nr);
				return -1;
			}
			map[a] = (int)node;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
bad:
	rt_err("--map %s: want THREAD=NODE[,...], as 0=1,1-3=0", s);
	return -1;
}
