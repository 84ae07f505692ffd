# SPDX-License-Identifier: GPL-2.0
"""refcnt-setup: install what make check needs, and name the guest
kernels: Debian's 6.1 (bookworm or bookworm-security, the newer) and 6.12
(bookworm-backports), following the linux-headers-amd64 metapackage, so a
new Debian kernel upload is picked up by the next run."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import time
import zlib
from typing import List, NoReturn, Optional, Sequence, Tuple

from . import apt, debpkg
from .debpkg import PROG, SetupError, say

# Host packages the rig needs (the kernel headers are added per kernel).
# Anything make check builds against or runs belongs here: CI machines
# start from a bare Debian 12.
BASE_PKGS: Tuple[str, ...] = (
    "qemu-system-x86",      # the guests
    "qemu-system-arm",      # refcnt-vm --arch arm64 (make check-long)
    "busybox-static",       # their userland
    "cpio",                 # the initramfs
    "libnuma-dev",          # librefcnt and the selftests
    "sparse",               # C=2 on kmod/
    "linux-source-6.1",     # kselftest_harness.h, checkpatch.pl, debug kernel
    "linux-source-6.12",    # the test PMU's 6.12 kernel (pmu-6.12)
    "gcc-multilib",         # the -m32 selftests (compat ioctl layout)
    "make", "gcc", "xz-utils", "perl",
    "zstd",                 # refcnt-vm unpacks the 6.12 vmlinuz to boot PVH
    "libpng-dev", "zlib1g-dev",  # refcnt-run's and refcnt-dump's heatmaps
    "groff-base",           # librefcnt's man page check
    "libglib2.0-dev",       # the truth plugin (QEMU plugins use glib)
    "libzstd-dev",          # compressed traces (plugin, tools/src/trace/)
    "libjansson-dev",       # the tools' --json strings (tools/src/rjson.c), static
    "libmicrohttpd-dev",    # refcnt-exporter's HTTP server (linked dynamically)
    "valgrind",             # trace-check reads lackey's traces
    # tools/testing/core: RCU from liburcu; clang's TSan, ASan/UBSan and
    # libFuzzer runtimes
    "liburcu-dev", "clang-14", "libclang-rt-14-dev",
    "libpcp-pmda3-dev", "libpcp3-dev",  # make pmda: pmdarefcnt
    "python3-prometheus-client",  # refcnt-fleet-check's reference parsers
    "python3",              # the rig itself, refcnt-vm-qmp
    "debootstrap", "e2fsprogs",  # refcnt-vm --debian's root
    # make deb (debian/control's Build-Depends) and deb-check: lintian,
    # DKMS building the package's module on the host
    "debhelper", "dh-dkms", "dpkg-dev", "pkg-config", "lintian", "dkms",
    "libpfm4-dev",          # make papi: PAPI from Debian's source
    # refcnt-run names objects with libdwfl, linked statically
    "libdw-dev", "libelf-dev", "liblzma-dev", "libbz2-dev",
    "chromium",             # objects/html-check: refcnt-run --html
    "flex", "bison", "bc",  # the debug kernel (objtool: libelf-dev)
    "shellcheck",           # make shellcheck
    "mypy", "flake8",       # make rig-check
    # Not here: make cross-arm64's compiler. gcc-12-aarch64-linux-gnu
    # conflicts with gcc-multilib; rig/cross.py unpacks it, its libc and
    # the arm64 headers and libraries into build/arm64/ instead.
)

USAGE = f"""\
Usage: {PROG} COMMAND

Commands:
  deps          Install (idempotently) everything `make check` needs: the
                bookworm-backports apt source, QEMU, busybox-static, sparse,
                libnuma-dev, gcc-multilib, linux-source-6.1 and -6.12, the
                headers of both guest kernels and their vmlinuz images.  Must run as
                root.
  kernels       Print the two guest kernel release strings, one per line,
                6.1 first (e.g. 6.1.0-56-amd64 and 6.12.95+deb12-amd64).
  qemu-plugin-header DIR
                Put QEMU's include/qemu/qemu-plugin.h, from the Debian source
                package of the installed qemu-system-x86, into DIR (Debian
                ships no header for plugins).  Adds a deb-src apt source
                copied from the machine's own bookworm entry if there is none
                (root needed then).  Nothing else of the source is kept.
  papi-source DIR
                Unpack the source of Debian's PAPI (the version libpapi-dev
                has or would install) into DIR/papi-VERSION and print that
                path, for building PAPI with the refcnt component
                (papi/components/refcnt).  Adds the deb-src apt source as
                qemu-plugin-header does.
  vmlinuz VER   Print the path of the vmlinuz of kernel release VER, fetching
                it into build/kernels/VER/ if it is not in /boot.
  modules VER   Print the /lib/modules/VER directory of kernel release VER
                (for refcnt-vm --debian, which loads virtio and ext4 from
                it): the host's if it has the modules, else the file
                systems, block, virtio, crypto and lib modules extracted
                from Debian's image package into build/kernels/VER/.
  help          This text.

Environment:
  REFCNT_BUILD_DIR   build directory (default: <repo>/build)
  REFCNT_APT_ETC     apt's configuration directory (default /etc/apt; for
                     the tests of the source editing)
"""


def die(msg: str) -> NoReturn:
    raise SetupError(msg)


class Setup:
    def __init__(self, root: str) -> None:
        build = os.environ.get("REFCNT_BUILD_DIR",
                               os.path.join(root, "build"))
        self.kdir = os.path.join(build, "kernels")
        self.etc = os.environ.get("REFCNT_APT_ETC", "/etc/apt")
        self.updated = False

    # --- apt ---------------------------------------------------------------

    def need_root(self, what: str) -> None:
        if os.geteuid() != 0:
            die(f"'{what}' installs packages and must run as root")

    def update(self) -> None:
        if self.updated:
            return
        say("apt-get update")
        if subprocess.call(["apt-get", "update", "-q"],
                           stdout=sys.stderr) != 0:
            die("apt-get update failed")
        self.updated = True

    def ensure_source(self, typ: str, suite: Optional[str], name: str,
                      what: str) -> None:
        if apt.have(self.etc, suite or apt.BASE, typ):
            return
        self.need_root(what)
        try:
            out, src = apt.add(self.etc, typ, suite, name)
        except ValueError as e:
            die(str(e))
        say(f"added {suite or typ} source {out} (copied from {src})")
        self.update()

    # --- kernel releases ---------------------------------------------------

    def apt_state(self) -> str:
        """What apt's answer depends on: its lists and its sources."""
        paths = sorted(glob.glob("/var/lib/apt/lists/*_Packages*")) + \
            [os.path.join(self.etc, "sources.list")] + \
            sorted(glob.glob(os.path.join(self.etc, "sources.list.d/*")))
        parts = []
        for p in paths:
            try:
                st = os.stat(p)
            except OSError:
                continue
            parts.append(f"{int(st.st_mtime)} {st.st_size} {p}")
        return str(zlib.crc32("\n".join(parts).encode()))

    def kernels(self) -> List[str]:
        """The two releases, 6.1 first; cached until apt's lists or
        sources change (apt-cache takes seconds, and every guest run
        asks)."""
        cache, state = os.path.join(self.kdir, "versions"), self.apt_state()
        try:
            with open(cache) as f:
                lines = f.read().split("\n")
            if lines[0] == state and len(lines) >= 3 and lines[2]:
                return lines[1:3]
        except OSError:
            pass
        metas = headers_meta_versions()
        k61 = pick_kernel(r"^6\.1\.[0-9]+-[0-9.]+$", metas)
        if not k61:
            die("apt knows no linux-headers-amd64 6.1 version; run "
                "'tools/testing/refcnt-setup deps' (as root) first")
        k612 = pick_kernel(r"^6\.12\.[0-9]+-.*~bpo12", metas)
        if not k612:
            die("apt knows no linux-headers-amd64 6.12 version from "
                "bookworm-backports; run 'tools/testing/refcnt-setup deps' "
                "(as root) first")
        try:
            os.makedirs(self.kdir, exist_ok=True)
            tmp = f"{cache}.tmp.{os.getpid()}"
            with open(tmp, "w") as f:
                f.write(f"{state}\n{k61}\n{k612}\n")
            os.replace(tmp, cache)
        except OSError:
            pass
        return [k61, k612]


def headers_meta_versions() -> List[Tuple[str, str]]:
    """(version, the headers package it depends on) of every
    linux-headers-amd64 apt knows of, in every suite."""
    r = subprocess.run(["apt-cache", "show", "linux-headers-amd64"],
                       capture_output=True, text=True)
    return parse_meta_versions(r.stdout)


def parse_meta_versions(text: str) -> List[Tuple[str, str]]:
    out, version = [], ""
    for line in text.split("\n"):
        if line.startswith("Version:"):
            version = line.split()[1]
        elif line.startswith("Depends:"):
            m = re.search(r"linux-headers-[^ ,]*-amd64", line)
            if m:
                out.append((version, m.group(0)))
    return out


def version_gt(a: str, b: str) -> bool:
    return subprocess.call(["dpkg", "--compare-versions", a, "gt", b]) == 0


def pick_kernel(pattern: str, metas: Sequence[Tuple[str, str]]) -> str:
    """The release of the highest metapackage version matching PATTERN
    (its headers package's name without linux-headers-), or ""."""
    best: Optional[Tuple[str, str]] = None
    for v, pkg in metas:
        if re.search(pattern, v) and (best is None or version_gt(v, best[0])):
            best = (v, pkg)
    return best[1].removeprefix("linux-headers-") if best else ""


def missing(kernels: Sequence[str]) -> List[str]:
    want = list(BASE_PKGS) + [f"linux-headers-{k}" for k in kernels]
    # One dpkg-query for all: a fresh machine asks about 60 packages.
    fmt = "-f=${Package} ${db:Status-Status}\\n"
    r = subprocess.run(["dpkg-query", "-W", fmt, *want], capture_output=True,
                       text=True)
    ok = {w[0] for w in (ln.split() for ln in r.stdout.split("\n"))
          if len(w) == 2 and w[1] == "installed"}
    return [p for p in want if p not in ok]


def deps(s: Setup) -> None:
    t0 = time.time()
    s.need_root("deps")
    os.environ["DEBIAN_FRONTEND"] = "noninteractive"
    if apt.have(s.etc, "bookworm-backports"):
        say("bookworm-backports source: present")
    else:
        s.ensure_source("deb", "bookworm-backports", "refcnt-backports",
                        "deps")
    # A fresh machine may never have run apt-get update; an old list may
    # lack the backports kernels or name packages the mirror dropped.
    try:
        kernels = s.kernels()
    except SetupError:
        s.update()
        kernels = s.kernels()
    todo = missing(kernels)
    if todo and not s.updated:
        s.update()
        kernels = s.kernels()
        todo = missing(kernels)
    say(f"guest kernels: {' '.join(kernels)}")
    if todo:
        say(f"installing: {' '.join(todo)}")
        # --no-install-recommends keeps QEMU's GUI and firmware extras out.
        if subprocess.call(["apt-get", "install", "-y", "-q",
                            "--no-install-recommends", *todo],
                           stdout=sys.stderr) != 0:
            die(f"apt-get install {' '.join(todo)} failed")
    else:
        say("packages: all present")
    for k in kernels:
        p = debpkg.vmlinuz_path(s.kdir, k)
        if p:
            say(f"vmlinuz {k}: {p}")
        else:
            debpkg.vmlinuz(s.kdir, k)
    say(f"deps done in {int(time.time() - t0)}s")


def _update_if_root(s: Setup) -> bool:
    """For a stale source list: apt-get update, once, if root."""
    if os.geteuid() != 0 or s.updated:
        return False
    s.update()
    return True


def run(s: Setup, cmd: str, args: Sequence[str]) -> int:
    def arg(usage: str) -> str:
        if not args:
            die(f"usage: {PROG} {usage}")
        return args[0]

    if cmd == "deps":
        deps(s)
    elif cmd == "kernels":
        # One write: under PYTHONUNBUFFERED, print's second write (its
        # newline) met a closed pipe after "kernels | head -n 1".
        sys.stdout.write("".join(k + "\n" for k in s.kernels()))
    elif cmd == "vmlinuz":
        print(debpkg.vmlinuz(s.kdir, arg("vmlinuz VER")))
    elif cmd == "modules":
        print(debpkg.modules(s.kdir, arg("modules VER")))
    elif cmd in ("qemu-plugin-header", "papi-source"):
        dest = arg(f"{cmd} DIR")
        src = debpkg.Sources(
            lambda: s.ensure_source("deb-src", None, "refcnt-src", cmd),
            lambda: _update_if_root(s))
        if cmd == "papi-source":
            print(debpkg.papi_source(dest, src))
        else:
            debpkg.qemu_plugin_header(dest, src)
    elif cmd in ("help", "-h", "--help"):
        print(USAGE, end="")
    else:
        print(USAGE, end="", file=sys.stderr)
        die(f"unknown command '{cmd}'")
    return 0


def main(argv: Sequence[str], root: str) -> int:
    try:
        return run(Setup(root), argv[0] if argv else "help", argv[1:])
    except SetupError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
