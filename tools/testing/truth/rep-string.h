/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rep-string.h: string instructions counted as hardware makes their
 * references. TCG runs a rep string instruction an element at a time (a
 * memset of a page by rep stosb is 4,096 stores); hardware's fast strings
 * move whole cache lines (64 references). Both truth plugins count the
 * consecutive accesses of one such instruction to one line as one
 * reference, loads and stores apart, so that the truth, the hub device
 * fed from it and the virtual truth agree with each other and with
 * hardware. An instruction is told by its address: each iteration may run
 * in another translation block.
 */
#ifndef REP_STRING_H
#define REP_STRING_H

#include <stddef.h>
#include <stdint.h>

#define REP_STRING_LINE	64

/*
 * A vCPU's last line of a rep string instruction, [user 0, kernel 1]
 * [loads 0, stores 1]: an interrupt whose handler copies with one does
 * not split the user's instruction it interrupted.
 */
struct rep_string_last {
	uint64_t ip[2][2], line[2][2];
};

/*
 * Whether the instruction at d (size bytes) is movs, cmps, stos, lods or
 * scas after an f2 or f3 prefix, among the legacy and REX prefixes.
 */
static inline int rep_string(const uint8_t *d, size_t size)
{
	size_t i = 0;
	int rep = 0;

	for (; i < size; i++) {
		if (d[i] == 0xf2 || d[i] == 0xf3)
			rep = 1;
		else if (d[i] != 0x66 && d[i] != 0x67 && d[i] != 0x26 &&
			 d[i] != 0x2e && d[i] != 0x36 && d[i] != 0x3e &&
			 d[i] != 0x64 && d[i] != 0x65 && (d[i] & 0xf0) != 0x40)
			break;
	}
	return rep && i < size &&
	       ((d[i] >= 0xa4 && d[i] <= 0xa7) || (d[i] >= 0xaa && d[i] <= 0xaf));
}

/* Whether this access of the string instruction at ip adds no reference. */
static inline int rep_string_same_line(struct rep_string_last *l, uint64_t ip,
				       uint64_t vaddr, int store)
{
	uint64_t line = vaddr / REP_STRING_LINE;
	int k = ip >> 63;	/* x86-64: the kernel's half */

	if (l->ip[k][store] == ip && l->line[k][store] == line)
		return 1;
	l->ip[k][store] = ip;
	l->line[k][store] = line;
	return 0;
}

#endif
