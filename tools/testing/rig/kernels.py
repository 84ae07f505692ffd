# SPDX-License-Identifier: GPL-2.0
"""The kernels a run tests on: Debian's packaged releases, and the debug
kernels the rig builds (tools/testing/refcnt-debug-kernel)."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import List, Optional

from .debugkernel import DebugKernel

# The kernels built here: debug (lockdep, KASAN, kmemleak), and kcsan
# (make check-long).
BUILT = ("debug", "kcsan")


def is_built(kernel: str) -> bool:
    return kernel in BUILT


@dataclass(frozen=True)
class Kernel:
    """NAME as --kernels gives it; ARG, refcnt-vm's --kernel for it;
    RELEASE, what its module is built for (build/RELEASE/refcnt.ko)."""
    name: str
    arg: str
    release: str
    kdir: Optional[str] = None

    @property
    def debug(self) -> bool:
        return is_built(self.name)


def debian(release: str) -> Kernel:
    return Kernel(release, release, release)


def built_dir(root: str, variant: str = "debug") -> Optional[str]:
    """The build directory of a built kernel, or None if not built."""
    return DebugKernel(root, variant).built_dir()


def built(root: str, variant: str = "debug") -> Optional[Kernel]:
    d = built_dir(root, variant)
    if d is None:
        return None
    with open(os.path.join(d, "include/config/kernel.release")) as f:
        rel = f.read().strip()
    return Kernel(variant, os.path.join(d, "bzImage"), rel, d)


def debian_releases(root: str) -> List[str]:
    """tools/testing/refcnt-setup kernels: 6.1 first, then 6.12."""
    out = subprocess.run([os.path.join(root, "tools/testing/refcnt-setup"),
                          "kernels"], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    return out.split()
