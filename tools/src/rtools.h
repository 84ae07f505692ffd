/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the refcnt command-line tools (tools/src/refcnt-*.c): exit
 * codes, error messages that name the cause, option checks, opening the
 * node devices, node and counter naming, JSON strings, number parsing.
 * The heatmap writer is heatmap.h.
 */
#ifndef REFCNT_RTOOLS_H
#define REFCNT_RTOOLS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <refcnt/refcnt.h>

#include "rinterval.h"
#include "rjson.h"

/*
 * Exit codes: the one list for every tool, as each man page's EXIT
 * STATUS section gives it. Functions (here, heatmap.c, refcnt-run's
 * parts) return 0, or on failure a negative errno or -1, the cause
 * already printed; only main() turns a failure into an exit code,
 * through rt_exit_code() or rt_run_exit_code().
 */
enum rt_exit {
	RT_EXIT_OK		= 0,
	RT_EXIT_FAIL		= 1,	/* anything else that went wrong */
	RT_EXIT_USAGE		= 2,	/* bad option or argument */
	RT_EXIT_NOMODULE	= 3,	/* refcnt module not loaded, no devices */
	RT_EXIT_PERM		= 4,	/* permission denied */
	/*
	 * refcnt-run exits with its command's status, so its own failures
	 * take codes commands seldom use, as env(1) and timeout(1) do.
	 */
	RT_EXIT_RUN_NOMODULE	= 121,	/* RT_EXIT_NOMODULE */
	RT_EXIT_RUN_PERM	= 122,	/* RT_EXIT_PERM */
	RT_EXIT_RUN_FAIL	= 125,	/* RT_EXIT_FAIL and RT_EXIT_USAGE */
	RT_EXIT_RUN_NOEXEC	= 126,	/* the command cannot be executed */
	RT_EXIT_RUN_NOTFOUND	= 127,	/* the command is not found */
};

/*
 * The exit code for a failure err (< 0) of a function below: -ENODEV
 * RT_EXIT_NOMODULE, -EACCES RT_EXIT_PERM, -EINVAL RT_EXIT_USAGE,
 * anything else RT_EXIT_FAIL. 0 stays 0. -1 is -EPERM: a permission
 * failure is therefore always -EACCES, and -1 a failure of no class.
 */
int rt_exit_code(int err);
/* The same in refcnt-run's codes (RT_EXIT_RUN_*). */
int rt_run_exit_code(int err);

extern const char *rt_prog;

void rt_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* rt_err() with a va_list: "PROG: message" on stderr. */
void rt_verr(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* An operand where none is taken: say so, usage to stderr; -EINVAL. */
int rt_unexpected_arg(const char *arg, void (*usage)(FILE *f));
/* --node N into *nid: 0, or -EINVAL with the cause printed. */
int rt_parse_node(const char *s, int *nid);

/*
 * Explain an errno met opening or using a refcnt device and return its
 * class: -ENODEV (module not loaded, no device), -EACCES (EACCES or
 * EPERM: permission), -EIO (anything else: the message has the cause).
 * what names what failed ("/dev/refcnt/node0", "RCB_SETS_READ", ...).
 */
int rt_dev_error(int err, const char *what);
/* rt_dev_error() for node nid's device, what = op + "/dev/refcnt/nodeN". */
int rt_node_error(int err, const char *op, int nid);

/*
 * Linux node ids with a device into *nids (malloc'ed): how many, or when
 * there are none a negative errno (-ENODEV, -EIO, -ENOMEM), printed.
 */
int rt_node_ids(int **nids);
/* rt_node_ids(), only node `only` if >= 0 (--node); -EINVAL if none. */
int rt_select_nodes(int only, int **nids);
/* Open node nid's device into *h, read its info: 0, or rt_dev_error()'s. */
int rt_node_open(int nid, struct refcnt_node **h, struct rcb_info *info);
/* Physical address of counter set number set of a table over slots; 0: none. */
uint64_t rt_set_paddr(const struct rcb_slot *slots, int nr, uint64_t gran,
		      uint64_t set);

/* A sysfs (or procfs) file's first number; def when it cannot be read. */
long long rt_read_ll(const char *path, long long def);
/* A file's first line, newline dropped; 0, or -1 when it cannot be read. */
int rt_read_line(const char *path, char *buf, size_t size);

/*
 * Counters and the nodes they count. A counter counts one cnodeid, or a
 * group of RCB_NODES_PER_GROUP cnodeids above RCB_MAX_COUNTERS nodes.
 */
struct rt_counters {
	int nr;			/* counters per set */
	int nodes_per_counter;
	int nr_cnodes;
	int *cnode_nid;		/* nid of each cnodeid */
	char (*label)[24];	/* "3", or "0-7" for a group */
};

/* From one node's rcb_info and libnuma. 0, or -1 with the cause printed. */
int rt_counters_init(struct rt_counters *c, const struct rcb_info *info);
void rt_counters_free(struct rt_counters *c);
/* The counter that counts references from node nid, or -1. */
int rt_counter_of_nid(const struct rt_counters *c, int nid);

/*
 * ACPI SLIT distance between two online nodes (10: local), -1 unknown.
 * Reads each node's row of /sys/devices/system/node once.
 */
int rt_distance(int from, int to);

/*
 * A number with an optional K, M, G, T suffix (binary), decimal or 0x
 * hex. 0, or -1 when it is not one.
 */
int rt_parse_u64(const char *s, uint64_t *v);
/* "START-END" or "START+LEN" into [*start, *end). 0 or -1. */
int rt_parse_range(const char *s, uint64_t *start, uint64_t *end);

/* Bytes as "512M", "1.5G", "64K", "12B" into buf. */
const char *rt_human(uint64_t bytes, char *buf, size_t size);

#endif /* REFCNT_RTOOLS_H */
