// SPDX-License-Identifier: GPL-2.0
/*
 * kshim.c: the run-time half of kshim.h (see there).
 */
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kshim.h"

struct shim_machine shim_machine;
struct workqueue_struct *system_unbound_wq;
#ifdef SHIM_TSAN
int shim_rcu_token;
#endif

/* Per-CPU data */
__thread int shim_cpu_id = -1;
static int shim_nr_cpus;

int shim_cpu_assign(void)
{
	int cpu = __atomic_fetch_add(&shim_nr_cpus, 1, __ATOMIC_RELAXED);

	if (cpu >= NR_CPUS) {
		fprintf(stderr, "kshim: more than %d threads used per-CPU data\n",
			NR_CPUS);
		abort();
	}
	shim_cpu_id = cpu;
	return cpu;
}

void *shim_alloc_percpu(size_t size)
{
	if (size > SHIM_PCPU_STRIDE) {
		fprintf(stderr, "kshim: per-CPU object of %zu bytes > %d\n",
			size, SHIM_PCPU_STRIDE);
		abort();
	}
	return calloc(NR_CPUS, SHIM_PCPU_STRIDE);
}

__thread bool shim_in_nmi;

unsigned long find_next_bit(const unsigned long *addr, unsigned long size,
			    unsigned long offset)
{
	while (offset < size) {
		unsigned long w = READ_ONCE(addr[offset / BITS_PER_LONG]);

		w &= ~0UL << (offset % BITS_PER_LONG);
		if (w) {
			offset = offset / BITS_PER_LONG * BITS_PER_LONG +
				 __builtin_ctzl(w);
			return offset < size ? offset : size;
		}
		offset = (offset / BITS_PER_LONG + 1) * BITS_PER_LONG;
	}
	return size;
}

/* RCU */
__thread bool shim_rcu_registered;
static pthread_key_t shim_rcu_key;
static pthread_once_t shim_rcu_once = PTHREAD_ONCE_INIT;

static void shim_rcu_unregister(void *arg)
{
	(void)arg;
	urcu_memb_unregister_thread();
}

static void shim_rcu_key_init(void)
{
	pthread_key_create(&shim_rcu_key, shim_rcu_unregister);
}

/* Registered until the thread ends: the key's destructor unregisters. */
void shim_rcu_register(void)
{
	pthread_once(&shim_rcu_once, shim_rcu_key_init);
	urcu_memb_register_thread();
	pthread_setspecific(shim_rcu_key, (void *)1);
	shim_rcu_registered = true;
}

void synchronize_rcu(void)
{
	urcu_memb_synchronize_rcu();
	shim_rcu_acquire();
}

/* Locks */
void mutex_init(struct mutex *lock)
{
	pthread_mutex_init(&lock->m, NULL);
	lock->held = false;
}

void mutex_lock(struct mutex *lock)
{
	pthread_mutex_lock(&lock->m);
	lock->owner = pthread_self();
	lock->held = true;
}

void mutex_unlock(struct mutex *lock)
{
	lock->held = false;
	pthread_mutex_unlock(&lock->m);
}

/* Only the owner reads these fields while it holds the lock: no race. */
void shim_assert_held(struct mutex *lock)
{
	if (!lock->held || !pthread_equal(lock->owner, pthread_self())) {
		fprintf(stderr, "kshim: lock not held by this thread\n");
		abort();
	}
}

void shim_pause(void)
{
	usleep(100);
}

/* Deferred work */
static pthread_mutex_t shim_q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t shim_q_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t shim_q_idle = PTHREAD_COND_INITIALIZER;
static struct shim_deferred *shim_q_head, **shim_q_tail = &shim_q_head;
static struct shim_deferred *shim_q_running;
static bool shim_worker_on, shim_worker_quit;
static pthread_t shim_worker;

static bool shim_queue(struct shim_deferred *d)
{
	pthread_mutex_lock(&shim_q_lock);
	if (d->pending) {
		pthread_mutex_unlock(&shim_q_lock);
		return false;
	}
	d->pending = 1;
	d->next = NULL;
	*shim_q_tail = d;
	shim_q_tail = &d->next;
	pthread_cond_signal(&shim_q_cond);
	pthread_mutex_unlock(&shim_q_lock);
	return true;
}

/* Called with shim_q_lock; the item is no longer pending once taken. */
static struct shim_deferred *shim_take(void)
{
	struct shim_deferred *d = shim_q_head;

	if (!d)
		return NULL;
	shim_q_head = d->next;
	if (!shim_q_head)
		shim_q_tail = &shim_q_head;
	d->pending = 0;
	shim_q_running = d;
	return d;
}

static void shim_done(void)
{
	shim_q_running = NULL;
	pthread_cond_broadcast(&shim_q_idle);
}

unsigned int shim_run_pending(void)
{
	struct shim_deferred *d;
	unsigned int n = 0;

	pthread_mutex_lock(&shim_q_lock);
	while ((d = shim_take())) {
		pthread_mutex_unlock(&shim_q_lock);
		d->run(d);
		n++;
		pthread_mutex_lock(&shim_q_lock);
		shim_done();
	}
	pthread_mutex_unlock(&shim_q_lock);
	return n;
}

static void *shim_worker_main(void *arg)
{
	struct shim_deferred *d;

	(void)arg;
	pthread_mutex_lock(&shim_q_lock);
	while (!shim_worker_quit) {
		d = shim_take();
		if (!d) {
			pthread_cond_wait(&shim_q_cond, &shim_q_lock);
			continue;
		}
		pthread_mutex_unlock(&shim_q_lock);
		d->run(d);
		pthread_mutex_lock(&shim_q_lock);
		shim_done();
	}
	pthread_mutex_unlock(&shim_q_lock);
	return NULL;
}

void shim_worker_start(void)
{
	shim_worker_quit = false;
	if (pthread_create(&shim_worker, NULL, shim_worker_main, NULL)) {
		fprintf(stderr, "kshim: cannot start the worker thread\n");
		abort();
	}
	shim_worker_on = true;
}

void shim_worker_stop(void)
{
	if (!shim_worker_on)
		return;
	pthread_mutex_lock(&shim_q_lock);
	shim_worker_quit = true;
	pthread_cond_signal(&shim_q_cond);
	pthread_mutex_unlock(&shim_q_lock);
	pthread_join(shim_worker, NULL);
	shim_worker_on = false;
}

/* Take @d off the queue and wait until it is not running. */
static bool shim_cancel(struct shim_deferred *d)
{
	struct shim_deferred **pp;
	bool was = false;

	pthread_mutex_lock(&shim_q_lock);
	for (pp = &shim_q_head; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			was = true;
			break;
		}
	}
	shim_q_tail = &shim_q_head;
	while (*shim_q_tail)
		shim_q_tail = &(*shim_q_tail)->next;
	d->pending = 0;
	while (shim_q_running == d)
		pthread_cond_wait(&shim_q_idle, &shim_q_lock);
	pthread_mutex_unlock(&shim_q_lock);
	return was;
}

static void shim_irq_work_run(struct shim_deferred *d)
{
	struct irq_work *w = container_of(d, struct irq_work, d);

	w->func(w);
}

static void shim_work_run(struct shim_deferred *d)
{
	struct work_struct *w = container_of(d, struct work_struct, d);

	w->func(w);
}

void init_irq_work(struct irq_work *work, void (*func)(struct irq_work *))
{
	memset(work, 0, sizeof(*work));
	work->d.run = shim_irq_work_run;
	work->func = func;
}

bool irq_work_queue(struct irq_work *work)
{
	return shim_queue(&work->d);
}

/* The kernel's waits for a running one; a queued one still runs there. */
void irq_work_sync(struct irq_work *work)
{
	shim_cancel(&work->d);
}

void shim_init_work(struct work_struct *work,
		    void (*func)(struct work_struct *))
{
	memset(work, 0, sizeof(*work));
	work->d.run = shim_work_run;
	work->func = func;
}

bool queue_work(struct workqueue_struct *wq, struct work_struct *work)
{
	(void)wq;
	return shim_queue(&work->d);
}

bool cancel_work_sync(struct work_struct *work)
{
	return shim_cancel(&work->d);
}

static struct delayed_work *shim_timers;	/* waiting, by ->next_timer */

bool queue_delayed_work(struct workqueue_struct *wq, struct delayed_work *dw,
			unsigned long delay)
{
	bool queued;

	if (!delay) {
		queued = queue_work(wq, &dw->work);
		if (queued)
			dw->delay = 0;
		return queued;
	}
	pthread_mutex_lock(&shim_q_lock);
	queued = !dw->work.d.pending;
	if (queued) {
		dw->work.d.pending = 1;
		dw->delay = delay;
		dw->next_timer = shim_timers;
		shim_timers = dw;
	}
	pthread_mutex_unlock(&shim_q_lock);
	return queued;
}

unsigned int shim_run_timers(void)
{
	struct delayed_work *dw;
	unsigned int n = 0;

	pthread_mutex_lock(&shim_q_lock);
	while ((dw = shim_timers)) {
		shim_timers = dw->next_timer;
		dw->work.d.next = NULL;
		*shim_q_tail = &dw->work.d;
		shim_q_tail = &dw->work.d.next;
		n++;
	}
	pthread_cond_signal(&shim_q_cond);
	pthread_mutex_unlock(&shim_q_lock);
	return n;
}

bool cancel_delayed_work_sync(struct delayed_work *dw)
{
	struct delayed_work **pp;
	bool was = false;

	pthread_mutex_lock(&shim_q_lock);
	for (pp = &shim_timers; *pp; pp = &(*pp)->next_timer) {
		if (*pp == dw) {
			*pp = dw->next_timer;
			dw->work.d.pending = 0;
			was = true;
			break;
		}
	}
	pthread_mutex_unlock(&shim_q_lock);
	return cancel_work_sync(&dw->work) || was;
}

/*
 * Memory. Pages are separate allocations, so AddressSanitizer sees each
 * one's bounds; or, after shim_direct_map(), they come from one region
 * of huge pages, as the kernel's direct map gives them: a benchmark that
 * took a TLB miss per counter page would measure the shim.
 */
static char *shim_arena, *shim_arena_end, *shim_arena_next;
static void *shim_arena_free;	/* freed arena pages, linked through */
static pthread_mutex_t shim_arena_lock = PTHREAD_MUTEX_INITIALIZER;

int shim_direct_map(size_t bytes)
{
	void *p = mmap(NULL, bytes + (2UL << 20), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return -ENOMEM;
	shim_arena = (char *)(((unsigned long)p + (2UL << 20) - 1) &
			      ~((2UL << 20) - 1));
	madvise(shim_arena, bytes, MADV_HUGEPAGE);
	shim_arena_next = shim_arena;
	shim_arena_end = shim_arena + bytes;
	return 0;
}

static void *shim_arena_page(void)
{
	void *p = NULL;

	pthread_mutex_lock(&shim_arena_lock);
	if (shim_arena_free) {
		p = shim_arena_free;
		shim_arena_free = *(void **)p;
	} else if (shim_arena_next < shim_arena_end) {
		p = shim_arena_next;
		shim_arena_next += PAGE_SIZE;
	}
	pthread_mutex_unlock(&shim_arena_lock);
	if (p)
		memset(p, 0, PAGE_SIZE);
	return p;
}

bool shim_no_memory;

struct page *alloc_pages_node(int nid, gfp_t gfp, unsigned int order)
{
	void *p;

	(void)nid;
	(void)gfp;
	if (__atomic_load_n(&shim_no_memory, __ATOMIC_RELAXED))
		return NULL;
	if (shim_arena && !order)
		return shim_arena_page();
	if (posix_memalign(&p, PAGE_SIZE, PAGE_SIZE << order))
		return NULL;
	memset(p, 0, PAGE_SIZE << order);
	return p;
}

void __free_page(struct page *page)
{
	char *p = (char *)page;

	if (p >= shim_arena && p < shim_arena_end) {
		pthread_mutex_lock(&shim_arena_lock);
		*(void **)p = shim_arena_free;
		shim_arena_free = p;
		pthread_mutex_unlock(&shim_arena_lock);
		return;
	}
	free(page);
}

void *kzalloc_node(size_t size, gfp_t gfp, int nid)
{
	(void)gfp;
	(void)nid;
	return size == SIZE_MAX ? NULL : calloc(1, size ? size : 1);
}

unsigned long totalram_pages(void)
{
	return sysconf(_SC_PHYS_PAGES);
}

long si_mem_available(void)
{
	return sysconf(_SC_AVPHYS_PAGES);
}

void sort(void *base, size_t num, size_t size,
	  int (*cmp)(const void *, const void *), void *swap)
{
	(void)swap;
	qsort(base, num, size, cmp);
}

u64 ktime_get_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The fake machine */
int pfn_to_nid(unsigned long pfn)
{
	u64 pa = PFN_PHYS(pfn);
	unsigned int i;

	for (i = 0; i < shim_machine.nr_ranges; i++)
		if (pa >= shim_machine.ram[i].start && pa < shim_machine.ram[i].end)
			return shim_machine.ram[i].nid;
	return -1;
}

unsigned long node_start_pfn(int nid)
{
	u64 lo = U64_MAX;
	unsigned int i;

	for (i = 0; i < shim_machine.nr_ranges; i++)
		if (shim_machine.ram[i].nid == nid)
			lo = min(lo, shim_machine.ram[i].start);
	return lo == U64_MAX ? 0 : PFN_DOWN(lo);
}

unsigned long node_end_pfn(int nid)
{
	u64 hi = 0;
	unsigned int i;

	for (i = 0; i < shim_machine.nr_ranges; i++)
		if (shim_machine.ram[i].nid == nid)
			hi = max(hi, shim_machine.ram[i].end);
	return PFN_DOWN(hi);
}

static int shim_range_cmp(const void *a, const void *b)
{
	const u64 *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* Every RAM range meeting [start, end], clipped, in address order. */
int walk_iomem_res_desc(unsigned long desc, unsigned long flags, u64 start,
			u64 end, void *arg, int (*func)(struct resource *, void *))
{
	u64 r[SHIM_MAX_RANGES][2];
	unsigned int i, n = 0;
	int ret = -EINVAL;

	(void)desc;
	(void)flags;
	for (i = 0; i < shim_machine.nr_ranges; i++) {
		r[n][0] = shim_machine.ram[i].start;
		r[n][1] = shim_machine.ram[i].end;
		n++;
	}
	qsort(r, n, sizeof(r[0]), shim_range_cmp);
	for (i = 0; i < n; i++) {
		struct resource res = {
			.start = max(r[i][0], start),
			.end = min(r[i][1] - 1, end),
		};

		if (res.start > res.end)
			continue;
		ret = func(&res, arg);
		if (ret)
			return ret;
	}
	return ret == -EINVAL ? -EINVAL : 0;
}

/* Interface stand-ins */
static struct super_block shim_sb;
static struct vfsmount shim_mnt = { .mnt_sb = &shim_sb };

struct vfsmount *kern_mount(struct file_system_type *type)
{
	(void)type;
	return &shim_mnt;
}

void kern_unmount(struct vfsmount *mnt)
{
	(void)mnt;
}

struct pseudo_fs_context *init_pseudo(struct fs_context *fc, unsigned long magic)
{
	static struct pseudo_fs_context ctx;

	(void)fc;
	(void)magic;
	return &ctx;
}

void kill_anon_super(struct super_block *sb)
{
	(void)sb;
}

struct inode *alloc_anon_inode(struct super_block *sb)
{
	struct inode *inode = calloc(1, sizeof(*inode));

	(void)sb;
	if (!inode)
		return ERR_PTR(-ENOMEM);
	inode->i_mapping = &inode->data;
	return inode;
}

void iput(struct inode *inode)
{
	free(inode);
}

void unmap_mapping_range(struct address_space *mapping, loff_t start,
			 loff_t len, int even_cows)
{
	(void)mapping;
	(void)start;
	(void)len;
	(void)even_cows;
}

vm_fault_t vmf_insert_page(struct vm_area_struct *vma, unsigned long addr,
			   struct page *page)
{
	(void)vma;
	(void)addr;
	(void)page;
	return VM_FAULT_NOPAGE;
}
