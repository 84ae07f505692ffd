# SPDX-License-Identifier: GPL-2.0
"""kmod/ built the other ways it ships: through DKMS (refcnt-dkms-check,
make dkms-check) and inside a kernel tree through its Kconfig
(refcnt-intree-check, make intree-check)."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Callable, List, Sequence

DKMS_PROG = "refcnt-dkms-check"
INTREE_PROG = "refcnt-intree-check"
LINUX_SOURCE = "/usr/src/linux-source-6.1.tar.xz"
INTREE_TOOLS = ("flex", "bison", "bc")
KCONFIG_SOURCE = 'source "drivers/misc/refcnt/Kconfig"'
MAKEFILE_LINE = "obj-$(CONFIG_REFCNT) += refcnt/"


class Fatal(Exception):
    """A message for stderr, exit status 1; or STATUS only (a command's,
    which said why itself)."""

    def __init__(self, msg: str, status: int = 1) -> None:
        super().__init__(msg)
        self.status = status


def changelog_version(text: str) -> str:
    """The version of debian/changelog's first entry: what its first
    line has in parentheses."""
    first = text.split("\n", 1)[0]
    m = re.match(r"[^(]*\(([^)]*)\)", first)
    return m.group(1) if m else ""


def dkms_conf(text: str, ver: str) -> str:
    """dkms.conf with the version in, as dh_dkms -V puts it."""
    return "\n".join(line.replace("#MODULE_VERSION#", ver, 1)
                     for line in text.split("\n"))


def guest_kernels(root: str, check: bool = False) -> List[str]:
    """refcnt-setup kernels; when CHECK, its failure (it said why) is
    Fatal with its status."""
    out = subprocess.run([os.path.join(root, "tools/testing/refcnt-setup"),
                          "kernels"], stdout=subprocess.PIPE, text=True)
    if check and out.returncode != 0:
        raise Fatal("", out.returncode)
    return out.stdout.split()


def tail(path: str, n: int) -> str:
    """The last N lines of PATH, as tail -n N prints them."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if not text:
        return ""
    return "".join(line + "\n" for line in
                   text.rstrip("\n").split("\n")[-n:])


def dkms_build(tmp: str, ver: str, k: str) -> bool:
    """dkms build in trees of TMP, signing with a key of its own there;
    built when the module is where DKMS leaves it."""
    env = {**os.environ, "mok_signing_key": f"{tmp}/mok.key",
           "mok_certificate": f"{tmp}/mok.pub"}
    with open(f"{tmp}/{k}.log", "wb") as log:
        rc = subprocess.call(
            ["dkms", "build", f"refcnt/{ver}", "-k", k,
             "--kernelsourcedir", f"/usr/src/linux-headers-{k}",
             "--sourcetree", f"{tmp}/src", "--dkmstree", f"{tmp}/tree",
             "--installtree", f"{tmp}/inst"], env=env, stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return rc == 0 and bool(
        glob.glob(f"{tmp}/tree/refcnt/{ver}/{k}/*/module/refcnt.ko*"))


def dkms_tree(root: str, tmp: str) -> str:
    """The tree as the refcnt-dkms package lays it out: dkms.conf with
    the version of debian/changelog, kmod/, uapi/; its version."""
    with open(os.path.join(root, "debian/changelog")) as f:
        ver = changelog_version(f.read())
    src = f"{tmp}/src/refcnt-{ver}"
    for d in (src, f"{tmp}/tree", f"{tmp}/inst"):
        os.makedirs(d, exist_ok=True)
    for d in ("kmod", "uapi"):
        shutil.copytree(os.path.join(root, d), os.path.join(src, d),
                        symlinks=True)
    with open(os.path.join(root, "dkms.conf")) as f:
        conf = dkms_conf(f.read(), ver)
    with open(os.path.join(src, "dkms.conf"), "w") as f:
        f.write(conf)
    return ver


def dkms_check(root: str) -> int:
    """Build kmod/ through DKMS for each guest kernel's headers (the
    kernels need not be installed); nothing of the host's DKMS state
    changes."""
    if shutil.which("dkms") is None:
        print(f"{DKMS_PROG}: dkms is not installed (apt-get install dkms)",
              file=sys.stderr)
        return 1
    rc = 0
    with tempfile.TemporaryDirectory() as tmp:
        ver = dkms_tree(root, tmp)
        for k in guest_kernels(root):
            if dkms_build(tmp, ver, k):
                print(f"ok: dkms build for {k}", flush=True)
                continue
            print(f"FAILED: dkms build for {k}")
            print(tail(f"{tmp}/{k}.log", 20), end="", flush=True)
            rc = 1
    return rc


def kconfig_with_source(text: str) -> str:
    """drivers/misc/Kconfig with the driver's Kconfig sourced before its
    endmenu, unless it names refcnt already (what the top-level Kconfig
    says to add)."""
    if "refcnt" in text:
        return text
    return re.sub(r"^endmenu", f"{KCONFIG_SOURCE}\nendmenu", text,
                  flags=re.MULTILINE)


def makefile_with_obj(text: str) -> str:
    if "refcnt" in text:
        return text
    return text + MAKEFILE_LINE + "\n"


def warnings(log: str) -> List[str]:
    return [line for line in log.split("\n")
            if re.search(r"(warning|error):", line)]


def edit(path: str, change: Callable[[str], str]) -> None:
    with open(path) as f:
        text = f.read()
    new = change(text)
    if new != text:
        with open(path, "w") as f:
            f.write(new)


def run(cmd: Sequence[str], quiet_out: bool = False,
        quiet_err: bool = False) -> None:
    """CMD, or Fatal with its status (it said why, unless quiet)."""
    null = subprocess.DEVNULL
    rc = subprocess.call(cmd, stdout=null if quiet_out else None,
                         stderr=null if quiet_err else None)
    if rc != 0:
        raise Fatal("", rc)


def intree_prepare(root: str, work: str, kver: str) -> None:
    """linux-source-6.1 in WORK with drivers/misc/refcnt and the 6.1
    config, CONFIG_REFCNT=m; the current directory is its top."""
    os.makedirs(work, exist_ok=True)
    os.chdir(work)
    if not os.path.isdir("linux-source-6.1"):
        print(f"extracting {LINUX_SOURCE}", flush=True)
        run(["tar", "-xJf", LINUX_SOURCE])
    os.chdir("linux-source-6.1")
    drv = "drivers/misc/refcnt"
    shutil.rmtree(drv, ignore_errors=True)
    os.makedirs(drv)
    kmod = os.path.join(root, "kmod")
    for src in sorted(glob.glob(f"{kmod}/*.c") + glob.glob(f"{kmod}/*.h")) + \
            [f"{kmod}/Kbuild", f"{kmod}/Kconfig"]:
        shutil.copy(src, drv)
    shutil.copy(os.path.join(root, "uapi/linux/refcnt.h"),
                "include/uapi/linux/refcnt.h")
    edit("drivers/misc/Kconfig", kconfig_with_source)
    edit("drivers/misc/Makefile", makefile_with_obj)
    shutil.copy(f"/usr/src/linux-headers-{kver}/.config", ".config")
    run(["scripts/config", "--set-str", "SYSTEM_TRUSTED_KEYS", "",
         "--set-str", "SYSTEM_REVOCATION_KEYS", "", "--module", "REFCNT"])
    run(["make", "olddefconfig"], quiet_out=True)
    with open(".config") as f:
        if not any(line.startswith("CONFIG_REFCNT=m") for line in f):
            raise Fatal(f"{INTREE_PROG}: CONFIG_REFCNT not selectable")


def intree_build() -> None:
    """modules_prepare, then the driver with W=1, its output shown and in
    ../build.log; any warning fails."""
    jobs = f"-j{os.cpu_count() or 1}"
    print("modules_prepare (a few minutes)", flush=True)
    run(["make", jobs, "modules_prepare"], quiet_out=True, quiet_err=True)
    p = subprocess.Popen(["make", jobs, "W=1", "M=drivers/misc/refcnt"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert p.stdout is not None
    fd = p.stdout.fileno()
    with open("../build.log", "wb") as log:
        for chunk in iter(lambda: os.read(fd, 65536), b""):
            log.write(chunk)
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
    if p.wait() != 0:
        raise Fatal("", p.returncode)
    with open("../build.log", encoding="utf-8", errors="replace") as f:
        warned = warnings(f.read())
    if warned:
        print("\n".join(warned), flush=True)
        raise Fatal(f"{INTREE_PROG}: warnings in the in-tree build")


def intree_check(root: str) -> int:
    """Build kmod/ in a kernel tree through its Kconfig, as a driver
    option (drivers/misc/refcnt, CONFIG_REFCNT=m), with W=1: Debian's
    linux-source-6.1 and the 6.1 config, in REFCNT_INTREE_DIR (default
    build/intree)."""
    work = os.environ.get("REFCNT_INTREE_DIR") or \
        os.path.join(root, "build/intree")
    try:
        kvers = guest_kernels(root, check=True)
        if not os.path.isfile(LINUX_SOURCE):
            raise Fatal(f"{INTREE_PROG}: no {LINUX_SOURCE} (apt-get install "
                        "linux-source-6.1)")
        for t in INTREE_TOOLS:
            if shutil.which(t) is None:
                raise Fatal(f"{INTREE_PROG}: {t} missing (apt-get install "
                            "flex bison bc libelf-dev libssl-dev)")
        intree_prepare(root, work, kvers[0] if kvers else "")
        intree_build()
    except Fatal as e:
        if str(e):
            print(e, file=sys.stderr)
        return e.status
    rc = subprocess.call(["ls", "-l", "drivers/misc/refcnt/refcnt.ko"])
    if rc == 0:
        print("ok: in-tree build through Kconfig (CONFIG_REFCNT=m)")
    return rc
