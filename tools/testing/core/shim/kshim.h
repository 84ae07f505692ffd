/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kshim.h: just enough of the kernel for refcnt's core in user space.
 *
 * Every <linux/...> header a core file of kmod/ includes is a one-line
 * forwarder to this file (the Makefile makes them from its SHIM_HEADERS
 * list). After tools/testing/radix-tree and tools/testing/vma: the real
 * sources, compiled over small stand-ins:
 *
 *   atomics, bit operations	GCC __atomic builtins, same orderings
 *   per-CPU data		one slot per thread (shim_cpu())
 *   irq_work, work items	one worker thread, or run by hand
 *				(shim_run_pending()) for determinism
 *   RCU			liburcu (memb flavour), read side inline
 *   pages			4 KiB aligned allocations; struct page is
 *				the page itself
 *   mutex, spinlock, rwsem	pthreads
 *   resources, node spans	a fake machine described by the test
 *				(struct shim_machine)
 *
 * READ_ONCE/WRITE_ONCE are relaxed atomics: what the kernel's volatile
 * accesses are on x86, and what ThreadSanitizer needs to see them as
 * the intentional races they are.
 */
#ifndef _KSHIM_H
#define _KSHIM_H

#if defined(__SANITIZE_THREAD__)
#define SHIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHIM_TSAN 1
#endif
#endif

/*
 * liburcu's read side inline for speed; under ThreadSanitizer from the
 * uninstrumented library instead, whose volatile-and-fence protocol
 * TSan cannot follow (it would report liburcu itself).
 */
#ifndef SHIM_TSAN
#define _LGPL_SOURCE
#endif
#include <urcu/urcu-memb.h>
/* liburcu maps the kernel's names to its flavour; we say which we mean. */
#undef rcu_read_lock
#undef rcu_read_unlock
#undef synchronize_rcu
#undef rcu_dereference
#undef rcu_assign_pointer

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <asm/types.h>

/* Types */
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
typedef unsigned int gfp_t;
typedef unsigned int vm_fault_t;
typedef unsigned long pgoff_t;
typedef u64 phys_addr_t;
typedef u64 resource_size_t;

#define __user
#define __percpu
#define __rcu
#define __iomem
#define __force
#define __must_check
#define noinline		__attribute__((noinline))
#define noinline_for_stack	noinline
#ifndef __always_inline
#define __always_inline		inline __attribute__((always_inline))
#endif
#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)

#define U8_MAX			((u8)~0U)
#define U32_MAX			((u32)~0U)
#define U64_MAX			((u64)~0ULL)
#define BITS_PER_LONG		64
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#ifndef KBUILD_MODNAME
#define KBUILD_MODNAME		"refcnt"
#endif

/*
 * Module glue: nothing is exported here, and kmod/compat.h (kernel
 * versions) is for the kernel's headers only, so it is marked included.
 */
#define _REFCNT_COMPAT_H
#define EXPORT_SYMBOL_NS_GPL(sym, ns)
#ifndef pr_fmt
#define pr_fmt(fmt)		fmt
#endif
#define pr_err(fmt, ...)	fprintf(stderr, pr_fmt(fmt), ##__VA_ARGS__)
#define pr_warn(fmt, ...)	fprintf(stderr, pr_fmt(fmt), ##__VA_ARGS__)
#define pr_info(fmt, ...)	fprintf(stderr, pr_fmt(fmt), ##__VA_ARGS__)
#define pr_debug(fmt, ...)	do { } while (0)
#define WARN_ON(c)		({ bool __c = !!(c); if (__c) fprintf(stderr, "WARN_ON(%s) at %s:%d\n", #c, __FILE__, __LINE__); __c; })
#define WARN_ON_ONCE(c)		WARN_ON(c)
#define BUG_ON(c)		do { if (c) abort(); } while (0)

/* Arithmetic */
#define min(a, b)		({ __auto_type __a = (a); __auto_type __b = (b); __a < __b ? __a : __b; })
#define max(a, b)		({ __auto_type __a = (a); __auto_type __b = (b); __a > __b ? __a : __b; })
#define min_t(t, a, b)		({ t __a = (a); t __b = (b); __a < __b ? __a : __b; })
#define max_t(t, a, b)		({ t __a = (a); t __b = (b); __a > __b ? __a : __b; })
#define clamp(v, lo, hi)	min(max((v), (lo)), (hi))
#define round_down(x, y)	((x) & ~((__typeof__(x))((y) - 1)))
#define round_up(x, y)		((((x) - 1) | ((__typeof__(x))((y) - 1))) + 1)
#define ALIGN(x, a)		round_up(x, a)
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define DIV_ROUND_UP_ULL(n, d)	DIV_ROUND_UP((unsigned long long)(n), (d))
#define BITS_TO_LONGS(n)	DIV_ROUND_UP((u64)(n), BITS_PER_LONG)
#define ilog2(n)		(63 - __builtin_clzll((u64)(n)))
#define check_mul_overflow(a, b, d)	__builtin_mul_overflow(a, b, d)
static inline size_t array_size(size_t a, size_t b)
{
	size_t r;

	return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* Errors */
#define MAX_ERRNO		4095
#define IS_ERR_VALUE(x)		((unsigned long)(x) >= (unsigned long)-MAX_ERRNO)
static inline void *ERR_PTR(long e) { return (void *)e; }
static inline long PTR_ERR(const void *p) { return (long)p; }
static inline bool IS_ERR(const void *p) { return IS_ERR_VALUE(p); }
static inline int PTR_ERR_OR_ZERO(const void *p) { return IS_ERR(p) ? (int)PTR_ERR(p) : 0; }
#define ERESTARTSYS		512

/* Memory ordering and atomics */
/*
 * A pointer read with READ_ONCE() orders what is read through it (an
 * address dependency, the kernel's memory model); C11 only offers
 * acquire for that, so pointers get acquire, everything else relaxed.
 */
#define SHIM_IS_POINTER(x)	(__builtin_classify_type(x) == 5)
#define READ_ONCE(x)		__atomic_load_n(&(x), SHIM_IS_POINTER(x) ? \
					__ATOMIC_ACQUIRE : __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v)	__atomic_store_n(&(x), (__typeof__(x))(v), __ATOMIC_RELAXED)
#define barrier()		__asm__ __volatile__("" ::: "memory")
#define smp_mb()		__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define smp_wmb()		__atomic_thread_fence(__ATOMIC_RELEASE)
#define smp_rmb()		__atomic_thread_fence(__ATOMIC_ACQUIRE)
#define try_cmpxchg(p, o, n)	__atomic_compare_exchange_n((p), (o), (n), 0, \
					__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)
#define cmpxchg(p, o, n)	({ __typeof__(*(p)) __o = (o); \
				   __atomic_compare_exchange_n((p), &__o, (n), 0, \
					__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); __o; })
#define xchg(p, v)		({ __typeof__(*(p)) __v = (v); \
				   __atomic_exchange_n((p), __v, __ATOMIC_SEQ_CST); })

typedef struct { int counter; } atomic_t;
typedef struct { s64 counter; } atomic64_t;
typedef struct { long counter; } atomic_long_t;
#define atomic_read(v)		READ_ONCE((v)->counter)
#define atomic_set(v, i)	WRITE_ONCE((v)->counter, (i))
#define atomic_inc(v)		((void)__atomic_fetch_add(&(v)->counter, 1, __ATOMIC_RELAXED))
#define atomic_dec_and_test(v)	(__atomic_sub_fetch(&(v)->counter, 1, __ATOMIC_SEQ_CST) == 0)
#define atomic64_read(v)	READ_ONCE((v)->counter)
#define atomic64_set(v, i)	WRITE_ONCE((v)->counter, (i))
#define atomic64_xchg(v, i)	xchg(&(v)->counter, (i))
#define atomic64_add(i, v)	((void)__atomic_fetch_add(&(v)->counter, (i), __ATOMIC_RELAXED))
#define atomic_try_cmpxchg(v, o, n) __atomic_compare_exchange_n(&(v)->counter, (o), (n), 0, \
				__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)
#define smp_store_release(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define smp_load_acquire(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define atomic_long_read(v)	READ_ONCE((v)->counter)
#define atomic_long_set(v, i)	WRITE_ONCE((v)->counter, (i))
#define atomic_long_inc(v)	((void)__atomic_fetch_add(&(v)->counter, 1, __ATOMIC_RELAXED))
#define atomic_long_sub(i, v)	((void)__atomic_fetch_sub(&(v)->counter, (i), __ATOMIC_RELAXED))
#define atomic_long_dec(v)	atomic_long_sub(1, v)

/* Bit operations: atomic like the kernel's (set_bit is unordered). */
#define BIT_WORD(nr)		((nr) / BITS_PER_LONG)
#define BIT_MASK(nr)		(1UL << ((nr) % BITS_PER_LONG))
#define set_bit(nr, a)		((void)__atomic_fetch_or(&(a)[BIT_WORD(nr)], BIT_MASK(nr), __ATOMIC_RELAXED))
#define clear_bit(nr, a)	((void)__atomic_fetch_and(&(a)[BIT_WORD(nr)], ~BIT_MASK(nr), __ATOMIC_RELAXED))
#define test_and_clear_bit(nr, a) ((__atomic_fetch_and(&(a)[BIT_WORD(nr)], ~BIT_MASK(nr), __ATOMIC_SEQ_CST) & BIT_MASK(nr)) != 0)
#define test_and_set_bit(nr, a)	((__atomic_fetch_or(&(a)[BIT_WORD(nr)], BIT_MASK(nr), __ATOMIC_SEQ_CST) & BIT_MASK(nr)) != 0)
#define test_bit(nr, a)		((READ_ONCE((a)[BIT_WORD(nr)]) & BIT_MASK(nr)) != 0)
#define __set_bit(nr, a)	set_bit(nr, a)
#define clear_bit_unlock(nr, a)	((void)__atomic_fetch_and(&(a)[BIT_WORD(nr)], ~BIT_MASK(nr), __ATOMIC_RELEASE))
#define smp_mb__before_atomic()	smp_mb()
#define smp_mb__after_atomic()	smp_mb()
unsigned long find_next_bit(const unsigned long *addr, unsigned long size,
			    unsigned long offset);
#define for_each_set_bit(bit, addr, size) \
	for ((bit) = find_next_bit((addr), (size), 0); (bit) < (size); \
	     (bit) = find_next_bit((addr), (size), (bit) + 1))
/*
 * The kernel's bitmap_zero() is a memset of whole longs; word by word
 * here, so the sanitizer judges the code's ordering, not memset's.
 */
static inline void bitmap_zero(unsigned long *map, u64 nbits)
{
	u64 i;

	for (i = 0; i < BITS_TO_LONGS(nbits); i++)
		WRITE_ONCE(map[i], 0);
}

/* Per-CPU data: one slot per thread, SHIM_PCPU_STRIDE bytes apart. */
#define NR_CPUS			256
#define SHIM_PCPU_STRIDE	2048	/* a deferral ring fits */
extern __thread int shim_cpu_id;
int shim_cpu_assign(void);
static inline int shim_cpu(void)
{
	int cpu = shim_cpu_id;

	return likely(cpu >= 0) ? cpu : shim_cpu_assign();
}
void *shim_alloc_percpu(size_t size);
#define alloc_percpu(type)	((type *)shim_alloc_percpu(sizeof(type)))
#define free_percpu(p)		free(p)
#define per_cpu_ptr(p, cpu)	((__typeof__(p))((char *)(p) + (size_t)(cpu) * SHIM_PCPU_STRIDE))
#define this_cpu_ptr(p)		per_cpu_ptr(p, shim_cpu())
#define this_cpu_add(pcp, v)	do { __typeof__(pcp) *__p = this_cpu_ptr(&(pcp)); \
		__atomic_store_n(__p, __atomic_load_n(__p, __ATOMIC_RELAXED) + (v), \
				 __ATOMIC_RELAXED); } while (0)
#define this_cpu_inc(pcp)	this_cpu_add(pcp, 1)
#define for_each_possible_cpu(cpu) for ((cpu) = 0; (cpu) < NR_CPUS; (cpu)++)
#define num_possible_cpus()	NR_CPUS

/* Contexts: a thread may pretend to be in NMI (the fuzzer does). */
extern __thread bool shim_in_nmi;
#define in_nmi()		(shim_in_nmi)
#define cond_resched()		do { } while (0)
#define might_sleep()		do { } while (0)

/* RCU: liburcu; threads register on first use. */
#ifdef SHIM_TSAN
/*
 * liburcu's grace periods are made of fences and futexes ThreadSanitizer
 * does not see: tell it that a reader's section happens before the end
 * of the grace period after it, which is RCU's whole guarantee.
 */
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern int shim_rcu_token;
#define shim_rcu_release()	__tsan_release(&shim_rcu_token)
#define shim_rcu_acquire()	__tsan_acquire(&shim_rcu_token)
#else
#define shim_rcu_release()	do { } while (0)
#define shim_rcu_acquire()	do { } while (0)
#endif
extern __thread bool shim_rcu_registered;
void shim_rcu_register(void);
static inline void rcu_read_lock(void)
{
	if (unlikely(!shim_rcu_registered))
		shim_rcu_register();
	urcu_memb_read_lock();
}
static inline void rcu_read_unlock(void)
{
	shim_rcu_release();
	urcu_memb_read_unlock();
}
void synchronize_rcu(void);
/* The replaced slot index: a published pointer, no lockdep here. */
#define rcu_read_lock_held()	1
#define lockdep_is_held(l)		((void)(l), 1)
#define rcu_dereference_check(p, c) \
	__atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define rcu_replace_pointer(p, v, c) \
	__atomic_exchange_n(&(p), (v), __ATOMIC_ACQ_REL)

/* Reference counts */
struct kref { int refcount; };
#define kref_init(k)		((k)->refcount = 1)
#define kref_read(k)		__atomic_load_n(&(k)->refcount, __ATOMIC_RELAXED)
#define kref_get(k)		((void)__atomic_fetch_add(&(k)->refcount, 1, __ATOMIC_RELAXED))
#define kref_put(k, release) \
	(__atomic_sub_fetch(&(k)->refcount, 1, __ATOMIC_ACQ_REL) ? 0 : \
	 ((release)(k), 1))

/* Locks */
struct mutex {
	pthread_mutex_t m;
	pthread_t owner;
	bool held;
};
void mutex_init(struct mutex *lock);
void mutex_lock(struct mutex *lock);
void mutex_unlock(struct mutex *lock);
void shim_assert_held(struct mutex *lock);
#define SINGLE_DEPTH_NESTING	1
#define mutex_lock_nested(l, c)	mutex_lock(l)
#define lockdep_assert_held(l)	shim_assert_held(l)
typedef struct { pthread_mutex_t m; } spinlock_t;
#define spin_lock_init(l)	pthread_mutex_init(&(l)->m, NULL)
#define spin_lock(l)		pthread_mutex_lock(&(l)->m)
#define spin_unlock(l)		pthread_mutex_unlock(&(l)->m)
struct rw_semaphore { pthread_rwlock_t l; };
#define init_rwsem(s)		pthread_rwlock_init(&(s)->l, NULL)
#define down_read(s)		pthread_rwlock_rdlock(&(s)->l)
#define up_read(s)		pthread_rwlock_unlock(&(s)->l)
#define down_write(s)		pthread_rwlock_wrlock(&(s)->l)
#define up_write(s)		pthread_rwlock_unlock(&(s)->l)
#define DECLARE_RWSEM(n)	struct rw_semaphore n = { PTHREAD_RWLOCK_INITIALIZER }

/* Wait queues: readers poll; nothing in the core sleeps for long. */
typedef struct { int unused; } wait_queue_head_t;
#define init_waitqueue_head(w)	((void)(w))
#define wake_up_interruptible(w) ((void)(w))
void shim_pause(void);
#define wait_event_interruptible(w, cond) ({ while (!(cond)) shim_pause(); 0; })

/* Deferred work: irq_work and work items share one queue. */
struct shim_deferred {
	void (*run)(struct shim_deferred *d);
	struct shim_deferred *next;
	int pending;
};
struct irq_work {
	struct shim_deferred d;
	void (*func)(struct irq_work *work);
};
struct work_struct {
	struct shim_deferred d;
	void (*func)(struct work_struct *work);
};
struct workqueue_struct;
extern struct workqueue_struct *system_unbound_wq;
void init_irq_work(struct irq_work *work, void (*func)(struct irq_work *));
bool irq_work_queue(struct irq_work *work);
void irq_work_sync(struct irq_work *work);
void shim_init_work(struct work_struct *work, void (*func)(struct work_struct *));
#define INIT_WORK(w, f)		shim_init_work((w), (f))
bool queue_work(struct workqueue_struct *wq, struct work_struct *work);
bool cancel_work_sync(struct work_struct *work);
/*
 * Delayed work: queued at once without a delay; with one, it waits until
 * a test says the time has passed (shim_run_timers()). The delay asked
 * for is kept for the tests to check.
 */
struct delayed_work {
	struct work_struct work;
	unsigned long delay;
	struct delayed_work *next_timer;
};
#define HZ			1000
#define msecs_to_jiffies(m)	((unsigned long)(m))
#define INIT_DELAYED_WORK(w, f)	shim_init_work(&(w)->work, (f))
#define to_delayed_work(w)	container_of((w), struct delayed_work, work)
bool queue_delayed_work(struct workqueue_struct *wq, struct delayed_work *dw,
			unsigned long delay);
bool cancel_delayed_work_sync(struct delayed_work *dw);
/* Every delay has passed: queue the delayed work; returns how many. */
unsigned int shim_run_timers(void);
/* Run what is queued, in the caller; returns the items run. */
unsigned int shim_run_pending(void);
void shim_worker_start(void);
void shim_worker_stop(void);

/* Memory */
#define PAGE_SHIFT		12
#define PAGE_SIZE		(1UL << PAGE_SHIFT)
#define PFN_UP(x)		(((x) + PAGE_SIZE - 1) >> PAGE_SHIFT)
#define PFN_DOWN(x)		((x) >> PAGE_SHIFT)
#define PFN_PHYS(x)		((u64)(x) << PAGE_SHIFT)
#define SZ_2M			0x00200000
#define GFP_KERNEL		0x01u
#define GFP_ATOMIC		0x02u
#define __GFP_ZERO		0x04u
#define __GFP_NOWARN		0x08u
#define __GFP_NORETRY		0x10u
#define __GFP_RETRY_MAYFAIL	0x20u
#define __GFP_THISNODE		0x40u
struct page;			/* the page's own bytes */
/* While set, every page allocation fails: the machine is out of memory. */
extern bool shim_no_memory;
struct page *alloc_pages_node(int nid, gfp_t gfp, unsigned int order);
void __free_page(struct page *page);
/* Pages from now on come from @bytes of huge pages (benchmarks). */
int shim_direct_map(size_t bytes);
#define put_page(p)		__free_page(p)
#define page_address(p)		((void *)(p))
void *kzalloc_node(size_t size, gfp_t gfp, int nid);
#define kvzalloc_node(s, g, n)	kzalloc_node((s), (g), (n))
#define kcalloc(n, s, g)	kzalloc_node(array_size((n), (s)), (g), 0)
#define kzalloc(s, g)		kzalloc_node((s), (g), 0)
#define struct_size(p, m, n)	(sizeof(*(p)) + array_size((n), sizeof(*(p)->m)))
#define kvmalloc_array(n, s, g)	kzalloc_node(array_size((n), (s)), (g), 0)
#define kfree(p)		free((void *)(p))
#define kvfree(p)		free((void *)(p))
#define bitmap_zalloc(n, g)	((unsigned long *)kcalloc(BITS_TO_LONGS(n), \
						  sizeof(unsigned long), (g)))
#define bitmap_free(p)		kvfree(p)
#define krealloc_array(p, n, s, g) realloc((p), array_size((n), (s)))
unsigned long totalram_pages(void);
long si_mem_available(void);
void sort(void *base, size_t num, size_t size,
	  int (*cmp)(const void *, const void *), void *swap);
u64 ktime_get_ns(void);
#define copy_to_user(to, from, n) (memcpy((to), (from), (n)), 0UL)

/* Nodes and the physical memory map: a fake machine (shim_machine). */
#define MAX_NUMNODES		1024
#define SHIM_MAX_RANGES		64
struct shim_machine {
	bool online[MAX_NUMNODES];
	unsigned int nr_ranges;
	struct { u64 start, end; int nid; } ram[SHIM_MAX_RANGES];	/* bytes */
};
extern struct shim_machine shim_machine;
#define for_each_online_node(nid) \
	for ((nid) = 0; (nid) < MAX_NUMNODES; (nid)++) if (shim_machine.online[nid])
/* Every node of the fake machine is possible and online. */
#define for_each_node(nid)	for_each_online_node(nid)
#define node_online(nid)	(shim_machine.online[nid])
#define NODE_DATA(nid)		shim_node_data(nid)
static inline void *shim_node_data(int nid) { return &shim_machine.online[nid]; }
#define NUMA_NO_NODE		(-1)
/* All RAM of the fake machine is online. */
#define pfn_to_online_page(pfn)	(pfn_to_nid(pfn) >= 0 ? (struct page *)1 : NULL)
int pfn_to_nid(unsigned long pfn);
unsigned long node_start_pfn(int nid);
unsigned long node_end_pfn(int nid);
struct resource {
	resource_size_t start;
	resource_size_t end;	/* inclusive */
};
#define IORES_DESC_NONE		0
#define IORESOURCE_SYSTEM_RAM	0x01000200UL
#define IORESOURCE_BUSY		0x80000000UL
int walk_iomem_res_desc(unsigned long desc, unsigned long flags, u64 start,
			u64 end, void *arg, int (*func)(struct resource *, void *));

/* What the core shares with its interfaces: stand-ins only. */
struct address_space { int unused; };
struct inode { struct address_space *i_mapping; struct address_space data; };
struct super_block { int unused; };
struct vfsmount { struct super_block *mnt_sb; };
struct fs_context { int unused; };
struct pseudo_fs_context { int unused; };
struct file_system_type {
	const char *name;
	int (*init_fs_context)(struct fs_context *fc);
	void (*kill_sb)(struct super_block *sb);
};
struct vm_area_struct { int unused; };
struct vm_fault { struct vm_area_struct *vma; unsigned long address; pgoff_t pgoff; };
struct file;
struct device;
struct attribute_group;
struct perf_sample_data;
#define VM_FAULT_SIGBUS		0x0002
#define VM_FAULT_NOPAGE		0x0100
struct vfsmount *kern_mount(struct file_system_type *type);
void kern_unmount(struct vfsmount *mnt);
struct pseudo_fs_context *init_pseudo(struct fs_context *fc, unsigned long magic);
void kill_anon_super(struct super_block *sb);
struct inode *alloc_anon_inode(struct super_block *sb);
void iput(struct inode *inode);
void unmap_mapping_range(struct address_space *mapping, loff_t start,
			 loff_t len, int even_cows);
vm_fault_t vmf_insert_page(struct vm_area_struct *vma, unsigned long addr,
			   struct page *page);

#endif /* _KSHIM_H */
