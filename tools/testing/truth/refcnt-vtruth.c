// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt-vtruth: a QEMU TCG plugin that counts, between the window marks
 * of truth-mark.h, every data reference a guest makes in user mode, by
 * virtual page and by instruction, loads and stores apart: the truth a
 * counting session restricted to data and instruction ranges
 * (RCB_COUNT_START, PAPI_DATA_ADDRESS, PAPI_INSTR_ADDRESS) is checked
 * against. refcnt-truth counts by physical page and node; this plugin
 * beside it counts what those ranges name, virtual addresses.
 * Loaded by tools/testing/refcnt-vm --vtruth FILE.
 *
 * User mode is told by the instruction's address: below the x86-64
 * canonical hole. Every mark "RCTD" (dump) writes the window's counts to
 * FILE.N (N = 1, 2, ...) and zeroes them, one line per instruction and
 * G-byte virtual page it referenced, so that a data range, an
 * instruction range and both at once can all be summed from it:
 *   # refcnt-vtruth granularity G
 *   ref INSN PAGE LOADS STORES
 * "RCTS" opens the window, "RCTE" closes it, as for refcnt-truth.
 *
 * The tables take a lock per vCPU: the vCPU that dumps reads the others'.
 */
#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

#include "rep-string.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define PFX		"refcnt-vtruth: "
#define USER_TOP	0x0000800000000000ULL	/* x86-64 user half */
/* In a callback's udata beside the address: a rep string instruction. */
#define STRING_BIT	(1ULL << 63)

static const uint8_t mark_start[8] = { 0x0f, 0x1f, 0x84, 0x00, 'R', 'C', 'T', 'S' };
static const uint8_t mark_stop[8] = { 0x0f, 0x1f, 0x84, 0x00, 'R', 'C', 'T', 'E' };
static const uint8_t mark_dump[8] = { 0x0f, 0x1f, 0x84, 0x00, 'R', 'C', 'T', 'D' };

/* What one instruction did to one virtual page. */
struct tally {
	uint64_t insn, page;	/* the key: address, page number */
	uint64_t loads, stores;
};

struct vcpu {
	pthread_mutex_t lock;
	GHashTable *refs;	/* struct tally by (insn, page) */
	struct rep_string_last str;	/* rep-string.h */
};

static const char *out;
static uint64_t gran = 4096;
static struct vcpu *vcpus;
static int nr_vcpus;
static volatile int window_open;
static uint64_t dumps;

static guint key_hash(gconstpointer p)
{
	const struct tally *t = p;

	return (guint)(t->insn * 0x9e3779b97f4a7c15ULL ^ t->page);
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	const struct tally *x = a, *y = b;

	return x->insn == y->insn && x->page == y->page;
}

/* The tally is its own key: the table owns it. */
static GHashTable *table_new(void)
{
	return g_hash_table_new_full(key_hash, key_equal, g_free, NULL);
}

static void tally_add(GHashTable *t, uint64_t insn, uint64_t page,
		      uint64_t loads, uint64_t stores)
{
	struct tally key = { .insn = insn, .page = page }, *v;

	v = g_hash_table_lookup(t, &key);
	if (!v) {
		v = g_new0(struct tally, 1);
		v->insn = insn;
		v->page = page;
		g_hash_table_add(t, v);
	}
	v->loads += loads;
	v->stores += stores;
}

/* udata: the address of the instruction that made the access. */
static void mem_cb(unsigned int vi, qemu_plugin_meminfo_t info,
		   uint64_t vaddr, void *udata)
{
	uint64_t ip = (uintptr_t)udata & ~STRING_BIT;
	int store = qemu_plugin_mem_is_store(info);
	struct vcpu *v;

	if (!window_open || vi >= (unsigned int)nr_vcpus || ip >= USER_TOP)
		return;
	v = &vcpus[vi];
	/* Only this vCPU's callbacks touch str: no lock. */
	if (((uintptr_t)udata & STRING_BIT) &&
	    rep_string_same_line(&v->str, ip, vaddr, store))
		return;
	pthread_mutex_lock(&v->lock);
	tally_add(v->refs, ip, vaddr / gran, !store, store);
	pthread_mutex_unlock(&v->lock);
}

static int tally_cmp(const void *a, const void *b)
{
	const struct tally *x = *(const struct tally *const *)a;
	const struct tally *y = *(const struct tally *const *)b;

	if (x->insn != y->insn)
		return x->insn < y->insn ? -1 : 1;
	return x->page < y->page ? -1 : x->page > y->page;
}

/* Every vCPU's table merged, in address order; the tables zeroed. */
static void write_table(FILE *f)
{
	GHashTable *all = table_new();
	struct tally **t;
	GHashTableIter it;
	gpointer k;
	guint n, i;
	int c;

	for (c = 0; c < nr_vcpus; c++) {
		pthread_mutex_lock(&vcpus[c].lock);
		g_hash_table_iter_init(&it, vcpus[c].refs);
		while (g_hash_table_iter_next(&it, &k, NULL)) {
			const struct tally *v = k;

			tally_add(all, v->insn, v->page, v->loads, v->stores);
		}
		g_hash_table_remove_all(vcpus[c].refs);
		pthread_mutex_unlock(&vcpus[c].lock);
	}
	t = (struct tally **)g_hash_table_get_keys_as_array(all, &n);
	qsort(t, n, sizeof(*t), tally_cmp);
	for (i = 0; i < n; i++)
		fprintf(f, "ref 0x%" PRIx64 " 0x%" PRIx64 " %" PRIu64 " %" PRIu64
			"\n", t[i]->insn, t[i]->page * gran, t[i]->loads,
			t[i]->stores);
	g_free(t);
	g_hash_table_destroy(all);
}

/* The dump mark: the window so far into OUT.N, then zero. */
static void dump(void)
{
	char path[4096], tmp[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s.%" PRIu64, out, ++dumps);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, PFX "cannot write %s: %s\n", tmp, strerror(errno));
		return;
	}
	fprintf(f, "# refcnt-vtruth granularity %" PRIu64 "\n", gran);
	write_table(f);
	if (fclose(f) || rename(tmp, path))
		fprintf(stderr, PFX "cannot write %s: %s\n", path, strerror(errno));
}

static void mark_cb(unsigned int vi, void *udata)
{
	(void)vi;
	if (udata == (void *)2) {
		__atomic_store_n(&window_open, 0, __ATOMIC_RELEASE);
		dump();
	} else {
		__atomic_store_n(&window_open, udata != NULL, __ATOMIC_RELEASE);
	}
}

static void tb_trans_cb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const void *d = qemu_plugin_insn_data(insn);
		uint64_t ip = qemu_plugin_insn_vaddr(insn);

		if (ip < USER_TOP)
			qemu_plugin_register_vcpu_mem_cb(insn, mem_cb,
				QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
				(void *)(uintptr_t)(ip | (rep_string(d,
					qemu_plugin_insn_size(insn)) ? STRING_BIT : 0)));
		if (qemu_plugin_insn_size(insn) != 8)
			continue;
		if (!memcmp(d, mark_start, 8))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_cb,
				QEMU_PLUGIN_CB_NO_REGS, (void *)1);
		else if (!memcmp(d, mark_stop, 8))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_cb,
				QEMU_PLUGIN_CB_NO_REGS, NULL);
		else if (!memcmp(d, mark_dump, 8))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_cb,
				QEMU_PLUGIN_CB_NO_REGS, (void *)2);
	}
}

static int parse_opt(const char *arg)
{
	const char *eq = strchr(arg, '=');
	char *end;

	if (eq && !strncmp(arg, "out=", 4)) {
		out = eq + 1;
		return 0;
	}
	if (eq && !strncmp(arg, "granularity=", 12)) {
		gran = strtoull(eq + 1, &end, 0);
		if (!*end && gran >= 64 && !(gran & (gran - 1)))
			return 0;
	}
	fprintf(stderr, PFX "bad option '%s' (out=FILE, granularity=N)\n", arg);
	return -1;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	if (!info->system_emulation) {
		fprintf(stderr, PFX "needs system emulation (qemu-system-*)\n");
		return -1;
	}
	for (i = 0; i < argc; i++)
		if (parse_opt(argv[i]))
			return -1;
	if (!out) {
		fprintf(stderr, PFX "out=FILE is missing\n");
		return -1;
	}
	nr_vcpus = info->system.max_vcpus;
	vcpus = calloc(nr_vcpus > 0 ? nr_vcpus : 1, sizeof(*vcpus));
	if (!vcpus)
		return -1;
	for (i = 0; i < nr_vcpus; i++) {
		pthread_mutex_init(&vcpus[i].lock, NULL);
		vcpus[i].refs = table_new();
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans_cb);
	return 0;
}
