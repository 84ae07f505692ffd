// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd: the configuration file, "key = value" lines and # comments
 * (refcntd.conf(5)). Every key is checked; an unknown key, a bad value
 * or a contradiction is an error naming the file and line, so a daemon
 * never starts (or reloads) with a configuration it half understood.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void rd_config_defaults(struct rd_config *c)
{
	memset(c, 0, sizeof(*c));
	c->diff_threshold = 64;
	c->abs_threshold = 0;
	c->promote_threshold = 32;
	c->set_thresholds = 1;
	c->rate_pages = 1000;
	c->rate_mb = 64;
	c->freeze_ms = 10000;
	c->melt_events = 4;
	c->min_free_mb = 16;
	c->all = 0;
	c->log_moves = 1;
	c->stats_interval = 60;
	c->rmap_ms = 1000;
	c->rmap_cpu_pct = 5;
	c->events = 1;
	c->thread_hint_pages = 4096;
	strcpy(c->feed, "auto");
}

static int parse_uint(const char *v, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long n;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

static int parse_bool(const char *v, int *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
		*out = 1;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
		*out = 0;
	else
		return -EINVAL;
	return 0;
}

static int parse_rate(const char *v, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	if (errno || end == v || *end || *out < 0 || *out > 1e9)
		return -EINVAL;
	return 0;
}

/* A space-separated list into one of the lists of c. */
static int parse_list(struct rd_config *c, const char *key, const char *v,
		      char *why, size_t size)
{
	char buf[4096], *tok, *save;
	uint64_t n;

	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, " \t,", &save); tok;
	     tok = strtok_r(NULL, " \t,", &save)) {
		if (!strcmp(key, "pids") || !strcmp(key, "trees")) {
			int *nr = key[0] == 'p' ? &c->nr_pids : &c->nr_trees;

			if (parse_uint(tok, INT_MAX, &n) || !n) {
				snprintf(why, size, "%s: '%s' is not a pid", key, tok);
				return -EINVAL;
			}
			if (*nr == RD_MAX_LIST)
				goto full;
			(key[0] == 'p' ? c->pids : c->trees)[(*nr)++] = n;
		} else if (!strcmp(key, "comms")) {
			if (strlen(tok) > 15) {
				snprintf(why, size, "comms: '%s' is longer than a command name (15)", tok);
				return -EINVAL;
			}
			if (c->nr_comms == RD_MAX_LIST)
				goto full;
			snprintf(c->comms[c->nr_comms++], 16, "%s", tok);
		} else {
			if (tok[0] != '/' || strlen(tok) >= 256) {
				snprintf(why, size, "cgroups: '%s' is not a cgroup path (/a/b)", tok);
				return -EINVAL;
			}
			if (c->nr_cgroups == RD_MAX_LIST)
				goto full;
			snprintf(c->cgroups[c->nr_cgroups++], 256, "%s", tok);
		}
	}
	return 0;
full:
	snprintf(why, size, "%s: more than %d entries", key, RD_MAX_LIST);
	return -EINVAL;
}

int rd_config_set(struct rd_config *c, const char *key, const char *v,
		  char *why, size_t size)
{
	uint64_t n;
	int err = 0;

	if (!strcmp(key, "pids") || !strcmp(key, "trees") ||
	    !strcmp(key, "comms") || !strcmp(key, "cgroups"))
		return parse_list(c, key, v, why, size);
	if (!strcmp(key, "processes")) {
		if (strcmp(v, "all") && strcmp(v, "opt-in"))
			err = -EINVAL;
		c->all = !strcmp(v, "all");
	} else if (!strcmp(key, "dry_run")) {
		err = parse_bool(v, &c->dry_run);
	} else if (!strcmp(key, "set_thresholds")) {
		err = parse_bool(v, &c->set_thresholds);
	} else if (!strcmp(key, "log_moves")) {
		err = parse_bool(v, &c->log_moves);
	} else if (!strcmp(key, "events")) {
		err = parse_bool(v, &c->events);
	} else if (!strcmp(key, "rate_pages")) {
		err = parse_rate(v, &c->rate_pages);
	} else if (!strcmp(key, "rate_mb")) {
		err = parse_rate(v, &c->rate_mb);
	} else if (!strcmp(key, "stats_file")) {
		if (v[0] != '/' || strlen(v) >= sizeof(c->stats_file))
			err = -EINVAL;
		else
			snprintf(c->stats_file, sizeof(c->stats_file), "%s", v);
	} else if (!strcmp(key, "feed")) {
		if (strcmp(v, "auto") && strcmp(v, "pebs") && strcmp(v, "hinting") &&
		    strcmp(v, "faults") && strcmp(v, "hub") && strcmp(v, "none")) {
			snprintf(why, size, "feed: '%s' is not one of auto, pebs, hinting, faults, hub, none", v);
			return -EINVAL;
		}
		snprintf(c->feed, sizeof(c->feed), "%s", v);
	} else if (!strcmp(key, "fallback")) {
		if (strcmp(v, "nearest") && strcmp(v, "none")) {
			snprintf(why, size, "fallback: '%s' is not one of nearest, none", v);
			return -EINVAL;
		}
		c->fallback = strcmp(v, "nearest") ? RD_FALLBACK_NONE :
			      RD_FALLBACK_NEAREST;
	} else if (!strcmp(key, "min_free_mb")) {
		err = parse_uint(v, UINT64_MAX >> 20, &c->min_free_mb);
	} else if (!strcmp(key, "rmap_cpu_pct")) {
		err = parse_uint(v, 100, &n);
		if (!err)
			c->rmap_cpu_pct = n;
		else
			snprintf(why, size, "rmap_cpu_pct: '%s' is not 0 to 100", v);
		return err;
	} else {
		static const struct { const char *k; size_t off; } u32s[] = {
			{ "diff_threshold", offsetof(struct rd_config, diff_threshold) },
			{ "abs_threshold", offsetof(struct rd_config, abs_threshold) },
			{ "promote_threshold", offsetof(struct rd_config, promote_threshold) },
			{ "fold_threshold", offsetof(struct rd_config, fold_threshold) },
			{ "freeze_ms", offsetof(struct rd_config, freeze_ms) },
			{ "melt_events", offsetof(struct rd_config, melt_events) },
			{ "stats_interval", offsetof(struct rd_config, stats_interval) },
			{ "feed_period", offsetof(struct rd_config, feed_period) },
			{ "scan_ms", offsetof(struct rd_config, scan_ms) },
			{ "count_scan_ms", offsetof(struct rd_config, count_scan_ms) },
			{ "thread_hint_pages", offsetof(struct rd_config, thread_hint_pages) },
			{ "rmap_ms", offsetof(struct rd_config, rmap_ms) },
		};
		size_t i;

		for (i = 0; i < sizeof(u32s) / sizeof(u32s[0]); i++)
			if (!strcmp(key, u32s[i].k))
				break;
		if (i == sizeof(u32s) / sizeof(u32s[0])) {
			snprintf(why, size, "unknown key '%s'", key);
			return -EINVAL;
		}
		err = parse_uint(v, UINT32_MAX, &n);
		if (!err)
			*(uint32_t *)((char *)c + u32s[i].off) = n;
	}
	if (err)
		snprintf(why, size, "%s: bad value '%s'", key, v);
	return err;
}

int rd_config_check(const struct rd_config *c, char *why, size_t size)
{
	if (!c->all && !c->nr_pids && !c->nr_trees && !c->nr_comms &&
	    !c->nr_cgroups && c->root_pid <= 0) {
		snprintf(why, size, "processes = opt-in but no pids, trees, comms or cgroups: nothing to act on");
		return -EINVAL;
	}
	if (c->all && (c->nr_pids || c->nr_trees || c->nr_comms || c->nr_cgroups)) {
		snprintf(why, size, "processes = all and an opt-in list (pids, trees, comms, cgroups): choose one");
		return -EINVAL;
	}
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int rd_config_load(struct rd_config *c, const char *path)
{
	char line[4096], why[512];
	FILE *f = fopen(path, "re");
	int nr = 0, err = 0;

	if (!f) {
		err = -errno;
		rd_log(3, "%s: %s", path, strerror(errno));
		return err == -EACCES ? -EACCES : -EINVAL;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		char *s, *eq, *hash = strchr(line, '#');

		nr++;
		if (hash)
			*hash = '\0';
		s = trim(line);
		if (!*s)
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			snprintf(why, sizeof(why), "expected 'key = value'");
			err = -EINVAL;
			break;
		}
		*eq = '\0';
		err = rd_config_set(c, trim(s), trim(eq + 1), why, sizeof(why));
	}
	fclose(f);
	if (err) {
		rd_log(3, "%s:%d: %s", path, nr, why);
		return err;
	}
	err = rd_config_check(c, why, sizeof(why));
	if (err)
		rd_log(3, "%s: %s", path, why);
	return err;
}
