// SPDX-License-Identifier: GPL-2.0
/*
 * refcntd: statistics and log lines. The stats file is rewritten whole
 * (a temporary file renamed over it), so a reader never sees half of it.
 * Log lines go to stderr, one event a line; under systemd (JOURNAL_STREAM
 * set) they carry the sd-daemon "<N>" priority prefix the journal reads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "rjson.h"

const char *const rd_refusal_names[RD_REF_NR] = {
	[RD_REF_NO_CONTEXT] = "no_context",
	[RD_REF_NOT_OPTED_IN] = "not_opted_in",
	[RD_REF_GONE] = "gone",
	[RD_REF_NOT_PERMITTED] = "not_permitted",
	[RD_REF_MLOCKED] = "mlocked",
	[RD_REF_SHARED] = "shared",
	[RD_REF_PINNED] = "pinned",
	[RD_REF_NOT_PRESENT] = "not_present",
	[RD_REF_STALE] = "stale",
	[RD_REF_NO_MEMORY] = "no_memory",
	[RD_REF_NOT_ALLOWED] = "not_allowed",
	[RD_REF_ERROR] = "error",
};

int rd_quiet;
int rd_verbose;

void rd_log(int prio, const char *fmt, ...)
{
	static int journal = -1;
	va_list ap;

	if ((rd_quiet && prio > 4) || (!rd_verbose && prio > 6))
		return;
	if (journal < 0)
		journal = getenv("JOURNAL_STREAM") != NULL;
	if (journal)
		fprintf(stderr, "<%d>", prio);
	fprintf(stderr, "%s: ", rt_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t refused_total(const struct rd_stats *s)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < RD_REF_NR; i++)
		n += s->refused[i];
	return n;
}

static void print_json(FILE *f, const struct rd_stats *s)
{
	int i;

	fprintf(f, "{\"events\": %" PRIu64 ", \"lost\": %" PRIu64
		", \"below_threshold\": %" PRIu64 ", \"moved\": %" PRIu64
		", \"moved_bytes\": %" PRIu64 ", \"dry_run\": %" PRIu64
		", \"rate_limited\": %" PRIu64 ", \"frozen\": %" PRIu64
		", \"melted\": %" PRIu64 ", \"scans\": %" PRIu64
		", \"context_from_rmap\": %" PRIu64
		", \"rmap_rebuilds\": %" PRIu64
		", \"rmap_ms\": %" PRIu64
		", \"over_time\": %" PRIu64
		", \"frames_folded\": %" PRIu64
		", \"count_scans\": %" PRIu64
		", \"count_scan_pages\": %" PRIu64
		", \"count_scan_candidates\": %" PRIu64
		", \"thread_hints\": %" PRIu64
		", \"refused\": %" PRIu64 ", \"refused_by_reason\": {",
		s->events, s->lost, s->below, s->moved, s->moved_bytes,
		s->dry_run, s->rate_limited, s->frozen, s->melted, s->scans,
		s->rmapped, s->rmap_rebuilds, s->rmap_ns / 1000000,
		s->over_time, s->frames_folded, s->count_scans,
		s->count_scan_pages, s->count_scan_candidates,
		s->thread_hints, refused_total(s));
	for (i = 0; i < RD_REF_NR; i++)
		fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "",
			rd_refusal_names[i], s->refused[i]);
	fprintf(f, "}, \"feed\": ");
	rt_json_str(f, rd_feed_name);
	fprintf(f, "}\n");
}

void rd_stats_print(FILE *f, const struct rd_stats *s, int json)
{
	int i;

	if (json) {
		print_json(f, s);
		return;
	}
	fprintf(f, "events %" PRIu64 " lost %" PRIu64 " below_threshold %" PRIu64
		" moved %" PRIu64 " moved_bytes %" PRIu64 " dry_run %" PRIu64
		" rate_limited %" PRIu64 " frozen %" PRIu64 " melted %" PRIu64
		" scans %" PRIu64 " count_scans %" PRIu64
		" count_scan_candidates %" PRIu64 " thread_hints %" PRIu64
		" refused %" PRIu64,
		s->events, s->lost, s->below, s->moved, s->moved_bytes,
		s->dry_run, s->rate_limited, s->frozen, s->melted, s->scans,
		s->count_scans, s->count_scan_candidates, s->thread_hints,
		refused_total(s));
	for (i = 0; i < RD_REF_NR; i++)
		if (s->refused[i])
			fprintf(f, " refused_%s %" PRIu64, rd_refusal_names[i],
				s->refused[i]);
	fputc('\n', f);
}

int rd_stats_write(const char *path, const struct rd_stats *s)
{
	char tmp[300];
	FILE *f;
	int err = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f) {
		err = -errno;
		rd_log(3, "stats file %s: %s", tmp, strerror(errno));
		return err;
	}
	print_json(f, s);
	if (fclose(f) || rename(tmp, path)) {
		err = -errno;
		rd_log(3, "stats file %s: %s", path, strerror(errno));
		unlink(tmp);
	}
	return err;
}
