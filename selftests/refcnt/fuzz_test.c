// SPDX-License-Identifier: GPL-2.0
/*
 * refcnt selftests: fuzz every device from several threads at once.
 *
 * FUZZ_THREADS threads throw random and edge-case ioctl commands (every
 * RCB_* command, random numbers in the 'Y' space and in other spaces the
 * VFS does not handle itself), structure contents (random bytes, 0, 1, -1,
 * UINT32_MAX, huge lengths, wrapping addresses, flag and pad bits), user
 * pointers (NULL, unmapped, kernel addresses, misaligned, straddling into a
 * PROT_NONE page), mmap lengths, offsets, protections and flags, read sizes
 * and buffers, pread and poll at every device. Every failure's errno must be
 * one Documentation/abi.rst lists for the call (unknown commands: ENOTTY).
 * The rig fails the guest run on any kernel splat.
 *
 * Calls: argv[1], else $REFCNT_FUZZ_CALLS, else 1,000,000 when the machine
 * has exactly 4 online nodes (the "four" topology: once per kernel in make
 * check) and 50,000 elsewhere. $REFCNT_FUZZ_SECONDS (default 400) bounds
 * the run; stopping on that bound is a failure (the count is not reached).
 *
 * At the end every node's thresholds are restored and its counters reset.
 */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "refcnt_counters.h"

#define FUZZ_THREADS	4
#define MAX_DEVS	128
#define ARENA		(4UL << 20)	/* per thread, then a PROT_NONE page */
#define MAX_EXAMPLES	8
#define U64(x)		((unsigned long long)(x))

struct fdev {
	struct rc_dev d;
	int fds[3];		/* O_RDONLY|O_NONBLOCK (d.fd), O_RDONLY, fresh */
};

static struct fdev devs[MAX_DEVS];
static int ndev;
static uint64_t max_calls;
static atomic_ullong calls_made;
static atomic_ullong violations;
static atomic_ullong by_kind[8];
static uint64_t deadline_ns;
static pthread_mutex_t ex_lock = PTHREAD_MUTEX_INITIALIZER;
static char examples[MAX_EXAMPLES][200];
static int nexamples;
static volatile int stop;

struct fthread {
	pthread_t t;
	int id;
	uint64_t rnd;
	uint8_t *arena;		/* ARENA bytes, then a PROT_NONE page */
	uint8_t *guard;
	/* what the thread is doing, for the watchdog */
	volatile int kind;
	volatile unsigned long cmd;
	volatile uint64_t arg, a1, a2;
	uint8_t snap[48];
};

static void violation(const char *fmt, ...)
{
	va_list ap;

	atomic_fetch_add(&violations, 1);
	pthread_mutex_lock(&ex_lock);
	if (nexamples < MAX_EXAMPLES) {
		va_start(ap, fmt);
		vsnprintf(examples[nexamples++], sizeof(examples[0]), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&ex_lock);
}

static uint64_t rnd(struct fthread *t)
{
	return rc_rand(&t->rnd);
}

static uint64_t rndn(struct fthread *t, uint64_t n)
{
	return n ? rnd(t) % n : 0;
}

/* A boundary or random 64-bit value. */
static uint64_t edge64(struct fthread *t)
{
	static const uint64_t v[] = {
		0, 1, 2, 7, 8, 63, 64, 65, 4095, 4096, 4097, 65535, 65536, 65537,
		0x7fffffffULL, 0x80000000ULL, 0xffffffffULL, 0x100000000ULL,
		0x7fffffffffffffffULL, 0x8000000000000000ULL, ~0ULL, ~0ULL - 1,
		0xfffffffffffff000ULL, 0x00007ffffffff000ULL, 0x0000800000000000ULL,
	};

	if (rnd(t) & 1)
		return v[rndn(t, sizeof(v) / sizeof(v[0]))];
	return rnd(t) >> rndn(t, 64);
}

static uint32_t edge32(struct fthread *t)
{
	return (uint32_t)edge64(t) ^ ((rnd(t) & 7) ? 0 : (uint32_t)rnd(t));
}

/* A user pointer of some kind; size: the bytes the kernel may touch there. */
static uint64_t fuzz_ptr(struct fthread *t, size_t size)
{
	switch (rndn(t, 12)) {
	case 0:
		return 0;
	case 1:
		return 0xffff888000000000ULL + (rnd(t) & 0xfff8);	/* kernel */
	case 2:
		return (uintptr_t)t->guard;			/* PROT_NONE */
	case 3:	/* straddling into the PROT_NONE page */
		return (uintptr_t)t->guard - 1 - rndn(t, size ? size : 1);
	case 4:
		return 0x1000 + rndn(t, 0x10000);		/* unmapped low */
	case 5: {
		/*
		 * Not edge64(): a random small number can land in this
		 * program's own data, which the kernel would then overwrite.
		 */
		static const uint64_t bad[] = {
			~0ULL, ~0ULL - 7, 0x8000000000000000ULL,
			0x0000800000000000ULL, 0x00007ffffffff000ULL,
			0x00007fffffffffffULL, 0xfffffffffffff000ULL,
			1, 7, 0xdead000, 0xffffffff80000000ULL,
		};
		return bad[rndn(t, sizeof(bad) / sizeof(bad[0]))];
	}
	case 6:	/* misaligned, inside the arena */
		return (uintptr_t)t->arena + 1 + rndn(t, 7) +
		       8 * rndn(t, (ARENA - size - 64) / 8);
	default: /* valid, aligned, maybe near the guard */
		if (size >= ARENA)
			return (uintptr_t)t->arena;
		return (uintptr_t)t->arena +
		       8 * rndn(t, (ARENA - size) / 8 + 1);
	}
}

/* A kernel-writable place in the arena for a structure of size bytes. */
static void *arena_struct(struct fthread *t, size_t size)
{
	uint8_t *p = t->arena + 64 * rndn(t, 1024);

	return memset(p, 0, size);
}

static void fill_random(struct fthread *t, void *p, size_t size)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < size; i++)
		b[i] = (uint8_t)rnd(t);
}

/* Some physical address: valid in a random node's slot, or not. */
static uint64_t fuzz_paddr(struct fthread *t)
{
	struct rc_dev *d = &devs[rndn(t, ndev)].d;

	if (d->nslots && (rnd(t) & 1)) {
		struct rcb_slot *s = &d->slots[rndn(t, d->nslots)];

		switch (rndn(t, 4)) {
		case 0: return s->base;
		case 1: return s->base + s->size - 1;
		case 2: return s->base + s->size;	/* just past */
		default: return s->base + rndn(t, s->size);
		}
	}
	return edge64(t);
}

static uint32_t fuzz_cnode(struct fthread *t)
{
	uint32_t n = devs[0].d.info.rcb_num_cnodes;

	return (rnd(t) & 3) ? rndn(t, n) : edge32(t) + (rnd(t) & 1 ? n : 0);
}

enum { K_IOCTL, K_UNKNOWN, K_MMAP, K_READ, K_POLL, K_PREAD, K_OPEN };

/* Documented errnos of each command, Documentation/abi.rst. */
static bool errno_ok(unsigned long cmd, int e)
{
	switch (cmd) {
	case RCB_INFO_GET:	return e == EFAULT;
	case RCB_SLOT_GET:	return e == EINVAL || e == EFAULT;
	case RCB_SLOT_QUERY:	return e == EINVAL || e == EFAULT;
	case RCB_SETS_READ:
		return e == EINVAL || e == EFAULT || e == ENOMEM || e == EINTR;
	case RCB_SYNC:		return false;
	case RCB_RANGE_QUERY:
		return e == EINVAL || e == E2BIG || e == EPERM || e == ESRCH ||
		       e == EFAULT || e == ENOMEM || e == EINTR;
	case RCB_INJECT:	return e == EINVAL || e == EFAULT || e == ENOMEM;
	case RCB_RESET:		return e == ENOMEM;
	case RCB_THRESHOLDS_SET: return e == EINVAL || e == EFAULT;
	case RCB_SETS_FOLD:	return e == EINVAL || e == EFAULT;
	}
	return e == ENOTTY;
}

static const char *cmd_name(unsigned long cmd)
{
	switch (cmd) {
	case RCB_INFO_GET: return "RCB_INFO_GET";
	case RCB_SLOT_GET: return "RCB_SLOT_GET";
	case RCB_SLOT_QUERY: return "RCB_SLOT_QUERY";
	case RCB_SETS_READ: return "RCB_SETS_READ";
	case RCB_SYNC: return "RCB_SYNC";
	case RCB_RANGE_QUERY: return "RCB_RANGE_QUERY";
	case RCB_INJECT: return "RCB_INJECT";
	case RCB_RESET: return "RCB_RESET";
	case RCB_THRESHOLDS_SET: return "RCB_THRESHOLDS_SET";
	case RCB_SETS_FOLD: return "RCB_SETS_FOLD";
	}
	return "unknown";
}

static const unsigned long known_cmds[] = {
	RCB_INFO_GET, RCB_SLOT_GET, RCB_SLOT_QUERY, RCB_SETS_READ, RCB_SYNC,
	RCB_RANGE_QUERY, RCB_INJECT, RCB_RESET, RCB_THRESHOLDS_SET,
	RCB_SETS_FOLD,
};
#define NKNOWN (sizeof(known_cmds) / sizeof(known_cmds[0]))

/* RCB_RANGE_QUERY with the size of an older or newer struct. */
static bool range_query_sized(unsigned long cmd)
{
	return (cmd & ~(unsigned long)IOCSIZE_MASK) ==
	       (RCB_RANGE_QUERY & ~(unsigned long)IOCSIZE_MASK) &&
	       _IOC_SIZE(cmd) >= RCB_RANGE_QUERY_SIZE_VER0;
}

/* Types the VFS handles itself for any file (FIONBIO, FIFREEZE, ...). */
static bool vfs_type(unsigned int type)
{
	return type == 0 || type == 0x12 || type == 0x15 || type == 0x54 ||
	       type == 0x58 || type == 0x66 || type == 0x94;
}

static unsigned long random_cmd(struct fthread *t)
{
	unsigned long cmd;
	unsigned int type;

	switch (rndn(t, 4)) {
	case 0:	/* a known command with another direction or size */
		cmd = known_cmds[rndn(t, NKNOWN)];
		if (rnd(t) & 1)
			cmd ^= (unsigned long)(1 + rndn(t, 3)) << _IOC_DIRSHIFT;
		else
			cmd ^= (unsigned long)(1 + rndn(t, 255)) << _IOC_SIZESHIFT;
		return cmd;
	case 1:	/* anything in 'Y' */
		return _IOC(rndn(t, 4), RCB_IOC_MAGIC, rndn(t, 256),
			    rndn(t, 1 << 14));
	case 2:	/* small numbers in 'Y' */
		return _IOC(rndn(t, 4), RCB_IOC_MAGIC, rndn(t, 0x20),
			    rndn(t, 400));
	default:
		do {
			cmd = (uint32_t)rnd(t);
			type = _IOC_TYPE(cmd);
		} while (vfs_type(type) || type == RCB_IOC_MAGIC);
		return cmd;
	}
}

/* Build an argument for a known command; returns the pointer to pass. */
static uint64_t known_arg(struct fthread *t, unsigned long cmd, int fd)
{
	struct rc_dev *d0 = &devs[rndn(t, ndev)].d;
	size_t size = _IOC_SIZE(cmd);
	bool bad = !(rnd(t) & 7);
	uint8_t *p;

	if (cmd == RCB_SYNC || cmd == RCB_RESET)
		return rnd(t) & 1 ? 0 : edge64(t);
	if (bad) {	/* the structure itself at a bad place */
		uint64_t ptr = fuzz_ptr(t, size);

		/*
		 * Not stale contents: old physical addresses or counts there
		 * could point into this program.
		 */
		if (ptr >= (uintptr_t)t->arena && ptr < (uintptr_t)t->guard) {
			size_t room = (uintptr_t)t->guard - ptr;

			fill_random(t, (void *)(uintptr_t)ptr,
				    room < size ? room : size);
		}
		return ptr;
	}
	p = arena_struct(t, size);
	if (!(rnd(t) & 7)) {	/* random contents */
		fill_random(t, p, size);
		return (uintptr_t)p;
	}
	switch (cmd) {
	case RCB_SLOT_GET:
		return fuzz_ptr(t, sizeof(struct rcb_slot) * RC_MAX_SLOTS);
	case RCB_SLOT_QUERY: {
		struct rcb_slot_query *q = (void *)p;

		q->num_slots = rnd(t) & 1 ? rndn(t, 8) : edge32(t);
		q->slots = fuzz_ptr(t, (size_t)16 * (q->num_slots < 4096 ?
							q->num_slots : 4096));
		q->flags = rnd(t) & 3 ? 0 : edge32(t);
		break;
	}
	case RCB_SETS_READ: {
		struct rcb_sets_read *r = (void *)p;
		uint64_t sets = d0->info.rcb_sw_sets;
		size_t bytes;

		switch (rndn(t, 4)) {
		case 0:
			r->first_set = edge64(t);
			r->nr_sets = edge64(t);
			break;
		case 1:	/* near the end */
			r->nr_sets = rndn(t, 8);
			r->first_set = sets - rndn(t, 8);
			break;
		default:
			r->first_set = rndn(t, sets);
			r->nr_sets = rndn(t, 64);
			break;
		}
		bytes = (size_t)(r->nr_sets < 1024 ? r->nr_sets : 1024) * 4 *
			d0->cps;
		r->hw = rnd(t) & 3 ? fuzz_ptr(t, bytes) : 0;
		r->ext = rnd(t) & 3 ? fuzz_ptr(t, bytes) : 0;
		r->lost = rnd(t) & 3 ? fuzz_ptr(t, bytes) : 0;
		r->flags = rnd(t) & 7 ? 0 : edge32(t);
		r->pad = rnd(t) & 7 ? 0 : edge32(t);
		fd = d0->fd;
		break;
	}
	case RCB_RANGE_QUERY: {
		struct rcb_range_query *q = (void *)p;
		static const int pids[] = { 0, 1, -1, 0x7fffffff, INT32_MIN };

		switch (rndn(t, 4)) {
		case 0:
			q->vaddr = edge64(t);
			q->len = edge64(t);
			break;
		case 1:	/* our own memory */
			q->vaddr = (uintptr_t)t->arena + rndn(t, ARENA);
			q->len = 1 + rndn(t, 65536);
			break;
		case 2:	/* up to the end of user space */
			q->len = 1 + rndn(t, 1 << 20);
			q->vaddr = 0x00007ffffffff000ULL + 4096 - q->len +
				   rndn(t, 3);
			break;
		default:
			q->vaddr = rnd(t) & 0x00007fffffffffffULL;
			q->len = 1 + rndn(t, 1 << 18);
			break;
		}
		q->buf_entries = rnd(t) & 1 ? rndn(t, 2048) : edge64(t);
		q->buf = fuzz_ptr(t, 288 * 2048);
		q->pid = rnd(t) & 3 ? (rnd(t) & 1 ? 0 : getpid()) :
			 pids[rndn(t, 5)];
		q->flags = rnd(t) & 3 ? rndn(t, 4) : edge32(t);	/* RCB_RANGE_* */
		q->nr_entries = edge64(t);
		break;
	}
	case RCB_INJECT: {
		struct rcb_inject *in = (void *)p;
		struct rcb_ref *refs = (void *)(t->arena + ARENA / 2);
		uint32_t i, n = 1 + rndn(t, 16);

		for (i = 0; i < n; i++) {
			refs[i].paddr = (rnd(t) & 7) ? d0->slots[rndn(t,
				d0->nslots)].base + rndn(t, d0->slots[0].size) :
				fuzz_paddr(t);
			refs[i].src_cnodeid = fuzz_cnode(t);
			refs[i].count = rnd(t) & 3 ? rndn(t, 3000) : edge32(t);
		}
		in->refs = rnd(t) & 3 ? (uintptr_t)refs :
			   fuzz_ptr(t, sizeof(*refs) * n);
		in->nr_refs = rnd(t) & 3 ? n : (rnd(t) & 1 ? 0 : edge32(t));
		if (in->nr_refs > n && in->nr_refs <= RCB_INJECT_MAX &&
		    in->refs == (uintptr_t)refs)
			in->nr_refs = n;	/* do not read stale refs */
		in->flags = rnd(t) & 3 ? rndn(t, 2) : edge32(t);
		break;
	}
	case RCB_THRESHOLDS_SET: {
		struct rcb_thresholds *th = (void *)p;
		uint32_t max = d0->info.rcb_hw_counter_max;

		th->abs_threshold = rnd(t) & 1 ? 1 + rndn(t, max) : edge32(t);
		th->diff_threshold = rnd(t) & 1 ? rndn(t, max + 1) : edge32(t);
		th->flags = rnd(t) & 7 ? 0 : edge32(t);
		th->pad = rnd(t) & 7 ? 0 : edge32(t);
		break;
	}
	case RCB_SETS_FOLD: {
		struct rcb_sets_fold *f = (void *)p;
		uint64_t sets = d0->info.rcb_sw_sets;

		f->first_set = rnd(t) & 3 ? rndn(t, sets) : edge64(t);
		f->nr_sets = rnd(t) & 3 ? rndn(t, 16) : edge64(t);
		f->flags = rnd(t) & 7 ? 0 : edge32(t);
		f->pad = rnd(t) & 7 ? 0 : edge32(t);
		break;
	}
	default:
		break;
	}
	(void)fd;
	return (uintptr_t)p;
}

static int pick_fd(struct fthread *t)
{
	struct fdev *f = &devs[rndn(t, ndev)];

	return f->fds[rndn(t, 2)];
}

static void do_ioctl(struct fthread *t, bool known)
{
	unsigned long cmd;
	uint64_t arg;
	int fd = pick_fd(t), ret;

	if (known) {
		cmd = known_cmds[rndn(t, NKNOWN)];
		/* Rare: reset frees tables. */
		if (cmd == RCB_RESET && rndn(t, 50))
			cmd = RCB_INFO_GET;
		arg = known_arg(t, cmd, fd);
		atomic_fetch_add(&by_kind[K_IOCTL], 1);
	} else {
		cmd = random_cmd(t);
		for (unsigned int i = 0; i < NKNOWN; i++)
			if (cmd == known_cmds[i])
				cmd = _IOC(0, RCB_IOC_MAGIC, 0xff, 0);
		/*
		 * A session would outlive the call: count_test covers it.
		 * RCB_FEEDS_GET writes through the pointer its argument
		 * holds, here anywhere in this program: ioctl_errors_test
		 * calls it, and refcnt_feeds() (lib's unit_test).
		 * RCB_EVENT_FORMAT would change the record size the reads
		 * here expect: events_test covers it. RCB_RANGE_QUERY of
		 * any size from its first struct's on is that command.
		 */
		if (cmd == RCB_COUNT_START || cmd == RCB_FEEDS_GET ||
		    cmd == RCB_EVENT_FORMAT || range_query_sized(cmd))
			cmd = _IOC(0, RCB_IOC_MAGIC, 0xff, 0);
		arg = fuzz_ptr(t, _IOC_SIZE(cmd));
		atomic_fetch_add(&by_kind[K_UNKNOWN], 1);
	}
	if (cmd == RCB_SLOT_GET && (rnd(t) & 1)) {
		/* a fresh file that never saw RCB_INFO_GET */
		fd = devs[rndn(t, ndev)].fds[2];
	}
	t->kind = known ? K_IOCTL : K_UNKNOWN;
	t->cmd = cmd;
	t->arg = arg;
	if (arg >= (uintptr_t)t->arena && arg <= (uintptr_t)t->guard - 48)
		memcpy(t->snap, (void *)(uintptr_t)arg, 48);
	else
		memset(t->snap, 0, 48);
	ret = ioctl(fd, cmd, (unsigned long)arg);
	t->kind = -1;
	if (ret == 0) {
		if (!known)
			violation("ioctl 0x%08lx (%s) succeeded, want ENOTTY",
				  cmd, cmd_name(cmd));
		return;
	}
	if (ret != -1) {
		violation("ioctl 0x%08lx returned %d", cmd, ret);
		return;
	}
	if (!errno_ok(cmd, errno))
		violation("ioctl %s (0x%08lx) arg 0x%llx: %s (%d)",
			  cmd_name(cmd), cmd, U64(arg), strerror(errno), errno);
}

static void do_mmap(struct fthread *t)
{
	struct fdev *f = &devs[rndn(t, ndev)];
	uint64_t len, maxlen = rc_round_up(f->d.info.rcb_len, 4096);
	static const int prots[] = {
		PROT_READ, PROT_READ, PROT_READ, PROT_WRITE,
		PROT_READ | PROT_WRITE, PROT_READ | PROT_EXEC, PROT_NONE,
	};
	int prot = prots[rndn(t, 7)];
	int flags = rnd(t) & 1 ? MAP_SHARED : MAP_PRIVATE;
	off_t off;
	volatile uint8_t *m;
	int e;

	switch (rndn(t, 5)) {
	case 0: len = edge64(t); break;
	case 1: len = maxlen; break;
	case 2: len = maxlen + 4096; break;
	default: len = 1 + rndn(t, 4 * 4096); break;
	}
	switch (rndn(t, 5)) {
	case 0: off = (off_t)edge64(t); break;
	case 1: off = (off_t)maxlen - 4096 * (off_t)rndn(t, 3); break;
	case 2: off = 1 + (off_t)rndn(t, 4095); break;
	default: off = 0; break;
	}
	if (!(rnd(t) & 7))
		flags |= MAP_POPULATE;
	atomic_fetch_add(&by_kind[K_MMAP], 1);
	t->kind = K_MMAP;
	t->a1 = len;
	t->a2 = off;
	m = mmap(NULL, len, prot, flags, f->fds[rndn(t, 2)], off);
	if (m == MAP_FAILED) {
		e = errno;
		if (e != EINVAL && e != EPERM && e != EACCES && e != ENOMEM &&
		    e != EOVERFLOW)
			violation("mmap len 0x%llx off 0x%llx prot %d flags 0x%x: %s",
				  U64(len), U64(off), prot, flags, strerror(e));
		return;
	}
	if (prot & PROT_WRITE) {
		violation("mmap prot %d flags 0x%x succeeded", prot, flags);
	} else if (prot & PROT_READ) {
		uint64_t i, sink = 0;

		for (i = 0; i < len && i < 4 * 4096; i += 4096)
			sink += m[i];
		sink += m[len - 1];
		(void)sink;
		if (!mprotect((void *)m, 4096, PROT_READ | PROT_WRITE))
			violation("mprotect PROT_WRITE succeeded");
		else if (errno != EACCES)
			violation("mprotect PROT_WRITE: %s, want EACCES",
				  strerror(errno));
	}
	munmap((void *)m, len);
}

static void do_read(struct fthread *t)
{
	static const size_t sizes[] = { 0, 1, 71, 72, 73, 143, 144, 4096,
					72 * 4096, SIZE_MAX, SSIZE_MAX };
	size_t size = rnd(t) & 3 ? sizes[rndn(t, 11)] : rndn(t, 1000);
	uint64_t buf = fuzz_ptr(t, size < ARENA / 2 ? size : ARENA / 2);
	struct fdev *f = &devs[rndn(t, ndev)];
	ssize_t n;

	atomic_fetch_add(&by_kind[K_READ], 1);
	/* only the O_NONBLOCK file: a blocking read could wait for ever */
	t->kind = K_READ;
	t->a1 = size;
	t->a2 = buf;
	n = read(f->fds[0], (void *)(uintptr_t)buf, size);
	t->kind = -1;
	if (n >= 0) {
		if (n % 72 || (size_t)n > size || (n == 0 && size))
			violation("read %zu returned %zd", size, n);
		return;
	}
	if (errno != EINVAL && errno != EAGAIN && errno != EFAULT &&
	    errno != EINTR)
		violation("read size %zu buf 0x%llx: %s", size, U64(buf),
			  strerror(errno));
}

static void do_poll(struct fthread *t)
{
	struct pollfd p = {
		.fd = pick_fd(t),
		.events = (short)(rnd(t) & 1 ? POLLIN : rnd(t)),
	};

	atomic_fetch_add(&by_kind[K_POLL], 1);
	if (poll(&p, 1, 0) < 0)
		violation("poll: %s", strerror(errno));
	else if (p.revents & (POLLERR | POLLNVAL))
		violation("poll revents 0x%x", p.revents);
}

static void do_pread(struct fthread *t)
{
	char b[144];
	int fd = pick_fd(t);

	atomic_fetch_add(&by_kind[K_PREAD], 1);
	if (rnd(t) & 1) {
		if (pread(fd, b, sizeof(b), rndn(t, 4096)) >= 0 ||
		    errno != ESPIPE)
			violation("pread: want ESPIPE, got %s", strerror(errno));
	} else {
		if (lseek(fd, (off_t)rndn(t, 4096), SEEK_SET) >= 0 ||
		    errno != ESPIPE)
			violation("lseek: want ESPIPE, got %s", strerror(errno));
	}
}

static void do_open(struct fthread *t)
{
	struct fdev *f = &devs[rndn(t, ndev)];
	char path[64];
	struct rcb_info info;
	int fd;

	atomic_fetch_add(&by_kind[K_OPEN], 1);
	rc_dev_path(path, sizeof(path), f->d.nid);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		violation("open %s: %s", path, strerror(errno));
		return;
	}
	if (ioctl(fd, RCB_INFO_GET, &info))
		violation("RCB_INFO_GET on a new file: %s", strerror(errno));
	else if (info.rcb_nodeid != (uint32_t)f->d.nid)
		violation("%s: rcb_nodeid %u", path, info.rcb_nodeid);
	close(fd);
}

static void *fuzz_thread(void *arg)
{
	struct fthread *t = arg;
	uint64_t n;

	while (!stop) {
		n = atomic_fetch_add(&calls_made, 1);
		if (n >= max_calls) {
			atomic_fetch_sub(&calls_made, 1);
			break;
		}
		if ((n & 1023) == 0 && rc_now_ns() > deadline_ns) {
			stop = 1;
			break;
		}
		t->kind = -1;
		switch (rndn(t, 100)) {
		case 0 ... 54: do_ioctl(t, true); break;
		case 55 ... 74: do_ioctl(t, false); break;
		case 75 ... 81: do_mmap(t); break;
		case 82 ... 91: do_read(t); break;
		case 92 ... 95: do_poll(t); break;
		case 96 ... 98: do_pread(t); break;
		default: do_open(t); break;
		}
	}
	return NULL;
}

static int online_nodes(void)
{
	struct rc_nodes on;

	if (rc_node_list("online", &on))
		return 0;
	return on.n;
}

static void on_fault(int sig, siginfo_t *si, void *uc __attribute__((unused)))
{
	char b[128];
	int n = snprintf(b, sizeof(b), "# fuzz: signal %d at address %p\n",
			 sig, si->si_addr);

	if (write(2, b, n) < 0)
		_exit(3);
	_exit(2);
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : def;
}

static uint64_t calls_wanted(int argc, char **argv)
{
	if (argc > 1)
		return strtoull(argv[1], NULL, 0);
	return env_u64("REFCNT_FUZZ_CALLS", online_nodes() == 4 ? 1000000 :
						50000);
}

/* argc/argv of main, for the TEST below. */
static int g_argc;
static char **g_argv;

FIXTURE(fuzz) {
	int unused;
};

FIXTURE_SETUP(fuzz)
{
}

FIXTURE_TEARDOWN(fuzz)
{
}

TEST_F_TIMEOUT(fuzz, all_devices, 600)
{
	struct fthread th[FUZZ_THREADS];
	uint32_t abs0[MAX_DEVS], diff0[MAX_DEVS];
	bool joined[FUZZ_THREADS] = { false };
	struct rc_nodes mem;
	uint64_t t0, secs_max;
	double secs;
	int i, j;

	ASSERT_EQ(0, rc_mem_nodes(&mem));
	ndev = mem.n < MAX_DEVS ? mem.n : MAX_DEVS;
	for (i = 0; i < ndev; i++) {
		ASSERT_EQ(0, rcd_open(&devs[i].d, mem.id[i]));
		devs[i].fds[0] = devs[i].d.fd;
		devs[i].fds[1] = rc_open_node(mem.id[i], O_RDONLY);
		devs[i].fds[2] = rc_open_node(mem.id[i], O_RDONLY | O_NONBLOCK);
		ASSERT_LE(0, devs[i].fds[1]);
		ASSERT_LE(0, devs[i].fds[2]);
		abs0[i] = devs[i].d.info.rcb_abs_threshold;
		diff0[i] = devs[i].d.info.rcb_diff_threshold;
	}
	{
		struct sigaction sa = { .sa_sigaction = on_fault,
					.sa_flags = SA_SIGINFO };

		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
	}
	max_calls = calls_wanted(g_argc, g_argv);
	secs_max = env_u64("REFCNT_FUZZ_SECONDS", 400);
	t0 = rc_now_ns();
	deadline_ns = t0 + secs_max * 1000000000ULL;

	for (i = 0; i < FUZZ_THREADS; i++) {
		th[i].id = i;
		th[i].rnd = 0x9e3779b97f4a7c15ULL * (i + 1) ^ t0;
		th[i].arena = mmap(NULL, ARENA + 4096, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, th[i].arena);
		th[i].guard = th[i].arena + ARENA;
		ASSERT_EQ(0, mprotect(th[i].guard, 4096, PROT_NONE));
		ASSERT_EQ(0, pthread_create(&th[i].t, NULL, fuzz_thread, &th[i]));
	}
	/* Watchdog: progress every 20 s; a thread stuck past the bound. */
	for (;;) {
		uint64_t n = atomic_load(&calls_made);
		bool done = true;

		for (i = 0; i < FUZZ_THREADS; i++) {
			if (joined[i])
				continue;
			if (pthread_tryjoin_np(th[i].t, NULL) == EBUSY)
				done = false;
			else
				joined[i] = true;
		}
		if (done)
			break;
		if (rc_now_ns() > deadline_ns + 30000000000ULL) {
			for (i = 0; i < FUZZ_THREADS; i++) {
				if (joined[i])
					continue;
				ksft_print_msg("thread %d stuck: kind %d cmd 0x%lx (%s) "
					       "arg 0x%llx a1 0x%llx a2 0x%llx\n", i,
					       th[i].kind, th[i].cmd, cmd_name(th[i].cmd),
					       U64(th[i].arg), U64(th[i].a1), U64(th[i].a2));
				for (j = 0; j < 48; j += 8)
					ksft_print_msg("  arg+%d: 0x%016llx\n", j,
						       U64(*(uint64_t *)(th[i].snap + j)));
			}
			ASSERT_TRUE(false) TH_LOG("fuzz threads stuck");
		}
		sleep(1);
		if ((rc_now_ns() - t0) / 1000000000ULL % 20 == 0)
			ksft_print_msg("fuzz: %llu calls after %.0f s\n", U64(n),
				       (rc_now_ns() - t0) / 1e9);
	}
	secs = (rc_now_ns() - t0) / 1e9;

	/* Restore the thresholds and reset every node. */
	for (i = 0; i < ndev; i++) {
		EXPECT_EQ(0, rc_thresholds(devs[i].d.fd, abs0[i], diff0[i]));
		EXPECT_EQ(0, rc_sync(devs[i].d.fd));
		EXPECT_EQ(0, rc_reset(devs[i].d.fd));
		rc_drain(devs[i].d.fd);
	}
	ksft_print_msg("fuzz: %llu calls in %.1f s on %d devices, %d threads "
		       "(ioctl %llu, unknown ioctl %llu, mmap %llu, read %llu, "
		       "poll %llu, pread/lseek %llu, open %llu)\n",
		       U64(atomic_load(&calls_made)), secs, ndev, FUZZ_THREADS,
		       U64(by_kind[K_IOCTL]), U64(by_kind[K_UNKNOWN]),
		       U64(by_kind[K_MMAP]), U64(by_kind[K_READ]),
		       U64(by_kind[K_POLL]), U64(by_kind[K_PREAD]),
		       U64(by_kind[K_OPEN]));
	for (j = 0; j < nexamples; j++)
		ksft_print_msg("violation: %s\n", examples[j]);
	for (i = 0; i < ndev; i++) {
		close(devs[i].fds[1]);
		close(devs[i].fds[2]);
		rcd_close(&devs[i].d);
	}
	EXPECT_EQ(0ULL, U64(atomic_load(&violations)));
	EXPECT_EQ(max_calls, U64(atomic_load(&calls_made))) {
		ksft_print_msg("stopped by the %llu s bound\n", U64(secs_max));
	}
}

int main(int argc, char **argv)
{
	g_argc = argc;
	g_argv = argv;
	return test_harness_run(argc > 1 ? 1 : argc, argv);
}
