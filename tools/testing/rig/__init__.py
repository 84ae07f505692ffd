# SPDX-License-Identifier: GPL-2.0
"""The refcnt test rig: the host side of make check and the QEMU guests.

One module per concern (Documentation/testing.rst, "The rig's package"):
tap (TAP and kselftest output), suite (steps, their dependencies and the
plan), results (the summary line), run, kernels, check and driver (make
check); for refcnt-vm, vmargs and vm (its options and run), topology
(the --topology language to QEMU's arguments), qemu (the rest of QEMU's
command line), guest (the initramfs and the run) and klog (the guest's
kernel log and exit marker).  Entry points in tools/testing/ import it.
"""
