// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Built by check-install.sh against the installed headers, pkg-config file
 * and library only: both public headers, their types and a call of every
 * kind, linked and run (no module needed: ENOENT is an answer).
 */
#include <errno.h>
#include <stdio.h>

#include <refcnt/refcnt.h>
#include <refcnt/hwcntrs.h>

int main(void)
{
	struct refcnt_data_range dr;
	sn0_refcnt_buf_t buf[1];
	sn0_refcnt_args_t args = { (caddr_t)&dr, 1, buf };
	struct rcb_info info;
	size_t nr;

	(void)info;
	if (refcnt_nodes(NULL, 0) < 0 && errno != ENOENT)
		return 1;
	if (refcnt_range_entries((uintptr_t)&dr, sizeof(dr), &nr) &&
	    errno != ENOENT)
		return 1;
	if (refcnt_data_range(0, (uintptr_t)&dr, (uintptr_t)(&dr + 1), 0,
			      &dr) && errno != ENOENT)
		return 1;
	if (refcnt_pioctl_sized(0, PIOCGETSN0REFCNTRS, &args, sizeof(buf)) &&
	    errno != ENOENT)
		return 1;
	printf("ok\n");
	return 0;
}
