# SPDX-License-Identifier: GPL-2.0
"""refcnt-debian-root: the Debian bookworm root file system that
'refcnt-vm --debian' boots on, built once with debootstrap and cached.

The busybox guest cannot run third-party software such as pmcd or
promtool; this root can.  It is built into build/debian/ from the mirror
the host's own apt sources use, with the packages asked for, and turned
into an ext4 image the guest boots from (read-write through a QEMU
snapshot, so the cache is never changed by a run)."""
from __future__ import annotations

import fcntl
import glob
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from . import guestout as G
from .apt import stanzas

PROG = "refcnt-debian-root"
SUITE = "bookworm"
# Bump when the recipe below changes: it is part of the cache key.
RECIPE = 2
# Always in the root: kmod (insmod/rmmod/lsmod as the tests know them),
# iproute2 (the loopback interface), the libraries the build's programs
# link to dynamically (libnuma1; libpng16-16 for the heatmap tools;
# libmicrohttpd12 for refcnt-exporter, which cannot link it statically).
BASE_PKGS = "kmod iproute2 libnuma1 libpng16-16 zlib1g libmicrohttpd12"
# systemd and udev last: some maintainer scripts (pcp's) call systemctl
# whenever it exists, and it fails in a chroot.
LATE_PKGS = ("systemd", "systemd-sysv", "udev")
PKG_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]+")

USAGE = """\
Usage: {prog} [--pkgs "PKG ..."] [--print-key] [--cached] [--force]

Print the path of an ext4 image of a Debian {suite} root (debootstrap
--variant=minbase, plus {base} and the PKGs asked for),
building it first if the cached one was built for another package list.

  --pkgs LIST   extra Debian packages, space- or comma-separated
  --print-key   print the cache key of LIST and exit
  --cached      exit 0 if the cached image is the one for LIST, else 1;
                build nothing
  --force       rebuild even if the cache matches

Cache: {deb}/N/root.img and root.key, N a checksum of the key (the
sorted package list and this recipe's version): each package list has
its image, and the {keep} most recently used are kept
(REFCNT_DEBIAN_ROOTS).  Building needs root (debootstrap,
chroot) and the host's apt mirror; a build takes 1 to 8 minutes.
"""


def _crc_table() -> List[int]:
    table = []
    for i in range(256):
        c = i << 24
        for _ in range(8):
            c = ((c << 1) ^ 0x04C11DB7) if c & 0x80000000 else c << 1
        table.append(c & 0xFFFFFFFF)
    return table


_CRC = _crc_table()


def cksum(data: bytes) -> int:
    """POSIX cksum's CRC of DATA (the cache's directory names)."""
    crc = 0

    def feed(b: int) -> None:
        nonlocal crc
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC[((crc >> 24) ^ b) & 0xFF]
    for b in data:
        feed(b)
    n = len(data)
    while n:
        feed(n & 0xFF)
        n >>= 8
    return ~crc & 0xFFFFFFFF


def package_list(extra: Sequence[str]) -> str:
    """The sorted, unique list: the same set gives the same key in any
    order.  ValueError for a word that is no Debian package name."""
    words = BASE_PKGS.split() + [w for e in extra
                                 for w in e.replace(",", " ").split()]
    for w in words:
        if not PKG_NAME.fullmatch(w):
            raise ValueError(f"--pkgs: '{w}' is not a Debian package name")
    return " ".join(sorted(set(words), key=lambda w: w.encode()))


def cache_key(pkgs: str) -> str:
    return f"{SUITE} recipe={RECIPE} pkgs={pkgs}"


def _field(lines: Sequence[str], name: str) -> Optional[str]:
    """A deb822 field's value (case as written), None if absent."""
    for ln in lines:
        if ln.startswith(name + ":"):
            return ln.split(":", 1)[1].strip()
    return None


def _stanza_on(lines: Sequence[str]) -> bool:
    """An enabled stanza of type deb."""
    en = next((ln for ln in lines if re.match(r"[Ee]nabled:", ln)), "")
    return "deb" in (_field(lines, "Types") or "").split() and \
        not re.match(r"[Ee]nabled:[ \t]*[Nn]o", en)


def _one_line(line: str) -> Optional[List[str]]:
    """A one-line 'deb' entry's URI, suite and the rest; None for any
    other line."""
    w = line.split()
    if not w or w[0] != "deb":
        return None
    i = 1
    if i < len(w) and w[i].startswith("["):
        while not w[i].endswith("]") and i < len(w) - 1:
            i += 1
        i += 1
    return w[i:]


def _deb822_files(etc: str) -> List[str]:
    return sorted(glob.glob(os.path.join(etc, "sources.list.d/*.sources")))


def _list_files(etc: str) -> List[str]:
    return [os.path.join(etc, "sources.list")] + \
        sorted(glob.glob(os.path.join(etc, "sources.list.d/*.list")))


def host_mirror(etc: str, suite: str = SUITE) -> Optional[str]:
    """The URI of the host's first enabled 'deb' source for SUITE,
    deb822 or one-line.  Never a name of our own: the machine's mirror
    is the one that works."""
    for f in _deb822_files(etc):
        for s in stanzas(G.read(f)):
            uris = (_field(s, "URIs") or "").split()
            if _stanza_on(s) and uris and \
                    suite in (_field(s, "Suites") or "").split():
                return uris[0]
    for f in _list_files(etc):
        for ln in G.read(f).split("\n"):
            w = _one_line(ln)
            if w and len(w) > 1 and w[1] == suite:
                return w[0]
    return None


def _of_suite(s: str, suite: str) -> bool:
    return s == suite or s.startswith(suite + "-")


def host_sources(etc: str, suite: str = SUITE) -> List[str]:
    """The host's enabled 'deb' entries for SUITE and its -updates,
    -security and -backports suites, as sources.list lines for the root
    (a guest kernel's headers come from bookworm-security or
    bookworm-backports), each once."""
    out: List[str] = []
    for f in _deb822_files(etc):
        for s in stanzas(G.read(f)):
            uris = (_field(s, "URIs") or "").split()
            if not (_stanza_on(s) and uris):
                continue
            sb = _field(s, "Signed-By")
            comps = _field(s, "Components") or ""
            opt = f"[signed-by={sb}] " if sb else ""
            out += [f"deb {opt}{uris[0]} {x} {comps}"
                    for x in (_field(s, "Suites") or "").split()
                    if _of_suite(x, suite)]
    for f in _list_files(etc):
        for ln in G.read(f).split("\n"):
            w = _one_line(ln)
            if w and len(w) > 1 and _of_suite(w[1], suite):
                out.append(ln)
    return list(dict.fromkeys(out))


def split_late(pkgs: str) -> List[List[str]]:
    """The packages installed first, and those installed after them."""
    words = pkgs.split()
    return [[p for p in words if p not in LATE_PKGS],
            [p for p in words if p in LATE_PKGS]]


def image_mb(tree_mb: int) -> int:
    """The ext4 image's size for a tree of TREE_MB: a quarter more and
    256 MiB of room."""
    return tree_mb + tree_mb // 4 + 256


@dataclass
class Root:
    deb: str
    pkgs: str
    apt_etc: str = "/etc/apt"
    keep: int = 3
    force: bool = False
    prog: str = PROG
    env: Dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return cache_key(self.pkgs)

    @property
    def img(self) -> str:
        return os.path.join(self.deb, str(cksum(self.key.encode())))

    def cached(self) -> bool:
        img = os.path.join(self.img, "root.img")
        return not self.force and os.path.isfile(img) and \
            os.path.getsize(img) > 0 and \
            G.read(os.path.join(self.img, "root.key")).rstrip("\n") == \
            self.key

    def say(self, text: str) -> None:
        G.say(self.prog, text)

    def log(self) -> str:
        return os.path.join(self.img, "debootstrap.log")

    def run_logged(self, cmd: Sequence[str], what: str,
                   append: bool = True) -> None:
        with open(self.log(), "ab" if append else "wb") as out:
            if subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL,
                               env={**os.environ, **self.env}) != 0:
                raise G.Die(f"{what}; see {self.log()}")

    def chroot_apt(self, tree: str, *args: str) -> List[str]:
        """apt inside the chroot: no daemon may start (policy-rc.d), no
        prompt."""
        proxy = [f"http_proxy={self.env['http_proxy']}"] \
            if "http_proxy" in self.env else []
        return ["chroot", tree, "env", "DEBIAN_FRONTEND=noninteractive",
                *proxy, "apt-get", "-q", "-o", "Dpkg::Use-Pty=0", *args]

    def preflight(self, again: str) -> str:
        if os.geteuid() != 0:
            raise G.Die("building the Debian root needs root (debootstrap, "
                        f"chroot); run once as root: {again}")
        if not shutil.which("debootstrap"):
            raise G.Die("debootstrap not found (run 'tools/testing/"
                        "refcnt-setup deps' as root)")
        if not shutil.which("mke2fs"):
            raise G.Die("mke2fs not found (e2fsprogs)")
        mirror = host_mirror(self.apt_etc)
        if mirror is None:
            raise G.Die(f"no enabled 'deb' entry for {SUITE} in "
                        f"{self.apt_etc}/sources.list or sources.list.d/: "
                        "no mirror to debootstrap from")
        r = subprocess.run(["apt-config", "shell", "P",
                            "Acquire::http::Proxy"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        m = re.search(r"^P='(.*)'$", r.stdout, re.MULTILINE)
        if m and m.group(1):
            self.env["http_proxy"] = m.group(1)
        return mirror

    def build(self, again: str) -> None:
        t0 = time.time()
        mirror = self.preflight(again)
        self.say(f"building the Debian {SUITE} root ({self.pkgs}) from the "
                 "host's mirror")
        os.makedirs(self.img, exist_ok=True)
        tree, tmp = os.path.join(self.img, "root"), \
            os.path.join(self.img, "root.img.tmp")
        shutil.rmtree(tree, ignore_errors=True)
        G.rm(tmp)
        ok, mb = False, 0
        try:
            self.run_logged(["debootstrap", "--variant=minbase", SUITE, tree,
                             mirror], "debootstrap failed", append=False)
            self.say(f"debootstrap done ({int(time.time() - t0)}s); "
                     "installing packages")
            self.install(tree, mirror)
            guest_config(tree)
            du = subprocess.run(["du", "-sm", tree], stdout=subprocess.PIPE,
                                text=True, check=True)
            mb = image_mb(int(du.stdout.split()[0]))
            # No metadata_csum: ext4 would need the crc32c crypto module.
            self.run_logged(["mke2fs", "-q", "-t", "ext4", "-O",
                             "^metadata_csum", "-L", "refcnt-root", "-d",
                             tree, tmp, f"{mb}M"], "mke2fs -d failed")
            os.rename(tmp, os.path.join(self.img, "root.img"))
            with open(os.path.join(self.img, "root.key"), "w") as f:
                f.write(self.key + "\n")
            ok = True
        finally:
            subprocess.call(["umount", os.path.join(tree, "proc")],
                            stderr=subprocess.DEVNULL)
            shutil.rmtree(tree, ignore_errors=True)
            if not ok:
                G.rm(tmp)
        self.say(f"Debian root ready in {int(time.time() - t0)}s: "
                 f"{self.img}/root.img ({mb}M)")

    def install(self, tree: str, mirror: str) -> None:
        with open(os.path.join(tree, "etc/apt/sources.list"), "w") as f:
            f.write("".join(ln + "\n" for ln in host_sources(self.apt_etc))
                    or f"deb {mirror} {SUITE} main\n")
        policy = os.path.join(tree, "usr/sbin/policy-rc.d")
        with open(policy, "w") as f:
            f.write("#!/bin/sh\nexit 101\n")
        os.chmod(policy, 0o755)
        try:
            shutil.copy("/etc/resolv.conf",
                        os.path.join(tree, "etc/resolv.conf"))
        except OSError:
            pass
        if subprocess.call(["mount", "-t", "proc", "proc",
                            os.path.join(tree, "proc")]) != 0:
            raise G.Die(f"cannot mount proc in {tree}")
        early, late = split_late(self.pkgs)
        what = f"apt-get install {self.pkgs} in the chroot failed"
        self.run_logged(self.chroot_apt(tree, "update"), what)
        self.run_logged(self.chroot_apt(tree, "install", "-y",
                                        "--no-install-recommends", *early),
                        what)
        if late:
            self.run_logged(self.chroot_apt(tree, "install", "-y",
                                            "--no-install-recommends", *late),
                            what)
        self.run_logged(self.chroot_apt(tree, "clean"), what)
        subprocess.call(["umount", os.path.join(tree, "proc")])

    def evict(self) -> None:
        """Keep the KEEP most recently used images (each key has its own:
        the fleet tests' and the packages' tests each boot theirs)."""
        keys = sorted(glob.glob(os.path.join(self.deb, "*/root.key")),
                      key=os.path.getmtime, reverse=True)
        for k in keys[self.keep:]:
            d = os.path.dirname(k)
            self.say(f"dropping the least recently used image {d}")
            shutil.rmtree(d, ignore_errors=True)

    def get(self, again: str) -> str:
        """The image, built unless cached; under the cache's lock."""
        os.makedirs(self.deb, exist_ok=True)
        with open(os.path.join(self.deb, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            # The single image of the layout before one per key.
            G.rm(os.path.join(self.deb, "root.img"),
                 os.path.join(self.deb, "root.key"))
            if self.cached():
                os.utime(os.path.join(self.img, "root.key"))
            else:
                self.build(again)
                self.evict()
        return os.path.join(self.img, "root.img")


def guest_config(tree: str) -> None:
    """What the guest needs that a container-less boot does not get from
    debootstrap: services may start again, names resolve without a
    network."""
    G.rm(os.path.join(tree, "usr/sbin/policy-rc.d"))
    for p in glob.glob(os.path.join(tree, "var/lib/apt/lists/*")) + \
            glob.glob(os.path.join(tree, "var/cache/apt/*.bin")):
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            G.rm(p)
    files = {"etc/resolv.conf": "", "etc/hostname": "refcnt-vm\n",
             "etc/hosts": "127.0.0.1\tlocalhost refcnt-vm\n"
                          "::1\tlocalhost ip6-localhost\n"}
    for name, text in files.items():
        path = os.path.join(tree, name)
        G.rm(path)
        with open(path, "w") as f:
            f.write(text)
    os.makedirs(os.path.join(tree, "refcnt"), exist_ok=True)


def main(argv: List[str]) -> int:
    extra: List[str] = []
    flags = {"--print-key": False, "--cached": False, "--force": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--pkgs":
            if i + 1 >= len(argv):
                raise G.Usage("--pkgs needs a list")
            extra.append(argv[i + 1])
            i += 1
        elif a in flags:
            flags[a] = True
        elif a in ("-h", "--help"):
            deb = os.path.join(G.build_dir(), "debian")
            sys.stdout.write(USAGE.format(
                prog=PROG, suite=SUITE, base=BASE_PKGS, deb=deb,
                keep=os.environ.get("REFCNT_DEBIAN_ROOTS") or "3"))
            return 0
        else:
            raise G.Usage(f"unknown argument '{a}' (see --help)")
        i += 1
    try:
        pkgs = package_list(extra)
    except ValueError as e:
        raise G.Die(str(e))
    r = Root(deb=os.path.join(G.build_dir(), "debian"), pkgs=pkgs,
             apt_etc=os.environ.get("REFCNT_APT_ETC") or "/etc/apt",
             keep=int(os.environ.get("REFCNT_DEBIAN_ROOTS") or "3"),
             force=flags["--force"])
    if flags["--print-key"]:
        print(r.key)
        return 0
    if flags["--cached"]:
        return 0 if r.cached() else 1
    again = sys.argv[0] + (f" --pkgs '{pkgs}'" if extra else "")
    print(r.get(again))
    return 0
