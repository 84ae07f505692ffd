// SPDX-License-Identifier: GPL-2.0
/*
 * The cost counter (cost.c) on hand-made access sequences, on the host:
 * what truth-check's "cost" test sees in a guest, without the guest's
 * timing. Exit status 0 iff every case holds; TAP on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "pmu-emu.h"

#define USER_FN		0x401000ULL
#define USER_SLOT	0x7ffc0000f000ULL
#define KERNEL_FN	0xffffffff81001000ULL
#define KERNEL_SLOT	0xffffc90000013f00ULL

static int failed, nr;

/* A block of n instructions at ip whose last one is a ret (if ret). */
static struct tb_info *block(uint64_t ip, uint32_t n, int ret)
{
	struct tb_info *tb = calloc(1, sizeof(*tb) + n * sizeof(tb->insn[0]));
	uint32_t i;

	if (!tb)
		exit(2);
	tb->n = n;
	for (i = 0; i < n; i++) {
		tb->insn[i].ip = ip + i;
		tb->insn[i].tb = tb;
		tb->insn[i].idx = i;
	}
	if (ret)
		tb->insn[n - 1].cost = COST_RET;
	return tb;
}

static void call(const struct tb_info *caller, uint64_t slot)
{
	struct insn_info ii = caller->insn[caller->n - 1];

	ii.cost = COST_CALL;
	cost_mem(0, &ii, slot, 1);
}

static void ret(const struct tb_info *fn, uint64_t slot)
{
	cost_mem(0, &fn->insn[fn->n - 1], slot, 0);
}

static void expect(const char *what, const char *want)
{
	char got[256];
	FILE *f = fmemopen(got, sizeof(got), "w");

	if (!f)
		exit(2);
	cost_print(f, 0);
	fclose(f);
	nr++;
	if (strcmp(got, want)) {
		failed++;
		printf("not ok %d %s\n#   got '%s'\n#   want '%s'\n", nr, what,
		       got, want);
	} else {
		printf("ok %d %s\n", nr, what);
	}
}

int main(void)
{
	struct tb_info *loop = block(0x400000, 3, 0);
	struct tb_info *fn = block(USER_FN, 4, 1);
	struct tb_info *irq = block(KERNEL_FN + 0x100, 5, 0);
	struct tb_info *irq_ret = block(KERNEL_FN + 0x200, 2, 1);
	int i;

	printf("1..2\n");
	if (cost_init(1))
		return 2;
	cost_mark((uint32_t)USER_FN, 1);
	for (i = 0; i < 10; i++) {
		cost_block(0, loop, 1, 0);
		call(loop, USER_SLOT);
		cost_block(0, fn, 1, 0);
		ret(fn, USER_SLOT);
	}
	expect("10 calls of a 4-instruction function",
	       " cost_window 40 cost_muted 0 cost_calls 10 cost_open 0");

	/*
	 * An interrupt between the call and the function's first block: its
	 * entry calls on the kernel stack, and returns by iret. The user
	 * call's slot is still the one its ret loads.
	 */
	cost_reset_window();
	for (i = 0; i < 10; i++) {
		cost_block(0, loop, 1, 0);
		call(loop, USER_SLOT);
		if (i == 3) {
			cost_block(0, irq, 1, 0);
			call(irq, KERNEL_SLOT);
			cost_block(0, irq_ret, 1, 0);
			ret(irq_ret, KERNEL_SLOT);
		}
		cost_block(0, fn, 1, 0);
		ret(fn, USER_SLOT);
	}
	expect("an interrupt before the function's first block",
	       " cost_window 40 cost_muted 0 cost_calls 10 cost_open 0");
	return failed ? 1 : 0;
}
