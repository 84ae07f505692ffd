# SPDX-License-Identifier: GPL-2.0
"""What the rig takes out of Debian's packages without installing them:
a kernel's vmlinuz and the modules a Debian guest root needs (from its
image package: installing it would run initramfs and bootloader hooks for
a kernel the host never boots), QEMU's plugin header and PAPI's source
(from their source packages)."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from typing import Callable, List, Optional, Sequence

PROG = "refcnt-setup"


class SetupError(Exception):
    """What refcnt-setup cannot do, said in one line."""


def say(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def _check_release(ver: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9.+~-]+", ver):
        raise SetupError(f"bad kernel release string '{ver}'")


def _download(dest: str, pkgs: Sequence[str], what: str) -> Optional[str]:
    """apt-get download the first of PKGS that apt has into DEST; the
    .deb's path, or None."""
    for pkg in pkgs:
        say(f"downloading {pkg} to extract {what}")
        if subprocess.call(["apt-get", "download", "-q", pkg], cwd=dest,
                           stdout=sys.stderr) == 0:
            break
    debs = sorted(glob.glob(os.path.join(dest, "linux-image-*.deb")))
    return debs[0] if debs else None


def download_all(dest: str, pkgs: Sequence[str],
                 apt_opts: Sequence[str] = ()) -> List[str]:
    """apt-get download every one of PKGS into DEST (APT_OPTS: another
    architecture's lists, rig/cross.py); their .debs."""
    os.chmod(dest, 0o777)
    say(f"downloading {' '.join(pkgs)}")
    if subprocess.call(["apt-get", "download", "-q", *apt_opts, *pkgs],
                       cwd=dest, stdout=sys.stderr) != 0:
        raise SetupError(f"apt-get download {' '.join(pkgs)} failed (is "
                         "apt's package list current?)")
    return sorted(glob.glob(os.path.join(dest, "*.deb")))


def _extract(deb: str, into: str, members: Sequence[str]) -> bool:
    """dpkg-deb --fsys-tarfile DEB | tar -x MEMBERS into INTO."""
    os.makedirs(into, exist_ok=True)
    p = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb],
                         stdout=subprocess.PIPE)
    rc = subprocess.call(["tar", "-x", "-C", into, *members], stdin=p.stdout)
    p.wait()
    return rc == 0 and p.returncode == 0


def _with_image(kdir: str, ver: str, what: str,
                use: Callable[[str], bool]) -> None:
    """Download VER's image package into a temporary directory of KDIR
    (apt-get download runs as _apt where it can: it must write there),
    give it to USE, remove it."""
    _check_release(ver)
    os.makedirs(kdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".dl.", dir=kdir)
    try:
        os.chmod(tmp, 0o777)
        deb = _download(tmp, [f"linux-image-{ver}",
                              f"linux-image-{ver}-unsigned"], what)
        if deb is None:
            raise SetupError(
                f"could not download linux-image-{ver} (or -unsigned): is "
                "apt's package list current? (run 'tools/testing/"
                "refcnt-setup deps' as root)")
        if not use(deb):
            raise SetupError(f"{deb} lacks {what} of {ver}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def vmlinuz_path(kdir: str, ver: str) -> Optional[str]:
    for p in (f"/boot/vmlinuz-{ver}",
              os.path.join(kdir, ver, f"boot/vmlinuz-{ver}")):
        if os.access(p, os.R_OK):
            return p
    return None


def vmlinuz(kdir: str, ver: str) -> str:
    p = vmlinuz_path(kdir, ver)
    if p is None:
        _with_image(kdir, ver, "its vmlinuz", lambda deb: _extract(
            deb, os.path.join(kdir, ver), [f"./boot/vmlinuz-{ver}"]))
        say(f"extracted {kdir}/{ver}/boot/vmlinuz-{ver}")
        p = vmlinuz_path(kdir, ver)
    assert p is not None
    return p


def modules_path(kdir: str, ver: str) -> Optional[str]:
    for p in (f"/lib/modules/{ver}",
              os.path.join(kdir, ver, "lib/modules", ver)):
        if os.path.isdir(os.path.join(p, "kernel/fs")):
            return p
    return None


# Only the parts a guest root needs (about 60 MB, not the whole 400).
MODULE_PARTS = ("kernel/fs", "kernel/drivers/block", "kernel/drivers/virtio",
                "kernel/crypto", "kernel/lib", "kernel/net/9p",
                "modules.builtin", "modules.order")


def modules(kdir: str, ver: str) -> str:
    p = modules_path(kdir, ver)
    if p is None:
        m = f"./lib/modules/{ver}/"

        def take(deb: str) -> bool:
            if _extract(deb, os.path.join(kdir, ver),
                        [m + part for part in MODULE_PARTS]):
                return True
            shutil.rmtree(os.path.join(kdir, ver, "lib"), ignore_errors=True)
            return False
        _with_image(kdir, ver, "its modules", take)
        say("extracted the modules refcnt-vm --debian needs into "
            f"{kdir}/{ver}/lib/modules/{ver}")
        p = modules_path(kdir, ver)
    assert p is not None
    return p


class Sources:
    """What fetching a source package needs of apt: a deb-src entry
    (ensure) and, when the lists are stale, an update (False if it
    cannot run)."""

    def __init__(self, ensure: Callable[[], None],
                 update: Callable[[], bool]) -> None:
        self.ensure = ensure
        self.update = update


def source_package(dest: str, pkg: str, ver: str, apt: Sources) -> str:
    """apt-get source --download-only PKG=VER into a new temporary
    directory of DEST, once more after an update when the lists are
    stale; the directory."""
    apt.ensure()
    os.makedirs(dest, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".src.", dir=dest)
    os.chmod(tmp, 0o777)
    say(f"downloading the {pkg} {ver} source package")
    cmd = ["apt-get", "source", "-q", "--download-only", f"{pkg}={ver}"]
    for attempt in (0, 1):
        if subprocess.call(cmd, cwd=tmp, stdout=sys.stderr) == 0:
            return tmp
        if attempt or not apt.update():
            break
    shutil.rmtree(tmp, ignore_errors=True)
    raise SetupError(f"apt-get source {pkg}={ver} failed (is the deb-src "
                     "list current? 'apt-get update' as root)")


def installed_source_version(pkg: str) -> Optional[str]:
    r = subprocess.run(["dpkg-query", "-W", "-f=${source:Version}", pkg],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() \
        else None


def qemu_plugin_header(dest: str, apt: Sources) -> None:
    """Take include/qemu/qemu-plugin.h out of the installed QEMU's
    source package into DEST; delete the rest."""
    out = os.path.join(dest, "qemu-plugin.h")
    if os.path.isfile(out) and os.path.getsize(out) > 0:
        return
    ver = installed_source_version("qemu-system-x86")
    if ver is None:
        raise SetupError("qemu-system-x86 is not installed (run "
                         "'refcnt-setup deps' as root)")
    tmp = source_package(dest, "qemu", ver, apt)
    try:
        origs = glob.glob(os.path.join(tmp, "qemu_*.orig.tar.*"))
        if not origs:
            raise SetupError("the qemu source package has no orig tarball")
        with tarfile.open(origs[0]) as tar:
            member = next((m for m in tar.getmembers() if m.name.endswith(
                "include/qemu/qemu-plugin.h")), None)
            f = tar.extractfile(member) if member is not None else None
            if f is None:
                raise SetupError(f"{origs[0]} has no "
                                 "include/qemu/qemu-plugin.h")
            with open(out + ".tmp", "wb") as o:
                shutil.copyfileobj(f, o)
        os.replace(out + ".tmp", out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    say(f"qemu-plugin.h of qemu {ver}: {out}")


def papi_source(dest: str, apt: Sources) -> str:
    """Debian's PAPI source, unpacked with its patches into
    DEST/papi-VERSION: the version of libpapi-dev, installed or candidate,
    so the PAPI built matches what a Debian user has."""
    ver = installed_source_version("libpapi-dev") or _candidate("libpapi-dev")
    if not ver:
        raise SetupError("apt knows no libpapi-dev (run 'refcnt-setup deps' "
                         "as root)")
    src = os.path.join(dest, "papi-" + ver.split("-")[0])
    if os.path.isfile(os.path.join(src, ".refcnt-unpacked")):
        return src
    if shutil.which("dpkg-source") is None:
        raise SetupError("dpkg-source is missing: install dpkg-dev "
                         "('refcnt-setup deps' as root)")
    tmp = source_package(dest, "papi", ver, apt)
    try:
        shutil.rmtree(src, ignore_errors=True)
        dscs: List[str] = glob.glob(os.path.join(tmp, "papi_*.dsc"))
        if not dscs or subprocess.call(
                ["dpkg-source", "-q", "-x", dscs[0], src], cwd=tmp,
                stdout=sys.stderr) != 0:
            shutil.rmtree(src, ignore_errors=True)
            raise SetupError(f"could not unpack the papi {ver} source")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    open(os.path.join(src, ".refcnt-unpacked"), "w").close()
    say(f"papi {ver} source: {src}")
    return src


def _candidate(pkg: str) -> Optional[str]:
    r = subprocess.run(["apt-cache", "policy", pkg], capture_output=True,
                       text=True)
    for line in r.stdout.split("\n"):
        w = line.split()
        if w[:1] == ["Candidate:"] and len(w) > 1 and w[1] != "(none)":
            return w[1]
    return None
