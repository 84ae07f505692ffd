// SPDX-License-Identifier: GPL-2.0
/*
 * The producer of the hub device, the memory-side reference device of
 * refcnt's emulated machine (tools/testing/kmod/uapi/linux/refcnt_hub.h
 * has the layout, tools/testing/kmod/refcnt_hub.c the driver): part of
 * the refcnt-truth plugin, which sees every guest reference.  Each vCPU
 * thread writes its own ring in the file QEMU also exposes to the guest
 * as an ivshmem-plain device; no lock is shared.
 *
 * The device is the emulated machine's PMU too: the guest programs it in
 * the control block of the header page, each vCPU takes a new setting at
 * its next reference (pmu-emu.c does the sampling), and its samples go
 * into the vCPU's ring as records of their own kinds.  Every record says
 * the instruction that made it and the pid the guest wrote in the ring.
 *
 * Options (refcnt-vm --hub passes them):
 *   hub=FILE          the region (refcnt-vm creates and sizes it)
 *   hub_period=P      report every Pth reference of a vCPU (default 1)
 *   hub_misses=on     report only references missing the modelled LLC
 *                     (needs llc_size=)
 *   hub_out=FILE      write the producer's totals there at exit
 *   hub_garble=N      tests: every Nth record of a vCPU, write garbage
 *                     into the region instead (a record, a head index,
 *                     the header, a tail index, in turn)
 *   hub_wait=MS       a vCPU whose ring is full waits up to MS ms for the
 *                     driver to make room before it drops the record
 *                     (default 0: it drops at once): for tests that must
 *                     see every reference of a program larger than a ring
 *                     (sessions at period 1), while the guest drains on
 *                     another vCPU.  A vCPU that waits takes no interrupt
 *                     meanwhile, hence the bound; and it waits only while
 *                     the driver says it drains (the ring's @draining):
 *                     not at boot, nor with the feed off.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <qemu-plugin.h>

#include <linux/refcnt_hub.h>
#include "hub-producer.h"
#include "pmu-emu.h"

#define PFX	"refcnt-truth: hub: "

/* pmu-emu.c speaks the device's numbers: records take them as they are. */
_Static_assert(PMU_PEBS == REFCNT_HUB_PMU_PEBS && PMU_IBS == REFCNT_HUB_PMU_IBS &&
	       PMU_LDLAT == REFCNT_HUB_PMU_LDLAT &&
	       PMU_STORES == REFCNT_HUB_PMU_STORES &&
	       PMU_EXCLUDE_KERNEL == REFCNT_HUB_PMU_EXCLUDE_KERNEL &&
	       PMU_IBS_PERIOD_UNIT == REFCNT_HUB_PMU_IBS_UNIT,
	       "PMU modes and flags");
_Static_assert(PMU_SAMPLE_LOAD == REFCNT_HUB_REC_LOAD &&
	       PMU_SAMPLE_STORE == REFCNT_HUB_REC_STORE &&
	       PMU_SAMPLE_OP == REFCNT_HUB_REC_OP &&
	       PMU_S_USER == REFCNT_HUB_F_USER && PMU_S_STORE == REFCNT_HUB_F_STORE &&
	       PMU_S_ADDR == REFCNT_HUB_F_ADDR && PMU_S_PHYS == REFCNT_HUB_F_PHYS &&
	       PMU_S_MISS == REFCNT_HUB_F_MISS, "record kinds and flags");
_Static_assert(sizeof(struct refcnt_hub_header) <= REFCNT_HUB_CONTROL &&
	       REFCNT_HUB_CONTROL + sizeof(struct refcnt_hub_control) <=
	       REFCNT_HUB_HEADER_SIZE, "the control block in the header page");

struct hub_vcpu {
	struct refcnt_hub_ring *ring;
	struct refcnt_hub_record *rec;
	uint64_t head, skip, refs, records, overruns, muted, insns_muted;
	uint64_t garble_in, garbled, rnd, samples;
	uint32_t seq;			/* of the control block, last taken */
	int mute, stream, pmu;		/* the hub stream (REFS_*), the PMU */
	/* The stream's filters, from the control block: end 0 for none. */
	uint64_t data_start, data_end, ip_start, ip_end;
} __attribute__((aligned(64)));

int hub_on, hub_misses;
/* The plain stream at power-on (hub_start=off: off until the guest says). */
static int hub_start = 1;
static const char *hub_path, *hub_out;
static uint64_t hub_period = 1, hub_garble, hub_wait_ms;
static struct refcnt_hub_header *hdr;
static struct refcnt_hub_control *ctl;
static struct hub_vcpu *hv;
static int hub_nr;
static uint32_t ring_mask;

static const uint8_t mark_mute[8] = REFCNT_HUB_MARK_MUTE;
static const uint8_t mark_unmute[8] = REFCNT_HUB_MARK_UNMUTE;

int hub_parse_opt(const char *key, const char *v)
{
	char *end;

	if (!strcmp(key, "hub")) {
		hub_path = v;
		hub_on = 1;
	} else if (!strcmp(key, "hub_out")) {
		hub_out = v;
	} else if (!strcmp(key, "hub_period")) {
		hub_period = strtoull(v, &end, 0);
		if (*end || !hub_period || hub_period > UINT32_MAX) {
			fprintf(stderr, PFX "hub_period=%s: want 1 to 4294967295\n", v);
			return -1;
		}
	} else if (!strcmp(key, "hub_wait")) {
		hub_wait_ms = strtoull(v, &end, 0);
		if (*end || hub_wait_ms > 60000) {
			fprintf(stderr, PFX "hub_wait=%s: want 0 to 60000 (ms)\n", v);
			return -1;
		}
	} else if (!strcmp(key, "hub_garble")) {
		hub_garble = strtoull(v, &end, 0);
		if (*end) {
			fprintf(stderr, PFX "hub_garble=%s: want a number\n", v);
			return -1;
		}
	} else if (!strcmp(key, "hub_start")) {
		bool on;

		if (!qemu_plugin_bool_parse(key, v, &on)) {
			fprintf(stderr, PFX "hub_start=%s: want on or off\n", v);
			return -1;
		}
		hub_start = on;
	} else if (!strcmp(key, "hub_misses")) {
		bool on;

		if (!qemu_plugin_bool_parse(key, v, &on)) {
			fprintf(stderr, PFX "hub_misses=%s: want on or off\n", v);
			return -1;
		}
		hub_misses = on;
	} else {
		return 1;
	}
	return 0;
}

/* The rings in the region's size: records per ring, a power of two. */
static int hub_layout(uint64_t size, int nr)
{
	uint64_t stride = (size - REFCNT_HUB_HEADER_SIZE) / nr / 4096 * 4096;
	uint64_t recs = 1;

	if (size <= REFCNT_HUB_HEADER_SIZE || stride <= REFCNT_HUB_RING_CTRL)
		return -1;
	while (REFCNT_HUB_RING_CTRL + 2 * recs * sizeof(struct refcnt_hub_record) <= stride &&
	       2 * recs <= (1u << 30))
		recs *= 2;
	if (recs < 16)
		return -1;
	hdr->nr_rings = nr;
	hdr->ring_records = recs;
	hdr->ring_stride = stride;
	ring_mask = recs - 1;
	return 0;
}

static void hub_emit(unsigned int vi, const struct pmu_sample *s);

int hub_install(int nr_vcpus, const int *vcpu_nid, int nr_vcpu_nid,
		uint64_t granularity, int llc)
{
	struct stat st;
	void *map;
	int fd, i;

	if (nr_vcpus > REFCNT_HUB_MAX_VCPUS) {
		fprintf(stderr, PFX "%d vCPUs; the device has rings for %d\n",
			nr_vcpus, REFCNT_HUB_MAX_VCPUS);
		return -1;
	}
	fd = open(hub_path, O_RDWR);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, PFX "cannot open %s: %s\n", hub_path, strerror(errno));
		return -1;
	}
	map = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		fprintf(stderr, PFX "cannot map %s: %s\n", hub_path, strerror(errno));
		return -1;
	}
	hdr = map;
	memset(hdr, 0, REFCNT_HUB_HEADER_SIZE);
	if (hub_layout(st.st_size, nr_vcpus)) {
		fprintf(stderr, PFX "%s: %lld bytes is too small for %d rings\n",
			hub_path, (long long)st.st_size, nr_vcpus);
		return -1;
	}
	hv = aligned_alloc(64, sizeof(*hv) * nr_vcpus);
	if (!hv)
		return -1;
	memset(hv, 0, sizeof(*hv) * nr_vcpus);
	hub_nr = nr_vcpus;
	for (i = 0; i < REFCNT_HUB_MAX_VCPUS; i++)
		hdr->vcpu_node[i] = i < nr_vcpu_nid ? vcpu_nid[i] : REFCNT_HUB_NO_NODE;
	for (i = 0; i < nr_vcpus; i++) {
		char *r = (char *)map + REFCNT_HUB_HEADER_SIZE +
			  (uint64_t)i * hdr->ring_stride;

		hv[i].ring = (struct refcnt_hub_ring *)r;
		hv[i].rec = (struct refcnt_hub_record *)(r + REFCNT_HUB_RING_CTRL);
		memset(r, 0, REFCNT_HUB_RING_CTRL);
		hv[i].skip = hub_period;
		hv[i].garble_in = hub_garble;
		hv[i].rnd = 0x9e3779b97f4a7c15ULL * (i + 1);
	}
	hdr->header_size = REFCNT_HUB_HEADER_SIZE;
	hdr->size = st.st_size;
	hdr->record_size = sizeof(struct refcnt_hub_record);
	hdr->granularity = granularity;
	hdr->period = hub_period;
	hdr->flags = (hub_misses ? REFCNT_HUB_MISSES : 0) |
		     (llc ? REFCNT_HUB_LLC : 0);
	hdr->pmu_modes = 1u << REFCNT_HUB_PMU_PEBS | 1u << REFCNT_HUB_PMU_IBS;
	hdr->version = REFCNT_HUB_VERSION;
	/*
	 * The hub stream on (hub_start=off: off), the PMU off, until the
	 * guest says otherwise. Off, the guest's boot costs no record: its
	 * references (a debug kernel's KASAN poisons all of memory) would
	 * only overrun the rings before a driver drains them.
	 */
	ctl = (struct refcnt_hub_control *)((char *)map + REFCNT_HUB_CONTROL);
	ctl->refs = hub_start ? REFCNT_HUB_REFS_ALL : REFCNT_HUB_REFS_OFF;
	for (i = 0; i < nr_vcpus; i++)
		hv[i].stream = ctl->refs;
	if (pmu_init(nr_vcpus, llc, hub_emit))
		return -1;
	/* The magic last: a driver probing now sees a whole header or none. */
	__atomic_store_n(&hdr->magic, REFCNT_HUB_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

static uint64_t rnd(struct hub_vcpu *h)
{
	h->rnd ^= h->rnd << 13;
	h->rnd ^= h->rnd >> 7;
	h->rnd ^= h->rnd << 17;
	return h->rnd;
}

/* Instead of a record: garbage where the driver reads, in turn. */
static void garble(struct hub_vcpu *h)
{
	struct refcnt_hub_record *r = &h->rec[h->head & ring_mask];

	switch (h->garbled++ % 4) {
	case 0:		/* a record of random addresses, kind, weight */
		r->paddr = rnd(h);
		r->vaddr = rnd(h);
		r->ip = rnd(h);
		r->data_src = rnd(h);
		r->weight = (uint32_t)rnd(h);
		r->kind = (uint16_t)rnd(h);
		r->flags = (uint16_t)rnd(h);
		r->pid = (uint32_t)rnd(h);
		__atomic_store_n(&h->ring->head, ++h->head, __ATOMIC_RELEASE);
		break;
	case 1:		/* a head far ahead; the next record puts it back */
		__atomic_store_n(&h->ring->head, h->head + (rnd(h) | 1ULL << 40),
				 __ATOMIC_RELEASE);
		break;
	case 2:		/* the header: toggled, so every other time whole */
		hdr->nr_rings ^= 0xdead0000;
		hdr->magic ^= 1;
		break;
	default:	/* the consumer's tail */
		__atomic_store_n(&h->ring->tail, rnd(h), __ATOMIC_RELAXED);
		break;
	}
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/*
 * hub_wait: up to hub_wait_ms for the driver to free a slot, while it
 * says it drains; returns the tail.
 */
static uint64_t hub_wait_room(struct hub_vcpu *h)
{
	const struct timespec nap = { 0, 20000 };
	uint64_t tail, deadline = now_ns() + hub_wait_ms * 1000000ULL;

	for (;;) {
		tail = __atomic_load_n(&h->ring->tail, __ATOMIC_ACQUIRE);
		if (h->head - tail <= (uint64_t)ring_mask ||
		    !__atomic_load_n(&h->ring->draining, __ATOMIC_RELAXED) ||
		    now_ns() >= deadline)
			return tail;
		nanosleep(&nap, NULL);
	}
}

/* Room for one more record in the vCPU's ring, or NULL (an overrun). */
static struct refcnt_hub_record *hub_slot(struct hub_vcpu *h)
{
	uint64_t tail = __atomic_load_n(&h->ring->tail, __ATOMIC_ACQUIRE);

	if (h->head - tail >= (uint64_t)ring_mask + 1 && hub_wait_ms)
		tail = hub_wait_room(h);
	if (h->head - tail >= (uint64_t)ring_mask + 1) {
		__atomic_store_n(&h->ring->overruns, ++h->overruns, __ATOMIC_RELAXED);
		return NULL;
	}
	return &h->rec[h->head & ring_mask];
}

/* Publish the record hub_slot() gave, stamped with the guest's pid. */
static void hub_publish(struct hub_vcpu *h, struct refcnt_hub_record *r)
{
	r->pid = (uint32_t)__atomic_load_n(&h->ring->task, __ATOMIC_RELAXED);
	r->pad = 0;
	__atomic_store_n(&h->ring->head, ++h->head, __ATOMIC_RELEASE);
}

/* A PMU sample of vCPU vi (pmu-emu.c calls this on its thread). */
static void hub_emit(unsigned int vi, const struct pmu_sample *s)
{
	struct hub_vcpu *h = &hv[vi];
	struct refcnt_hub_record *r = hub_slot(h);

	if (!r)
		return;
	r->paddr = s->paddr;
	r->vaddr = s->vaddr;
	r->ip = s->ip;
	r->data_src = s->data_src;
	r->weight = s->weight;
	/* pmu-emu's kinds and flags are the device's, by construction. */
	r->kind = s->kind;
	r->flags = s->flags;
	h->samples++;
	hub_publish(h, r);
}

/*
 * A new setting in the control block: this vCPU takes it. The guest may
 * write anything there: pmu_program() refuses what it cannot do.
 */
static void hub_control(unsigned int vi, struct hub_vcpu *h, uint32_t seq)
{
	uint32_t period;

	h->seq = seq;
	h->stream = __atomic_load_n(&ctl->refs, __ATOMIC_RELAXED);
	if (h->stream > REFCNT_HUB_REFS_USER)
		h->stream = REFCNT_HUB_REFS_ALL;
	h->data_start = __atomic_load_n(&ctl->data_start, __ATOMIC_RELAXED);
	h->data_end = __atomic_load_n(&ctl->data_end, __ATOMIC_RELAXED);
	h->ip_start = __atomic_load_n(&ctl->ip_start, __ATOMIC_RELAXED);
	h->ip_end = __atomic_load_n(&ctl->ip_end, __ATOMIC_RELAXED);
	period = pmu_program(vi, __atomic_load_n(&ctl->pmu_mode, __ATOMIC_RELAXED),
			     __atomic_load_n(&ctl->pmu_period, __ATOMIC_RELAXED),
			     __atomic_load_n(&ctl->pmu_flags, __ATOMIC_RELAXED));
	h->pmu = !!period;
	__atomic_store_n(&ctl->pmu_applied, period, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->seq_applied, seq, __ATOMIC_RELEASE);
}

int hub_wants_llc(unsigned int vi)
{
	return hub_misses || (vi < (unsigned int)hub_nr && hv[vi].pmu);
}

int hub_wants(unsigned int vi)
{
	struct hub_vcpu *h;
	uint32_t seq;

	if (vi >= (unsigned int)hub_nr)
		return 0;
	h = &hv[vi];
	/* Pairs with the guest's release of seq: the fields are written. */
	seq = __atomic_load_n(&ctl->seq, __ATOMIC_ACQUIRE);
	if (seq != h->seq)
		hub_control(vi, h, seq);
	return h->stream || h->pmu;
}

void hub_ref(unsigned int vi, const struct insn_info *ii, uint64_t pa,
	     uint64_t vaddr, int store, int miss, int remote)
{
	struct hub_vcpu *h;
	struct refcnt_hub_record *r;

	if (vi >= (unsigned int)hub_nr)
		return;
	h = &hv[vi];
	if (h->mute) {
		h->muted++;
		return;
	}
	if (h->pmu)
		pmu_access(vi, ii, vaddr, pa, store, miss, remote);
	if (!h->stream || (hub_misses && miss <= 0) ||
	    (h->stream == REFCNT_HUB_REFS_USER && ii->ip >= PMU_KERNEL_START))
		return;
	/* The guest's filters: not in the stream, so not among @references. */
	if ((h->data_end && (vaddr < h->data_start || vaddr >= h->data_end)) ||
	    (h->ip_end && (ii->ip < h->ip_start || ii->ip >= h->ip_end)))
		return;
	h->refs++;
	if (--h->skip)
		return;
	h->skip = hub_period;
	if (hub_garble && !--h->garble_in) {
		h->garble_in = hub_garble;
		garble(h);
		return;
	}
	__atomic_store_n(&h->ring->references, h->refs, __ATOMIC_RELAXED);
	r = hub_slot(h);
	if (!r)
		return;
	*r = (struct refcnt_hub_record){
		.paddr = pa, .vaddr = vaddr, .ip = ii->ip,
		.weight = (uint32_t)hub_period, .kind = REFCNT_HUB_REC_REF,
		.flags = ii->ip < PMU_KERNEL_START ? REFCNT_HUB_F_USER : 0,
	};
	r->flags |= REFCNT_HUB_F_ADDR | (store ? REFCNT_HUB_F_STORE : 0) |
		    (miss > 0 ? REFCNT_HUB_F_MISS : 0);
	h->records++;
	hub_publish(h, r);
}

void hub_block(unsigned int vi, const struct tb_info *tb)
{
	if (vi < (unsigned int)hub_nr && hv[vi].pmu && !hv[vi].mute)
		pmu_block(vi, tb);
}

int hub_mark(const void *d, size_t size)
{
	if (!hub_on || size != 8)
		return 0;
	if (!memcmp(d, mark_mute, 8))
		return 1;
	if (!memcmp(d, mark_unmute, 8))
		return 2;
	return 0;
}

/* The vCPU says which it is by its ring's @muted: the driver reads it. */
void hub_mark_cb(unsigned int vi, void *udata)
{
	if (vi >= (unsigned int)hub_nr)
		return;
	hv[vi].mute = udata == (void *)1;
	__atomic_store_n(&hv[vi].ring->muted, (uint64_t)hv[vi].mute,
			 __ATOMIC_RELAXED);
}

int hub_insns(unsigned int vi, uint64_t n)
{
	if (vi >= (unsigned int)hub_nr || !hv[vi].mute)
		return 0;
	hv[vi].insns_muted += n;
	return 1;
}

void hub_summary(FILE *f)
{
	FILE *o = NULL;
	int i;

	if (!hub_on)
		return;
	if (hub_out) {
		o = fopen(hub_out, "w");
		if (!o)
			fprintf(stderr, PFX "cannot write %s: %s\n", hub_out,
				strerror(errno));
	}
	for (i = 0; i < hub_nr; i++) {
		const struct hub_vcpu *h = &hv[i];
		FILE *fs[2] = { f, o };
		int k;

		if (!h->refs && !h->muted && !h->samples)
			continue;
		for (k = 0; k < 2; k++)
			if (fs[k])
				fprintf(fs[k], "hub vcpu %d period %" PRIu64 " references %" PRIu64
					" records %" PRIu64 " overruns %" PRIu64 " garbled %" PRIu64
					" muted_references %" PRIu64 " muted_insns %" PRIu64
					" samples %" PRIu64 "\n",
					i, hub_period, h->refs, h->records, h->overruns,
					h->garbled, h->muted, h->insns_muted, h->samples);
	}
	pmu_summary(f);
	pmu_summary(o);
	if (o)
		fclose(o);
}
