/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Window marks for the refcnt-truth QEMU plugin (refcnt-vm --truth-window):
 * multi-byte NOPs, nopl disp32(%rax,%rax,1), whose displacement spells
 * "RCTS" (start counting), "RCTE" (stop) or "RCTD" (dump).  Any x86 CPU runs them as
 * NOPs; the plugin recognises them when it translates them.  Windows add
 * up: every start-stop pair counts into the same tables.
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

#endif
