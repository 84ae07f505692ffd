/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The refcnt trace format: one file per thread (vCPU) of 8-byte "simple
 * records" after SMAIT (Abandah, "Tools for Characterizing Distributed
 * Shared Memory Applications", HPL 1996, appendix A): two 32-bit unsigned
 * fields, little-endian, the type field f1 first. Shared by the writer in
 * the refcnt-truth QEMU plugin (tools/testing/truth/trace-writer.c), the
 * readers (trace-read.c) and refcnt-trace make. The whole format, with
 * examples, is in Documentation/trace-format.rst.
 *
 * f1 selects the record:
 *
 *   0x00000RSA  memory access (SMAIT A.2): A access (0 load, 1 store),
 *               S size code (TR_SIZE_*), R register kind (TR_REG_*);
 *               f2 bits 31..0 of the virtual address.
 *   0x00001TTN  simple record N (0..5) of a call record (SMAIT A.1) of
 *               call type TT: start time, end time (microseconds since the
 *               trace started), argument 1..4. Written: 0x17 start of
 *               trace (the first record), 0x10 marker, 0x18 end of trace
 *               (the last record).
 *   0x4, 0x8, 0xC in the top hex digit: SMAIT branch records; read and
 *               counted, not written.
 *   0x21......  extension: f2 = bits 63..32 of the virtual addresses of
 *               the records after it (0 until the first).
 *   0x22KNNNNN  extension: physical page of the next memory record: K
 *               its kind (TR_PAGE_*), NNNNN (16 bits) the home node id
 *               (RAM of a node only); f2 its 4 KiB frame number. Fills
 *               the entry (vpn mod TR_PT_SIZE) of the trace's page table.
 *   0x23HHHHH   extension: time: nanoseconds since the trace started,
 *               bits 51..32 in f1, 31..0 in f2; of this record and those
 *               after it, until the next.
 *   0x24HHHHH   extension: clock: guest instructions the thread executed
 *               since the trace started, 52 bits as TIME.
 *   0x25IIBBB   extension: code: a block of II instructions (8 bits), BBB
 *               bytes (12 bits) executed from virtual address f2 (high
 *               bits from 0x21).
 *
 * A memory record's physical address: entry (vpn mod TR_PT_SIZE) of the
 * page table, if that entry holds the record's virtual page; the writer
 * emits a 0x22 record before a memory record whenever that is not so, or
 * the frame or node differs, so a reader mirroring the table always finds
 * it. In a trace with physical pages, the high 32 address bits of a memory
 * record that has no 0x22 record before it are its entry's (the index,
 * vpn mod TR_PT_SIZE, comes from the low bits); 0x21 records give them to
 * the others.
 */
#ifndef REFCNT_TRACE_FORMAT_H
#define REFCNT_TRACE_FORMAT_H

#include <stdint.h>

#define TR_RECORD_SIZE		8
#define TR_VERSION		1
#define TR_MAGIC		0x52435452u	/* "RCTR", argument 1 of start */

/* Memory access: f1 digits. */
#define TR_LOAD			0
#define TR_STORE		1
#define TR_REG_FIXED		0	/* general-purpose register */
#define TR_REG_FLOAT		1	/* x87, SSE, AVX register */
#define TR_REG_NONE		2	/* memory to memory (movs, cmps) */
#define TR_NR_REGS		3

/* Size codes: SMAIT's digit is the size in bytes; 9..11 are wider. */
#define TR_SIZE_16		9
#define TR_SIZE_32		10
#define TR_SIZE_64		11

static inline unsigned int tr_size_code(unsigned int bytes)
{
	switch (bytes) {
	case 16: return TR_SIZE_16;
	case 32: return TR_SIZE_32;
	case 64: return TR_SIZE_64;
	default: return bytes <= 8 ? bytes : 0xf;
	}
}

/* Bytes of a size code; 0 for a code that is not one. */
static inline unsigned int tr_size_bytes(unsigned int code)
{
	if (code <= 8)
		return code;
	switch (code) {
	case TR_SIZE_16: return 16;
	case TR_SIZE_32: return 32;
	case TR_SIZE_64: return 64;
	default: return 0;
	}
}

static inline uint32_t tr_mem_f1(unsigned int store, unsigned int size_code,
				 unsigned int reg)
{
	return (reg & 0xf) << 8 | (size_code & 0xf) << 4 | (store & 0xf);
}

/* Call records. */
#define TR_CALL_BASE		0x00001000u
#define TR_CALL_MARKER		0x10
#define TR_CALL_START		0x17
#define TR_CALL_END		0x18
#define TR_CALL_RECORDS		6

static inline uint32_t tr_call_f1(unsigned int type, unsigned int n)
{
	return TR_CALL_BASE | (type & 0xff) << 4 | (n & 0xf);
}

/*
 * Start of trace, arguments: TR_MAGIC, TR_VERSION | thread << 8, node id
 * of the thread (TR_NO_NODE: unknown), TR_HAS_* | threads << 16.
 */
#define TR_NO_NODE		0xffffffffu
#define TR_HAS_PHYS		(1u << 0)	/* 0x22 records */
#define TR_HAS_TIME		(1u << 1)	/* 0x23 and 0x24 records */
#define TR_HAS_CODE		(1u << 2)	/* 0x25 records */
#define TR_HAS_MASK		0xffu
/* End of trace, arguments: memory records (low, high 32 bits), lost, 0. */

/* Marker commands (SMAIT smait_marker()). */
#define TR_MARK_NONE		0	/* no effect: a phase boundary */
#define TR_MARK_STOP		1	/* stop tracing this thread */
#define TR_MARK_RESUME		2	/* resume tracing this thread */
#define TR_MARK_STOP_ALL	3	/* stop tracing every thread */
#define TR_MARK_RESUME_ALL	4	/* resume tracing every thread */
#define TR_NR_MARKS		5

/* Extensions. */
#define TR_EXT_VAHI		0x21
#define TR_EXT_PAGE		0x22
#define TR_EXT_TIME		0x23
#define TR_EXT_CLOCK		0x24
#define TR_EXT_CODE		0x25

#define TR_PAGE_RAM		0	/* RAM of node NNNNN */
#define TR_PAGE_IO		1	/* MMIO: no frame */
#define TR_PAGE_OTHER		2	/* RAM of no node (ROM) */
#define TR_PAGE_SHIFT		12
#define TR_PT_SIZE		64
#define TR_MAX52		((1ull << 52) - 1)

static inline uint32_t tr_ext_f1(unsigned int ext, uint32_t payload24)
{
	return (uint32_t)ext << 24 | (payload24 & 0xffffff);
}

static inline uint32_t tr_page_f1(unsigned int kind, unsigned int nid)
{
	return tr_ext_f1(TR_EXT_PAGE, (kind & 0xf) << 16 | (nid & 0xffff));
}

static inline uint32_t tr_code_f1(unsigned int insns, unsigned int bytes)
{
	return tr_ext_f1(TR_EXT_CODE, (insns & 0xff) << 12 | (bytes & 0xfff));
}

/* Little-endian store and load of a record. */
static inline void tr_put(unsigned char *p, uint32_t f1, uint32_t f2)
{
	p[0] = f1; p[1] = f1 >> 8; p[2] = f1 >> 16; p[3] = f1 >> 24;
	p[4] = f2; p[5] = f2 >> 8; p[6] = f2 >> 16; p[7] = f2 >> 24;
}

static inline uint32_t tr_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

#endif /* REFCNT_TRACE_FORMAT_H */
