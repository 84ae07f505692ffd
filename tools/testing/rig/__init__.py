# SPDX-License-Identifier: GPL-2.0
"""The refcnt test rig: the host side of make check and the QEMU guests.

One module per concern (Documentation/testing.rst, "The rig's package"):
tap (TAP and kselftest output), klog (the guest's kernel log and exit
marker), topology (the --topology language to QEMU's arguments), suite
(steps, their dependencies and the plan), results (the summary line) and
check (make check's driver).  Entry points in tools/testing/ import it.
"""
