# SPDX-License-Identifier: GPL-2.0
"""guest-libs: the refcnt-vm --file arguments that put the shared
libraries of dynamically linked programs into the busybox guest, at the
paths the host has them (its dynamic loader, libc, libnuma, ...), so that
those programs run there as they are and LD_PRELOAD works.  libgcc_s
comes too: glibc's backtrace() loads it (refcnt-run's allocation tracker
unwinds with it)."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from typing import List, Sequence, Set, Tuple

PROG = "guest-libs"


def parse_ldd(text: str) -> List[str]:
    """The paths in ldd's output: "libx.so => /path (addr)" and
    "/lib64/ld-linux-x86-64.so.2 (addr)"; "=> not found" and the vDSO have
    none."""
    paths = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] == "=>" and f[2].startswith("/"):
            paths.append(f[2])
        if f and f[0].startswith("/"):
            paths.append(f[0])
    return paths


def ldd(path: str) -> Tuple[int, List[str]]:
    p = subprocess.run(["ldd", path], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return p.returncode, parse_ldd(p.stdout)


def libgcc_s() -> str:
    p = subprocess.run(["gcc", "-print-file-name=libgcc_s.so.1"],
                       stdout=subprocess.PIPE, text=True)
    return os.path.realpath(p.stdout.strip())


def file_args(libs: Set[str]) -> List[str]:
    """--file SRC:DST for each library that exists, in byte order."""
    out = []
    for lib in sorted(libs):
        if os.path.exists(lib):
            out += ["--file", f"{lib}:{lib}"]
    return out


PT_INTERP = 3


def is_dynamic_program(path: str) -> bool:
    """An ELF64 file with an interpreter (PT_INTERP): a program the
    dynamic loader starts, which a busybox guest cannot run alone."""
    try:
        with open(path, "rb") as f:
            ehdr = f.read(64)
            if len(ehdr) < 64 or ehdr[:5] != b"\x7fELF\x02":
                return False
            order = "<" if ehdr[5] == 1 else ">"
            phoff, = struct.unpack_from(order + "Q", ehdr, 0x20)
            phentsize, phnum = struct.unpack_from(order + "HH", ehdr, 0x36)
            for i in range(phnum):
                f.seek(phoff + i * phentsize)
                ph = f.read(4)
                if len(ph) == 4 and struct.unpack(order + "I", ph)[0] == PT_INTERP:
                    return True
    except OSError:
        return False
    return False


def dir_file_args(directory: str) -> List[str]:
    """The --file arguments for the shared libraries of the dynamic
    programs directly in DIRECTORY (the tools the guests run as they
    are; refcnt-exporter links libmicrohttpd dynamically)."""
    libs: Set[str] = set()
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    for name in names:
        path = os.path.join(directory, name)
        if os.path.isfile(path) and os.access(path, os.X_OK) and \
                is_dynamic_program(path):
            libs.update(ldd(path)[1])
    return file_args(libs)


def main(argv: Sequence[str]) -> int:
    """One argument a line on stdout.  A file ldd cannot read ends the
    list there (what came before is printed) with ldd's exit status."""
    if not argv:
        print(f"usage: {PROG} PROGRAM...", file=sys.stderr)
        return 2
    libs: Set[str] = set()
    rc = 0
    for f in argv:
        rc, paths = ldd(f)
        libs.update(paths)
        if rc != 0:
            break
    if rc == 0:
        libs.add(libgcc_s())
    for a in file_args(libs):
        print(a)
    return rc
