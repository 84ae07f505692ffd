/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Window marks for the refcnt-truth QEMU plugin (refcnt-vm --truth-window):
 * multi-byte NOPs, nopl disp32(%rax,%rax,1), whose displacement spells
 * "RCTS" (start counting), "RCTE" (stop) or "RCTD" (dump).  Any x86 CPU runs them as
 * NOPs; the plugin recognises them when it translates them.  Windows add
 * up: every start-stop pair counts into the same tables.
 *
 * TRUTH_MARKER(cmd, num) is SMAIT's smait_marker(cmd, num), a marker
 * record in the vCPU's trace (refcnt-vm --trace): the same NOP with SIB
 * byte 0xe0 + cmd and num as the displacement, both constants. cmd: 0 no
 * effect (a phase boundary), 1 stop this vCPU's window, 2 resume it, 3 stop
 * every vCPU's (as stop), 4 resume every vCPU's (as start). Stop and
 * resume take effect with --truth-window.
 *
 * The same NOP with SIB byte TRUTH_COST_SIB names a kernel function
 * whose calls are the cost of a feed (cost.c): the displacement is the
 * low 32 bits of its address (kernel text is at 0xffffffff........), 0
 * forgets every one named before; TRUTH_COST_USER_SIB names a function
 * below 4 GiB (a static program's, for the plugin's test). Made at run
 * time (truth_mark_run(): truth-mark cost, truth-exact -c).
 */
#ifndef REFCNT_TRUTH_MARK_H
#define REFCNT_TRUTH_MARK_H

static inline void truth_mark_start(void)
{
	__asm__ volatile(".byte 0x0f, 0x1f, 0x84, 0x00, 0x52, 0x43, 0x54, 0x53"
			 ::: "memory");
}

static inline void truth_mark_stop(void)
{
	__asm__ volatile(".byte 0x0f, 0x1f, 0x84, 0x00, 0x52, 0x43, 0x54, 0x45"
			 ::: "memory");
}

/* Stop, write the counts so far to FILE.N (N = 1, 2, ...), zero them. */
static inline void truth_mark_dump(void)
{
	__asm__ volatile(".byte 0x0f, 0x1f, 0x84, 0x00, 0x52, 0x43, 0x54, 0x44"
			 ::: "memory");
}

#define TRUTH_COST_SIB		0xe8
#define TRUTH_COST_USER_SIB	0xe9

#define TRUTH_MARKER(cmd, num)						\
	__asm__ volatile(".byte 0x0f, 0x1f, 0x84, %c0\n\t.long %c1"	\
			 :: "i"(0xe0 + (cmd)), "i"((unsigned int)(num)) : "memory")

#ifdef TRUTH_MARK_RUN
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/*
 * Run the marker NOP with SIB byte sib and displacement num, made in an
 * executable page: 0, or -1 (mmap failed, said on stderr).
 */
static inline int truth_mark_run(unsigned int sib, uint32_t num)
{
	unsigned char code[9] = { 0x0f, 0x1f, 0x84, (unsigned char)sib,
				  num, num >> 8, num >> 16, num >> 24,
				  0xc3 /* ret */ };
	void (*fn)(void);
	void *p;

	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("truth-mark: mmap");
		return -1;
	}
	memcpy(p, code, sizeof(code));
	__builtin___clear_cache(p, (char *)p + sizeof(code));
	fn = (void (*)(void))p;
	fn();
	munmap(p, 4096);
	return 0;
}
#endif

#endif
