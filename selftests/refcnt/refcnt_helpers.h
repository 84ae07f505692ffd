/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers of the refcnt selftests (refcnt_helpers.c, linked into
 * every test program): sysfs/procfs parsing of the node topology, the
 * module parameters and the expected rcb_info of a node, module
 * load/unload.
 *
 * A test includes this first: it pulls in kselftest_harness.h. The helper
 * .c files define REFCNT_HELPERS_IMPL to leave the harness out, whose
 * non-static definitions belong to the test program alone.
 */
#ifndef REFCNT_HELPERS_H
#define REFCNT_HELPERS_H

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/refcnt.h>

#ifndef REFCNT_HELPERS_IMPL
/* The 6.1 harness has an unused parameter in its SIGALRM handler. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#pragma GCC diagnostic pop
#endif

#define RC_MAX_NODES	4096
#define RC_MAX_SLOTS	4096
#define RC_MAX_RANGES	4096

#define RC_SYSNODE	"/sys/devices/system/node"
#define RC_SYSMEM	"/sys/devices/system/memory"
#define RC_DEVDIR	"/dev/refcnt"
#define RC_MODDIR	"/sys/module/refcnt"
#define RC_PARAMDIR	RC_MODDIR "/parameters"
#define RC_FEEDDIR	"/sys/kernel/refcnt"	/* the feeds' statistics */

#define RC_DEF_GRANULARITY	4096UL

/* A pattern that the kernel never writes, for canary entries. */
#define RC_CANARY	0xa5a5a5a5a5a5a5a5ULL

/* Files: length or -errno (trailing whitespace stripped). */
int rc_read_file(const char *path, char *buf, size_t size);
int rc_write_file(const char *path, const char *s);	/* one write: 0 or -errno */
int rc_read_u64(const char *path, uint64_t *v);	/* one decimal: 0 or -errno */
uint64_t rc_feed_stat(const char *name);	/* RC_FEEDDIR/name, 0 if unreadable */
bool rc_exists(const char *path);
int rc_dmesg_count(const char *s);	/* kernel log lines containing s */

/* Nodes. */
struct rc_nodes {
	int n;
	int id[RC_MAX_NODES];
};

int rc_parse_list(const char *s, struct rc_nodes *out);	/* "0-3,5" */
int rc_node_list(const char *which, struct rc_nodes *out); /* "online", "has_memory".. */
int rc_cnode_list(struct rc_nodes *out);	/* the module's cnodeid order */
int rc_list_index(const struct rc_nodes *l, int id);
bool rc_list_has(const struct rc_nodes *l, int id);
void rc_dev_path(char *buf, size_t size, int node);
int rc_open_node(int node, int flags);
int rc_reset_node(int node);			/* RCB_RESET: 0 or -errno */
/* Read and forget the records queued on node's event queue: 0 or -errno. */
int rc_drain_events(int node);
int rc_node_present_pages(int node, unsigned long long *pages);

/* Memory blocks of a node as sorted disjoint [start, end) ranges. */
struct rc_range {
	uint64_t start, end;
};

int rc_cmp_u64(const void *a, const void *b);	/* qsort() of uint64_t */
int rc_node_block_ranges(int node, struct rc_range *r, int max);

/* Module parameters. */
struct rc_params {
	unsigned long granularity;
	bool premium;
	unsigned long abs_threshold;
	unsigned long diff_threshold;
};

extern const struct rc_params rc_default_params;

int rc_read_ulong_param(const char *name, unsigned long *v);
int rc_read_params(struct rc_params *p);
bool rc_params_equal(const struct rc_params *a, const struct rc_params *b);

/* Expected values. */
unsigned int rc_hw_bits(unsigned int cnodes, bool premium);
unsigned int rc_hw_max(unsigned int cnodes, bool premium);
void rc_expected_info(const struct rc_nodes *cnodes, int node,
		      const struct rc_params *p, struct rcb_info *e);

/*
 * The module: REFCNT_KO, finit_module, delete_module; 0 or -errno.
 * rc_unload() unloads the test rig's feed modules first (refcnt_hub,
 * refcnt_test): each holds refcnt.ko.
 */
const char *rc_ko_path(void);
/* A writable file's old contents, to restore at teardown. */
struct rc_knob {
	const char *path;
	char old[64];
	bool saved;
};

int rc_knob_set(struct rc_knob *k, const char *path, const char *val);
void rc_knob_restore(struct rc_knob *k);

bool rc_module_loaded(void);
int rc_load(const char *params);
int rc_unload(void);
int rc_unload_retry(void);
int rc_restore_default(void);
/* A module of the test rig (REFCNT_TEST_KO, REFCNT_HUB_KO): 0 or -errno. */
int rc_load_module(const char *env, const char *params);

/*
 * The test module's device (tools/testing/kmod/refcnt_test.c, its ioctls
 * in <linux/refcnt_test.h>), REFCNT_TEST_KO loaded first if need be: an
 * open file, or -errno (-ENOENT: no test module here).
 */
#define RC_TEST_DEV	"/dev/refcnt-test"
int rc_test_open(void);

/*
 * A FIXTURE_SETUP that cannot run skips with this, never SKIP(return):
 * the 6.1 harness runs the test body after a setup that returned skipped,
 * and then reports the test skipped whatever the body failed. 255 is the
 * status by which its test process says "skipped"; the reason is in
 * memory it shares with the harness.
 */
#define RC_SETUP_SKIP(fmt, ...) SKIP(_exit(255), fmt, ##__VA_ARGS__)

/*
 * Children of a test: rc_fork() is fork() whose child is killed when the
 * test process ends (an ASSERT of the parent before it waits leaves no
 * process behind); rc_wait() is the child's exit status, RC_KILLED(sig)
 * if a signal ended it, -1 if it cannot be waited for. The parent asserts
 * the exact value.
 */
#define RC_KILLED(sig)	(256 + (sig))
pid_t rc_fork(void);
/*
 * A thread of ours that is not the process's first, parked until the
 * process ends: its thread id, or -errno.
 */
pid_t rc_park_thread(void);
/*
 * A child (rc_fork()) that writes len bytes at mem (its own copy), then
 * whose main thread exits alone while another thread lives on in its
 * memory, waiting for a byte on *release and exiting 0 when it gets one:
 * its pid once its main thread is a zombie, or -1. Write the byte and
 * rc_wait() it.
 */
pid_t rc_fork_main_exited(void *mem, size_t len, int *release);
int rc_wait(pid_t pid);

/* Misc. */
bool rc_all_zero(const void *p, size_t len);
uint64_t rc_round_up(uint64_t v, uint64_t a);
uint64_t rc_round_down(uint64_t v, uint64_t a);
size_t rc_page_size(void);
void rc_fill_canary(struct rcb_slot *s, unsigned int n);
bool rc_is_canary(const struct rcb_slot *s);
int rc_query_slots(int fd, struct rcb_slot *s, unsigned int cap);

#endif /* REFCNT_HELPERS_H */
