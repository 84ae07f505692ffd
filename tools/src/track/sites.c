// SPDX-License-Identifier: GPL-2.0
/*
 * librefcnt-track.so: call sites. A small allocation folds into the site
 * of its return address: one hash probe and two atomic adds, and the call
 * stack (glibc's backtrace()) only the first time a return address is
 * seen, so the stack a folded site shows is that of its first call. A
 * large allocation's site is its whole call stack, taken every time.
 * Frames of the tracker itself are left out: a site's first frame is the
 * return address into the program.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <string.h>

#include "track.h"

/* Probes before a site is given up (the table is far from full then). */
#define MAX_PROBES	64

/* The tracker's own code, to leave its frames out of stacks. */
static uintptr_t self_lo, self_hi;

struct text_range {
	uintptr_t addr, lo, hi;
};

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct text_range *r = arg;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    r->addr >= lo && r->addr < lo + ph->p_memsz) {
			r->lo = lo;
			r->hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

void track_text_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	struct text_range r = { .addr = addr };

	dl_iterate_phdr(find_text, &r);
	*lo = r.lo;
	*hi = r.hi;
}

static inline uint32_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (uint32_t)k;
}

/* The caller's stack without the tracker's frames: how many frames. */
static int take_stack(uint64_t *frames)
{
	void *buf[TRACK_MAX_FRAMES + 8];
	int n, i, k = 0;

	if (!self_lo)
		track_text_of((uintptr_t)take_stack, &self_lo, &self_hi);
	track_busy++;
	n = backtrace(buf, TRACK_MAX_FRAMES + 8);
	track_busy--;
	for (i = 0; i < n && k < TRACK_MAX_FRAMES; i++) {
		uintptr_t pc = (uintptr_t)buf[i];

		if (pc >= self_lo && pc < self_hi)
			continue;
		frames[k++] = pc;
	}
	return k;
}

void track_stack_prime(void)
{
	uint64_t frames[TRACK_MAX_FRAMES];

	take_stack(frames);
}

/*
 * The site of key: found, or a new one with its key set (*claimed: the
 * caller fills it in). Index, or -1 when the sites are full or MAX_PROBES
 * slots of the index hold other keys. Two threads meeting on a new key
 * each take a site; the one that loses the index slot gives its back
 * (key 0: refcnt-run skips it).
 */
static int site_slot(uint64_t key, int *claimed)
{
	uint32_t mask = T.h->index_cap - 1, i = hash64(key) & mask, p, mine = 0;

	*claimed = 0;
	for (p = 0; p < MAX_PROBES; p++, i = (i + 1) & mask) {
		uint32_t v = __atomic_load_n(&T.index[i], __ATOMIC_ACQUIRE);

		if (!v) {
			if (!mine) {
				mine = __atomic_fetch_add(&T.h->sites_nr, 1,
							  __ATOMIC_RELAXED) + 1;
				if (mine > T.h->sites_cap)
					break;
				T.sites[mine - 1].key = key;
			}
			if (__atomic_compare_exchange_n(&T.index[i], &v, mine, 0,
							__ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE)) {
				*claimed = 1;
				return (int)mine - 1;
			}
		}
		if (T.sites[v - 1].key == key) {
			if (mine)
				T.sites[mine - 1].key = 0;
			return (int)v - 1;
		}
	}
	if (mine && mine <= T.h->sites_cap)
		T.sites[mine - 1].key = 0;
	__atomic_fetch_add(&T.h->dropped_sites, 1, __ATOMIC_RELAXED);
	return -1;
}

int track_site_small(uintptr_t ra, enum track_kind kind)
{
	int claimed, i = site_slot(ra, &claimed);
	struct track_site *s;

	if (i < 0)
		return -1;
	s = &T.sites[i];
	if (unlikely(claimed)) {
		s->kind = kind;
		s->nframes = take_stack(s->frames);
		__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
	}
	return i;
}

int track_site_stack(enum track_kind kind)
{
	uint64_t frames[TRACK_MAX_FRAMES], key = 0x9e3779b97f4a7c15ULL;
	int n = take_stack(frames), claimed, i, k;
	struct track_site *s;

	for (k = 0; k < n; k++)
		key = (key ^ frames[k]) * 0x100000001b3ULL;
	key = (key ^ (uint64_t)kind) | 1;	/* never 0, the free key */
	i = site_slot(key, &claimed);
	if (i < 0)
		return -1;
	s = &T.sites[i];
	if (claimed) {
		s->kind = kind;
		s->large = 1;
		s->nframes = n;
		memcpy(s->frames, frames, n * sizeof(frames[0]));
		__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
	}
	__atomic_fetch_add(&s->calls, 1, __ATOMIC_RELAXED);
	return i;
}
