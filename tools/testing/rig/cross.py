# SPDX-License-Identifier: GPL-2.0
"""refcnt-cross arm64 (make cross-arm64): refcnt.ko cross-built against
Debian's arm64 headers of the two kernels the rig tests on amd64, and
librefcnt and the tools cross-built, all with the project's warnings
failing the build, into build/arm64/.

Nothing is installed: Debian's cross compiler (gcc-12-aarch64-linux-gnu)
conflicts with gcc-multilib, which the -m32 selftests need, and the arm64
header packages depend on gcc-12:arm64, which would take the amd64
toolchain away. Everything is fetched with apt-get download and unpacked
with dpkg-deb -x under build/arm64/: the cross toolchain and libc (amd64
packages, the machine's apt) into toolchain/, run from there; the headers
(headers/) and the tools' libraries' arm64 -dev packages (sysroot/) with
an apt state of its own (apt/) that knows only arm64 and the machine's
sources. The headers' scripts/ and tools/ link to linux-kbuild-X.Y, host
programs (fixdep, modpost): the host's amd64 package, a dependency of the
amd64 headers the rig installs, or that package unpacked beside them.

refcnt-cross arm64-guest (make cross-arm64-guest, after make
cross-arm64) adds what an arm64
guest of refcnt-vm --arch arm64 needs, fetched the same way and cached
under build/arm64/: Debian's arm64 kernel images of those releases
(kernels/, their Image and the two modules of the guest's kernel-log
console), busybox-static (busybox/), and the selftests cross-built
(selftests/).  refcnt-vm fetches a kernel or busybox itself when it is
missing."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from typing import Dict, List, Sequence

from . import debpkg, guestlibs
from .debpkg import SetupError
from .setup import Setup

PROG = "refcnt-cross"
ARCH = "arm64"
TRIPLET = "aarch64-linux-gnu"
CROSS_COMPILE = TRIPLET + "-"
EM_AARCH64 = 183

# What the tools link for arm64 (Makefile: TOOLS_LIBS, DW_LIBS, heatmaps,
# traces), with libnuma1 for the dynamic links (librefcnt.so, the dynamic
# demo workload).
# The cross compiler, binutils and libc, amd64 packages run from
# build/arm64/toolchain/ (gcc finds its parts relative to itself).
TOOLCHAIN_PKGS = ("gcc-12-aarch64-linux-gnu", "cpp-12-aarch64-linux-gnu",
                  "gcc-12-aarch64-linux-gnu-base", "gcc-12-cross-base",
                  "binutils-aarch64-linux-gnu", "libgcc-12-dev-arm64-cross",
                  "libgcc-s1-arm64-cross", "libatomic1-arm64-cross",
                  "libc6-dev-arm64-cross", "libc6-arm64-cross",
                  "linux-libc-dev-arm64-cross")
SYSROOT_PKGS = ("libnuma-dev", "libnuma1", "libpng-dev", "zlib1g-dev",
                "libdw-dev", "libelf-dev", "liblzma-dev", "libbz2-dev",
                "libzstd-dev", "libjansson-dev",
                # refcnt-exporter links libmicrohttpd.so; the linker
                # resolves its libgnutls and what that needs through
                # -rpath-link.
                "libmicrohttpd-dev", "libmicrohttpd12", "libgnutls30",
                "libp11-kit0", "libidn2-0", "libunistring2", "libtasn1-6",
                "libnettle8", "libhogweed6", "libgmp10", "libffi8")


# The guest's userland.
BUSYBOX_PKGS = ("busybox-static",)
# The guest's second console, a virtio console on virtio-mmio, where /init
# writes the full kernel log (QEMU's virt machine has one UART): modules
# in Debian's arm64 kernels, loaded by /init, virtio_mmio first.
KLOG_MODULES = ("drivers/virtio/virtio_mmio", "drivers/char/virtio_console")


def say(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


class Paths:
    def __init__(self, build: str) -> None:
        self.top = os.path.join(os.path.abspath(build), ARCH)
        self.apt = os.path.join(self.top, "apt")
        self.headers = os.path.join(self.top, "headers")
        self.sysroot = os.path.join(self.top, "sysroot")
        self.toolchain = os.path.join(self.top, "toolchain")
        self.bin = os.path.join(self.toolchain, "usr/bin")

    def kdir(self, base: str) -> str:
        """The arm64 headers of BASE (a release without its flavour)."""
        return os.path.join(self.headers, base, "usr/src",
                            f"linux-headers-{base}-{ARCH}")


def apt_opts(apt_dir: str) -> List[str]:
    """apt with a state of its own: arm64 only, the machine's sources, no
    dpkg status (nothing is installed from it), no source indexes."""
    return ["-o", f"Dir::State::Lists={apt_dir}/lists",
            "-o", f"Dir::State::status={apt_dir}/status",
            "-o", f"Dir::Cache={apt_dir}/cache",
            "-o", f"APT::Architecture={ARCH}",
            "-o", f"APT::Architectures={ARCH}",
            "-o", "Acquire::Languages=none",
            "-o", "Acquire::IndexTargets::deb-src::Sources::"
            "DefaultEnabled=false"]


def apt_update(apt_dir: str) -> None:
    for d in ("lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(apt_dir, d), exist_ok=True)
    open(os.path.join(apt_dir, "status"), "a").close()
    say("apt-get update of the arm64 package lists (build/arm64/apt)")
    if subprocess.call(["apt-get", "-q", *apt_opts(apt_dir), "update"],
                       stdout=sys.stderr) != 0:
        raise SetupError("apt-get update of the arm64 lists failed")


def stamp_name(words: Sequence[str]) -> str:
    """A stamp named after what it stands for: more packages, new stamp."""
    return f".refcnt-unpacked-{zlib.crc32(' '.join(words).encode()):08x}"


def unpack(paths: Paths, into: str, pkgs: Sequence[str],
           opts: Sequence[str], fixup: bool = False) -> None:
    """apt-get download PKGS, dpkg-deb -x each into INTO (a new copy),
    relocated when FIXUP; the stamp comes last."""
    stamp = os.path.join(into, stamp_name(pkgs))
    if os.path.exists(stamp):
        return
    shutil.rmtree(into, ignore_errors=True)
    os.makedirs(into)
    tmp = tempfile.mkdtemp(prefix=".dl.", dir=paths.top)
    try:
        debs = debpkg.download_all(tmp, pkgs, opts)
        for deb in debs:
            if subprocess.call(["dpkg-deb", "-x", deb, into]) != 0:
                raise SetupError(f"dpkg-deb -x {deb} failed")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if fixup:
        relocate(into)
    open(stamp, "w").close()
    say(f"unpacked {' '.join(pkgs)} into {into}")


def relocate(root: str) -> None:
    """Make ROOT, unpacked away from /, refer to itself: absolute symlinks
    and ld scripts (libc.so's GROUP) that name files it has."""
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            t = os.readlink(p) if os.path.islink(p) else ""
            if t.startswith("/") and not t.startswith(root) and \
                    os.path.lexists(root + t):
                os.unlink(p)
                os.symlink(root + t, p)
            elif n.endswith(".so") and not t and os.path.getsize(p) < 4096:
                relocate_script(p, root)


def relocate_script(path: str, root: str) -> None:
    with open(path, "rb") as f:
        text = f.read()
    if b"GNU ld script" not in text:
        return
    new = text.replace(b" /usr/", b" " + root.encode() + b"/usr/")
    new = new.replace(b"(/usr/", b"(" + root.encode() + b"/usr/")
    if new != text:
        with open(path, "wb") as f:
            f.write(new)


def toolchain(paths: Paths) -> None:
    """The cross toolchain in build/arm64/toolchain/, with the
    aarch64-linux-gnu-gcc that CROSS_COMPILE names."""
    unpack(paths, paths.toolchain, TOOLCHAIN_PKGS, [], fixup=True)
    gcc = os.path.join(paths.bin, CROSS_COMPILE + "gcc")
    if not os.path.lexists(gcc):
        os.symlink(CROSS_COMPILE + "gcc-12", gcc)


def kbuild_name(kdir: str) -> str:
    """linux-kbuild-X.Y, which the headers' scripts/ link to."""
    target = os.readlink(os.path.join(kdir, "scripts"))
    parts = [p for p in target.split("/") if p.startswith("linux-kbuild-")]
    if not parts:
        raise SetupError(f"{kdir}/scripts -> {target}: no linux-kbuild")
    return parts[0]


def link_kbuild(paths: Paths, base: str) -> None:
    """The headers' ../../lib/linux-kbuild-X.Y: the host's amd64 one, or
    that package unpacked beside them."""
    root = os.path.join(paths.headers, base)
    name = kbuild_name(paths.kdir(base))
    link = os.path.join(root, "usr/lib", name)
    host = os.path.join("/usr/lib", name)
    if os.path.isdir(os.path.join(host, "scripts")):
        if os.path.realpath(link) != host:
            os.makedirs(os.path.dirname(link), exist_ok=True)
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(host, link)
        return
    if not os.path.isdir(os.path.join(link, "scripts")):
        say(f"{name} is not installed: fetching the amd64 package")
        unpack(paths, os.path.join(paths.top, "kbuild", name), [name], [])
        shutil.rmtree(link, ignore_errors=True)
        shutil.copytree(os.path.join(paths.top, "kbuild", name, "usr/lib",
                                     name), link, symlinks=True)


def point_makefile(kdir: str, root: str) -> None:
    """The arm64 Makefile includes /usr/src/linux-headers-*-common's:
    the one unpacked beside it instead."""
    mk = os.path.join(kdir, "Makefile")
    with open(mk) as f:
        text = f.read()
    new = text.replace("include /usr/src/", f"include {root}/usr/src/")
    if new != text:
        with open(mk, "w") as f:
            f.write(new)


def fetch(paths: Paths, bases: Sequence[str]) -> None:
    """The headers of BASES and the sysroot, fetched once (cached under
    build/arm64/ by stamps named after the packages)."""
    todo = [b for b in bases if not os.path.exists(os.path.join(
        paths.headers, b, stamp_name(header_pkgs(b))))]
    if todo or not os.path.exists(os.path.join(
            paths.sysroot, stamp_name(SYSROOT_PKGS))):
        apt_update(paths.apt)
    opts = apt_opts(paths.apt)
    for b in bases:
        root = os.path.join(paths.headers, b)
        unpack(paths, root, header_pkgs(b), opts)
        point_makefile(paths.kdir(b), root)
        link_kbuild(paths, b)
    for old in os.listdir(paths.headers):
        if old not in bases:
            shutil.rmtree(os.path.join(paths.headers, old),
                          ignore_errors=True)
    unpack(paths, paths.sysroot, SYSROOT_PKGS, opts, fixup=True)
    toolchain(paths)


def header_pkgs(base: str) -> List[str]:
    return [f"linux-headers-{base}-{ARCH}", f"linux-headers-{base}-common"]


def make_module(root: str, paths: Paths, base: str) -> List[str]:
    return ["make", "--no-print-directory", "-C", root, "module",
            f"KVER={base}-{ARCH}", f"KDIR={paths.kdir(base)}",
            f"ARCH={ARCH}", f"CROSS_COMPILE={CROSS_COMPILE}",
            f"BUILD={paths.top}"]


def make_tools(root: str, paths: Paths) -> List[str]:
    """lib and tools as the rig builds them (static, -Werror), against the
    cross libc and the sysroot's libraries."""
    sr = paths.sysroot
    return ["make", "--no-print-directory", "-C", root, "lib", "tools",
            f"BUILD={paths.top}", f"CC={CROSS_COMPILE}gcc",
            f"AR={CROSS_COMPILE}ar", "WERROR=1",
            f"CPPFLAGS=-isystem {sr}/usr/include "
            f"-isystem {sr}/usr/include/{TRIPLET}",
            f"LDFLAGS=-L{sr}/usr/lib/{TRIPLET} "
            f"-Wl,-rpath-link={sr}/usr/lib/{TRIPLET}"]


def elf_machine(path: str) -> int:
    """e_machine of an ELF file, or -1."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF" or head[5] != 1:
        return -1
    return int.from_bytes(head[18:20], "little")


def not_arm64(files: Sequence[str]) -> List[str]:
    return [f for f in files if elf_machine(f) != EM_AARCH64]


def outputs(paths: Paths, bases: Sequence[str]) -> List[str]:
    out = [os.path.join(paths.top, f"{b}-{ARCH}", "refcnt.ko")
           for b in bases]
    out += glob.glob(os.path.join(paths.top, "lib", "librefcnt.so.*.*"))
    out += [p for p in glob.glob(os.path.join(paths.top, "tools", "*"))
            if os.path.isfile(p) and not p.endswith((".c", ".h"))]
    return sorted(out)


def toolchain_env(paths: Paths) -> Dict[str, str]:
    """PATH to the cross tools, and the loader to binutils' libbfd and
    libopcodes for arm64 (in the host's multiarch directory)."""
    libs = [d for d in glob.glob(os.path.join(paths.toolchain, "usr/lib/*"))
            if glob.glob(os.path.join(d, "libbfd-*.so"))]
    env = dict(os.environ)
    env["PATH"] = paths.bin + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        libs + [p for p in [env.get("LD_LIBRARY_PATH")] if p])
    return env


# --- the arm64 guest's pieces ------------------------------------------


def lists(paths: Paths) -> List[str]:
    """apt's options for the arm64 lists, updated first if there are
    none yet."""
    if not glob.glob(os.path.join(paths.apt, "lists", "*Packages*")):
        apt_update(paths.apt)
    return apt_opts(paths.apt)


def kernel_dir(paths: Paths, release: str) -> str:
    return os.path.join(paths.top, "kernels", release)


def image(paths: Paths, release: str) -> str:
    """RELEASE's (e.g. 6.1.0-56-arm64) Image, unpacked from Debian's
    package once, with the kernel-log console's modules that are not
    built in (decompressed: busybox's insmod reads them as they are) in
    modules/, numbered in load order."""
    kd = kernel_dir(paths, release)
    out = os.path.join(kd, f"boot/vmlinuz-{release}")
    stamp = os.path.join(kd, stamp_name([release, *KLOG_MODULES]))
    if os.path.exists(stamp) and os.path.isfile(out):
        return out
    shutil.rmtree(kd, ignore_errors=True)
    os.makedirs(kd)
    opts = lists(paths)
    tmp = tempfile.mkdtemp(prefix=".dl.", dir=paths.top)
    try:
        try:
            debs = debpkg.download_all(tmp, [f"linux-image-{release}"], opts)
        except SetupError:
            apt_update(paths.apt)
            debs = debpkg.download_all(tmp, [f"linux-image-{release}"], opts)
        # Every virtio module (a pattern that matches nothing fails tar):
        # what KLOG_MODULES names of them, the others are built in.
        mods = f"./lib/modules/{release}/kernel/drivers/*/virtio_*.ko*"
        if not extract(debs[0], kd, [f"./boot/vmlinuz-{release}", mods]):
            raise SetupError(f"{debs[0]}: no vmlinuz-{release} or no "
                             "virtio modules")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(kd, "modules"))
    for i, m in enumerate(KLOG_MODULES):
        for ko in glob.glob(os.path.join(kd, "lib/modules", release,
                                         "kernel", m + ".ko*")):
            plain_module(ko, os.path.join(kd, "modules", f"{i}-"
                                          f"{os.path.basename(m)}.ko"))
    open(stamp, "w").close()
    say(f"unpacked {out}")
    return out


def extract(deb: str, into: str, members: Sequence[str]) -> bool:
    """dpkg-deb --fsys-tarfile DEB | tar -x MEMBERS (wildcards)."""
    p = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb],
                         stdout=subprocess.PIPE)
    rc = subprocess.call(["tar", "-x", "-C", into, "--wildcards", *members],
                         stdin=p.stdout)
    p.wait()
    return rc == 0 and p.returncode == 0


def plain_module(src: str, out: str) -> None:
    """SRC (.ko, .ko.xz or .ko.zst) as a plain .ko."""
    dec = {".xz": ["xz", "-dc"], ".zst": ["zstd", "-dcq"]}.get(
        os.path.splitext(src)[1])
    if dec is None:
        shutil.copy(src, out)
        return
    with open(out, "wb") as f:
        if subprocess.call([*dec, src], stdout=f) != 0:
            raise SetupError(f"cannot decompress {src}")


def klog_modules(paths: Paths, release: str) -> List[str]:
    """The kernel-log console's modules of RELEASE (those not built in),
    in load order."""
    return sorted(glob.glob(os.path.join(kernel_dir(paths, release),
                                         "modules", "*.ko")))


def busybox(paths: Paths) -> str:
    """busybox-static for arm64, unpacked once."""
    d = os.path.join(paths.top, "busybox")
    if not os.path.exists(os.path.join(d, stamp_name(BUSYBOX_PKGS))):
        unpack(paths, d, BUSYBOX_PKGS, lists(paths))
    return os.path.join(d, "bin/busybox")


def needed(path: str) -> List[str]:
    """The DT_NEEDED names of ELF file PATH (the host's readelf reads
    arm64's)."""
    r = subprocess.run(["readelf", "-dW", path], capture_output=True,
                       text=True, errors="replace")
    return [ln.rsplit("[", 1)[1].rstrip("]") for ln in r.stdout.splitlines()
            if "(NEEDED)" in ln and "[" in ln]


def guest_libs(paths: Paths) -> List[str]:
    """refcnt-vm --file arguments for the dynamic arm64 tools
    (refcnt-exporter links libmicrohttpd): their libraries, from the
    sysroot and the cross libc, in the guest's /lib/TRIPLET/ where its
    loader looks, and the loader in /lib (its PT_INTERP)."""
    dirs = [os.path.join(paths.sysroot, "usr/lib", TRIPLET),
            os.path.join(paths.sysroot, "lib", TRIPLET),
            os.path.join(paths.toolchain, "usr", TRIPLET, "lib")]
    todo = [p for p in glob.glob(os.path.join(paths.top, "tools", "*"))
            if os.path.isfile(p) and guestlibs.is_dynamic_program(p)]
    found: Dict[str, str] = {}
    while todo:
        for name in needed(todo.pop()):
            if name in found:
                continue
            for d in dirs:
                if os.path.exists(os.path.join(d, name)):
                    found[name] = os.path.realpath(os.path.join(d, name))
                    todo.append(found[name])
                    break
    out: List[str] = []
    for name, src in sorted(found.items()):
        where = "/lib" if name.startswith("ld-linux") else f"/lib/{TRIPLET}"
        out += ["--file", f"{src}:{where}/{name}"]
    return out


def make_selftests(root: str, paths: Paths) -> List[str]:
    """The selftests as make selftests builds them (static, -Werror),
    with the cross compiler, against the arm64 librefcnt.a and the
    sysroot's libnuma.a; no -m32 build (the 32-bit ABI tests are listed
    skipped)."""
    sr = paths.sysroot
    tools = make_tools(root, paths)
    return [*tools[:tools.index("lib")], "selftests",
            *tools[tools.index("tools") + 1:],
            f"CROSS_FLAGS=-isystem {sr}/usr/include "
            f"-isystem {sr}/usr/include/{TRIPLET} -L{sr}/usr/lib/{TRIPLET}"]


def guest(root: str, build: str) -> int:
    """The guest's kernels, busybox and the selftests (the module and
    the tools are make cross-arm64's)."""
    paths = Paths(build)
    toolchain(paths)
    for b in [k.removesuffix("-amd64") for k in Setup(root).kernels()]:
        image(paths, f"{b}-{ARCH}")
    bb = busybox(paths)
    say("the selftests, static, for arm64")
    if subprocess.call(make_selftests(root, paths),
                       env=toolchain_env(paths)) != 0:
        return 1
    bins = [os.path.join(paths.top, "selftests", t) for t in
            ("counters_test", "devices_test")]
    bad = not_arm64([bb, *bins])
    if bad:
        raise SetupError(f"not arm64 or missing: {' '.join(bad)}")
    say(f"the arm64 guest's kernels, busybox and selftests in "
        f"{paths.top}")
    return 0


def run(root: str, build: str) -> int:
    t0 = time.time()
    paths = Paths(build)
    bases = [k.removesuffix("-amd64") for k in Setup(root).kernels()]
    fetch(paths, bases)
    env = toolchain_env(paths)
    for b in bases:
        say(f"refcnt.ko for {b}-{ARCH} (W=1, sparse)")
        if subprocess.call(make_module(root, paths, b), env=env) != 0:
            return 1
    say("librefcnt and the tools, static, for arm64")
    if subprocess.call(make_tools(root, paths), env=env) != 0:
        return 1
    files = outputs(paths, bases)
    bad = not_arm64(files)
    if bad or len(files) < len(bases) + 2:
        raise SetupError(f"not arm64 or missing: {' '.join(bad) or files}")
    say(f"{len(files)} arm64 files (refcnt.ko for {', '.join(bases)}, "
        f"librefcnt.so, {len(files) - len(bases) - 1} tools) in "
        f"{int(time.time() - t0)} s")
    return 0


def main(argv: Sequence[str], root: str) -> int:
    if list(argv) not in ([ARCH], [ARCH + "-guest"]):
        print(f"usage: {PROG} {ARCH}|{ARCH}-guest", file=sys.stderr)
        return 2
    build = os.environ.get("REFCNT_BUILD_DIR") or os.path.join(root, "build")
    try:
        if argv[0] == ARCH:
            return run(root, build)
        return guest(root, build)
    except (SetupError, OSError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
