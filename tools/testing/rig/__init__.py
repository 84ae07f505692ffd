# SPDX-License-Identifier: GPL-2.0
"""The refcnt test rig: the host side of make check and the QEMU guests.

One module per concern; Documentation/testing.rst, "The rig's package",
lists them.  The commands of tools/testing/ are thin entry points that
import it.
"""
