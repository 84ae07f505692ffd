// SPDX-License-Identifier: GPL-2.0
/*
 * A feed's cost as guest instructions, counted exactly in the plugin
 * (cost.h). A call is followed from the block that starts at one of the
 * named functions to the return that pops the return address its call
 * pushed:
 *
 * - the call's push is a store by an instruction decoded as a call, the
 *   last one the vCPU made before the function's first block ran (a
 *   retpoline's inner call stores 8 bytes below: the slot is then 8
 *   bytes low, which the window below allows for);
 * - the return is a load by an instruction decoded as a ret within 64
 *   bytes above that slot: deeper frames are below it, and a return
 *   thunk (ret, srso, untrain) ends in a ret that loads the slot itself.
 *
 * Instructions are counted by blocks, as the rest of the truth's are: a
 * block's whole count at its start, less the instructions after the
 * return in the block where the call ends. Calls nest by ignoring an
 * entry while a call is being counted (an interrupt's handler inside a
 * feed's handler is its cost). The last call's push is kept apart for
 * user and kernel stacks (the address's top bit): an interrupt between a
 * user call and the function's first block pushes on the kernel stack,
 * and taking that slot would leave the call open until some kernel
 * return happens to match it. In the kernel, an interrupt there can make
 * the slot the interrupt's: that call then ends early, never late.
 */
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>

#include "cost.h"
#include "pmu-emu.h"

#define COST_MAX_FNS	32
#define COST_RET_WINDOW	64

struct cost_vcpu {
	uint64_t call_slot[2];	/* the last call's push: user, kernel stack */
	uint64_t slot;		/* the counted call's, while active */
	uint64_t window, muted, calls;
	int active, last_window, last_muted;
} __attribute__((aligned(64)));

static struct cost_vcpu *cv;
static int cost_nr;
static uint64_t fns[COST_MAX_FNS];
static int nr_fns;

unsigned int cost_insn_flags(const uint8_t *d, size_t size)
{
	size_t i = 0;

	/* Legacy and REX prefixes. */
	while (i < size && (d[i] == 0x66 || d[i] == 0xf2 || d[i] == 0xf3 ||
			    d[i] == 0x2e || d[i] == 0x3e ||
			    (d[i] & 0xf0) == 0x40))
		i++;
	if (i >= size)
		return 0;
	if (d[i] == 0xc3 || d[i] == 0xc2)
		return COST_RET;
	if (d[i] == 0xe8)
		return COST_CALL;
	/* ff /2: call near, indirect. */
	if (d[i] == 0xff && i + 1 < size && ((d[i + 1] >> 3) & 7) == 2)
		return COST_CALL;
	return 0;
}

int cost_init(int nr)
{
	if (posix_memalign((void **)&cv, 64, (size_t)nr * sizeof(*cv)))
		return -1;
	memset(cv, 0, (size_t)nr * sizeof(*cv));
	cost_nr = nr;
	return 0;
}

void cost_mark(uint32_t low, int user)
{
	int n = __atomic_load_n(&nr_fns, __ATOMIC_ACQUIRE);

	if (!low) {
		__atomic_store_n(&nr_fns, 0, __ATOMIC_RELEASE);
		return;
	}
	if (n >= COST_MAX_FNS)
		return;
	fns[n] = (user ? 0 : 0xffffffff00000000ULL) | low;
	__atomic_store_n(&nr_fns, n + 1, __ATOMIC_RELEASE);
}

static int cost_is_fn(uint64_t ip)
{
	int i, n = __atomic_load_n(&nr_fns, __ATOMIC_ACQUIRE);

	for (i = 0; i < n; i++)
		if (fns[i] == ip)
			return 1;
	return 0;
}

void cost_block(unsigned int vi, const struct tb_info *tb, int window,
		int muted)
{
	struct cost_vcpu *c;

	if (vi >= (unsigned int)cost_nr || !tb->n)
		return;
	c = &cv[vi];
	if (!c->active) {
		if (!nr_fns || !cost_is_fn(tb->insn[0].ip))
			return;
		c->active = 1;
		c->slot = c->call_slot[tb->insn[0].ip >> 63];
		c->calls += window;
	}
	c->last_window = window;
	c->last_muted = muted;
	if (!window)
		return;
	c->window += tb->n;
	if (muted)
		c->muted += tb->n;
}

void cost_mem(unsigned int vi, const struct insn_info *ii, uint64_t vaddr,
	      int store)
{
	struct cost_vcpu *c;
	uint64_t rest;

	if (!ii->cost || vi >= (unsigned int)cost_nr)
		return;
	c = &cv[vi];
	if (ii->cost & COST_CALL) {
		if (store)
			c->call_slot[vaddr >> 63] = vaddr;
		return;
	}
	if (!c->active || store || vaddr < c->slot ||
	    vaddr > c->slot + COST_RET_WINDOW)
		return;
	/* Returned: the rest of this block is not the call's. */
	c->active = 0;
	rest = ii->tb->n - ii->idx - 1;
	if (!c->last_window)
		return;
	c->window -= rest < c->window ? rest : c->window;
	if (c->last_muted)
		c->muted -= rest < c->muted ? rest : c->muted;
}

void cost_print(FILE *f, unsigned int vi)
{
	if (vi >= (unsigned int)cost_nr)
		return;
	fprintf(f, " cost_window %" PRIu64 " cost_muted %" PRIu64
		" cost_calls %" PRIu64 " cost_open %d", cv[vi].window,
		cv[vi].muted, cv[vi].calls, cv[vi].active);
}

void cost_reset_window(void)
{
	int i;

	for (i = 0; i < cost_nr; i++) {
		cv[i].window = 0;
		cv[i].muted = 0;
		cv[i].calls = 0;
	}
}
