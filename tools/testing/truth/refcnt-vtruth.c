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
 * FILE.N (N = 1, 2, ...) and zeroes them:
 *   # refcnt-vtruth granularity G
 *   page VADDR LOADS STORES     one per G-byte virtual page referenced
 *   insn VADDR LOADS STORES     one per instruction that referenced
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

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define PFX		"refcnt-vtruth: "
#define USER_TOP	0x0000800000000000ULL	/* x86-64 user half */

static const uint8_t mark_start[8] = { 0x0f, 0x1f, 0x84, 0x00, 'R', 'C', 'T', 'S' };
static const uint8_t mark_stop[8] = { 0x0f, 0x1f, 0x84, 0x00, 'R', 'C', 'T', 'E' };
static const uint8_t mark_dump[8] = { 0x0f, 0x1f, 0x84, 0x00, 'R', 'C', 'T', 'D' };

/* Loads and stores of a page or an instruction. */
struct tally {
	uint64_t loads, stores;
};

struct vcpu {
	pthread_mutex_t lock;
	GHashTable *pages;	/* page number -> struct tally */
	GHashTable *insns;	/* instruction address -> struct tally */
};

static const char *out;
static uint64_t gran = 4096;
static struct vcpu *vcpus;
static int nr_vcpus;
static volatile int window_open;
static uint64_t dumps;

static GHashTable *table_new(void)
{
	return g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
				     g_free);
}

static void tally_add(GHashTable *t, uint64_t key, int store, uint64_t n)
{
	struct tally *v = g_hash_table_lookup(t, &key);

	if (!v) {
		uint64_t *k = g_new(uint64_t, 1);

		*k = key;
		v = g_new0(struct tally, 1);
		g_hash_table_insert(t, k, v);
	}
	if (store)
		v->stores += n;
	else
		v->loads += n;
}

/* udata: the address of the instruction that made the access. */
static void mem_cb(unsigned int vi, qemu_plugin_meminfo_t info,
		   uint64_t vaddr, void *udata)
{
	uint64_t ip = (uintptr_t)udata;
	int store = qemu_plugin_mem_is_store(info);
	struct vcpu *v;

	if (!window_open || vi >= (unsigned int)nr_vcpus || ip >= USER_TOP)
		return;
	v = &vcpus[vi];
	pthread_mutex_lock(&v->lock);
	tally_add(v->pages, vaddr / gran, store, 1);
	tally_add(v->insns, ip, store, 1);
	pthread_mutex_unlock(&v->lock);
}

static int key_cmp(const void *a, const void *b)
{
	uint64_t x = **(const uint64_t *const *)a;
	uint64_t y = **(const uint64_t *const *)b;

	return x < y ? -1 : x > y;
}

/* Every vCPU's table merged, in address order. */
static void write_table(FILE *f, const char *what, int insns)
{
	GHashTable *all = table_new();
	GHashTableIter it;
	gpointer k, val;
	guint n, i;
	uint64_t **keys;
	int c;

	for (c = 0; c < nr_vcpus; c++) {
		GHashTable *t = insns ? vcpus[c].insns : vcpus[c].pages;

		pthread_mutex_lock(&vcpus[c].lock);
		g_hash_table_iter_init(&it, t);
		while (g_hash_table_iter_next(&it, &k, &val)) {
			const struct tally *v = val;

			tally_add(all, *(uint64_t *)k, 0, v->loads);
			tally_add(all, *(uint64_t *)k, 1, v->stores);
		}
		g_hash_table_remove_all(t);
		pthread_mutex_unlock(&vcpus[c].lock);
	}
	keys = (uint64_t **)g_hash_table_get_keys_as_array(all, &n);
	qsort(keys, n, sizeof(*keys), key_cmp);
	for (i = 0; i < n; i++) {
		const struct tally *v = g_hash_table_lookup(all, keys[i]);

		fprintf(f, "%s 0x%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", what,
			insns ? *keys[i] : *keys[i] * gran, v->loads,
			v->stores);
	}
	g_free(keys);
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
	write_table(f, "page", 0);
	write_table(f, "insn", 1);
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
				(void *)(uintptr_t)ip);
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
		vcpus[i].pages = table_new();
		vcpus[i].insns = table_new();
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans_cb);
	return 0;
}
