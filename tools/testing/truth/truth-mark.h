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
 * forgets every one named before. Made at run time (truth-mark cost).
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

#define TRUTH_COST_SIB	0xe8

#define TRUTH_MARKER(cmd, num)						\
	__asm__ volatile(".byte 0x0f, 0x1f, 0x84, %c0\n\t.long %c1"	\
			 :: "i"(0xe0 + (cmd)), "i"((unsigned int)(num)) : "memory")

#endif
