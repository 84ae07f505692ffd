# SPDX-License-Identifier: GPL-2.0
"""deb-check: the Debian packages' tests (make deb-check; make check runs
its host part).  TAP on stdout; logs in build/logs/deb-*.log.  The guest
side, deb/deb-guest, stays shell; the clean chroot build is
deb/deb-chroot."""
from __future__ import annotations

import difflib
import glob
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import IO, Callable, List, Optional, Sequence

from . import guestout as G
from .tapout import Writer

PROG = "deb-check"
PKGS = ("refcnt-dkms librefcnt1 librefcnt-dev refcnt-tools refcntd "
        "pcp-pmda-refcnt prometheus-refcnt-exporter").split()
# pcp's daemons the guest does not start at boot: the test starts pmcd
# itself, with fewer agents (the default ones take minutes under TCG).
MASKS = "pmcd.service pmlogger.service pmie.service pmproxy.service".split()
HERE = G.tool("deb")
SKIPPED = 77

USAGE = """\
Usage: {prog} [--kernel VER] [--host-kernel VER] [--no-build] [--no-host]
             [--no-chroot] [--no-guest] [--timeout SECS] [-v]

The packages of debian/, TAP on stdout:
  1. make deb: dpkg-buildpackage -us -uc into build/deb/
  2. lintian -I -E --pedantic on the .changes (source and every binary
     package): no tag but the overridden ones, each with its reason in
     debian/*lintian-overrides
  3. debian/librefcnt1.symbols lists exactly lib/librefcnt.map's symbols,
     each at the version of its node (the build checks it against the
     library itself: DPKG_GENSYMBOLS_CHECK_LEVEL=4)
     and no package holds the test rig's modules (refcnt_test, refcnt_hub)
  3b. the packages built as Debian builds them (tools/testing/deb/deb-chroot):
     dpkg-buildpackage -b in a debootstrapped bookworm chroot with only
     build-essential and the Build-Depends, as an unprivileged user
     without a network; the build log shows every compile and link line
     with dpkg-buildflags' hardening flags. The chroot is cached under
     build/deb-chroot/ by debian/control's hash; skipped (exit 77 of
     deb-chroot) when not root
  4. DKMS on the host builds refcnt-dkms's module for the host kernel VER
     (default: the second of refcnt-setup kernels), in a DKMS tree of its
     own (nothing is installed on the host), and skips (exit 77) a kernel
     without CONFIG_NUMA (BUILD_EXCLUSIVE_CONFIG)
  5. in the Debian guest with systemd (refcnt-vm --debian-systemd, on
     --kernel, default the first kernel, with its headers, dkms and pcp):
     tools/testing/deb/deb-guest installs the packages with apt-get,
     DKMS builds the module there, and checks the devices, the group,
     refcntd, the exporter, the PMDA, pkg-config, the autopkgtest, and
     that remove and purge leave nothing behind
Options:
  --kernel VER       the guest's kernel
  --host-kernel VER  the kernel of step 4
  --no-build         use the packages already in build/deb/
  --no-host          skip steps 2 to 4
  --no-chroot        skip step 3b
  --no-guest         steps 1 to 4 only
  --timeout SECS     the guest's time limit (default 1800)
  -v, --verbose      stream the guest's console

Cost on a 2-core machine: steps 1 to 4 about 105 s of CPU in all (make
deb most of it, then lintian and the DKMS build); step 3b about 2 min
with the chroot cached, 5 min more to build it (debootstrap about 3 min,
the Build-Depends 2; make check starts that in the background); step 5 about 40 min,
half of it DKMS building the module in the guest under TCG (make check
runs --no-guest, make check-long all). The first run builds the guest's Debian root
(tools/testing/refcnt-debian-root, root needed). Exit status 0 iff every
test passed; 77 (nothing run) when not root and the root is not built.
"""


def changelog_version(text: str) -> str:
    m = re.match(r"[^(\n]*\(([^)]*)\)", text)
    return m.group(1) if m else ""


def _strip_comments(text: str) -> List[str]:
    """The map without its comments: one-line ones cut out, then the
    lines from one with "/*" to the next with "*/" dropped."""
    out, skip = [], False
    for ln in text.split("\n"):
        ln = re.sub(r"/\*.*\*/", "", ln)
        if skip:
            skip = "*/" not in ln
            continue
        if "/*" in ln:
            skip = True
            continue
        out.append(ln)
    return out


def map_symbols(text: str) -> List[str]:
    """The symbols file's lines as lib/librefcnt.map makes them: each
    node's name and symbols at the library version the node is named
    after, sorted."""
    out, node, ver, glob_ = [], "", "", False
    for ln in _strip_comments(text):
        if re.match(r"LIBREFCNT_[0-9.]+ *\{", ln):
            node = ln.split()[0]
            ver = node[len("LIBREFCNT_"):]
            out.append(f" {node}@{node} {ver}")
            glob_ = False
        elif "global:" in ln:
            glob_ = True
        elif "local:" in ln:
            glob_ = False
        elif glob_ and re.match(r"[ \t]*refcnt_[a-z_0-9]+;", ln):
            s = ln.split()[0]
            out.append(f" {s[:-1] if s.endswith(';') else s}@{node} {ver}")
    return sorted(out, key=lambda s: s.encode())


def depends(fields: Sequence[str], own: Sequence[str]) -> List[str]:
    """What the packages' Depends fields name: the first of each
    alternative, without versions, the packages themselves left out."""
    out = set()
    for f in fields:
        for d in f.split(","):
            d = re.sub(r"\s", "", re.sub(r"\(.*\)", "", d.split("|")[0]))
            if d and d not in own:
                out.add(d)
    return sorted(out, key=lambda s: s.encode())


def guest_tap(log: str, base: int) -> List[str]:
    """The guest's TAP out of its log, numbered after the host's BASE
    results (a renumbered line's fields joined by one space, as awk
    rebuilt them)."""
    out = []
    for ln in log.split("\n"):
        if ln.startswith("===== refcnt-vm: guest dmesg"):
            break
        if not re.match(r"(ok|not ok|#|    )", ln) or \
                ln.startswith("1..") or ln.startswith("# live: "):
            continue
        f = ln.split()
        i = 1 if f[0] == "ok" else 2 if f[:2] == ["not", "ok"] else 0
        if i and len(f) > i and re.match(r"[0-9]+", f[i]):
            m = re.match(r"[0-9]+", f[i])
            assert m is not None
            f[i] = str(int(m.group(0)) + base)
            ln = " ".join(f)
        out.append(ln)
    return out


def tail(text: str, n: int) -> str:
    return "\n".join(text.rstrip("\n").split("\n")[-n:]) if text else ""


def debs(out: str, pkg: str, ver: str) -> List[str]:
    return sorted(glob.glob(os.path.join(out, f"{pkg}_{ver}_*.deb")))


@dataclass
class Config:
    kernel: str
    host_kernel: str
    ver: str
    build: bool = True
    host: bool = True
    chroot: bool = True
    guest: bool = True
    timeout: int = 1800
    verbose: bool = False

    @property
    def root_pkgs(self) -> str:
        return (f"dkms linux-headers-{self.kernel} pcp pkg-config "
                "libnuma-dev libpng16-16 libc6-dev")


def vm_cmd(c: Config, root_pkgs: str, logs: str, stage: str) -> List[str]:
    """refcnt-vm's command line for deb-guest.  --no-debug: slub_debug
    and page poisoning cost every allocation of the compiler DKMS runs;
    the module's own checks run elsewhere."""
    args = ["--debian-systemd", "--debian-pkgs", root_pkgs, "--kernel",
            c.kernel, "--topology", "four", "--no-debug", "--timeout",
            str(c.timeout), "--log", f"{logs}/deb-guest.log",
            "--file", f"{HERE}/deb-guest:/refcnt/deb-guest",
            "--file", f"{G.ROOT}/debian:/refcnt/src/debian",
            "--file", f"{stage}:/refcnt/debs"]
    for m in MASKS:
        args += ["--mask", m]
    if not c.verbose:
        args.append("--quiet")
    return [G.tool("refcnt-vm"), *args, "--", "/refcnt/deb-guest"]


Check = Callable[[IO[str]], bool]


class DebCheck:
    def __init__(self, c: Config, build: str, tap: Writer) -> None:
        self.c = c
        self.logs = os.path.join(build, "logs")
        self.out = os.path.join(build, "deb")
        self.t = tap

    # --- host ----------------------------------------------------------

    def step(self, name: str, desc: str, check: Check) -> bool:
        """One test, its output in build/logs/deb-NAME.log, its tail as
        diagnostics when it fails."""
        t0, log = time.time(), f"{self.logs}/deb-{name}.log"
        with open(log, "w") as f:
            ok = check(f)
        desc += f" ({int(time.time() - t0)}s)"
        if ok:
            self.t.ok(desc)
        else:
            self.t.notok(desc)
            self.t.diag(tail(G.read(log), 30))
        return ok

    def run(self, cmd: Sequence[str], log: IO[str],
            env: Optional[dict[str, str]] = None) -> int:
        log.flush()
        return subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL,
                               env=None if env is None else
                               {**os.environ, **env})

    def make_deb(self, log: IO[str]) -> bool:
        return self.run(["make", "-C", G.ROOT, "--no-print-directory", "deb"],
                        log) == 0

    def the_deb(self, pkg: str) -> Optional[str]:
        found = debs(self.out, pkg, self.c.ver)
        return found[0] if found else None

    def debs_built(self, log: IO[str]) -> bool:
        for p in PKGS:
            found = debs(self.out, p, self.c.ver)
            if not found:
                return False
            log.write("".join(f + "\n" for f in found))
        changes = glob.glob(f"{self.out}/refcnt_{self.c.ver}_*.changes")
        log.write("".join(f + "\n" for f in sorted(changes)))
        return bool(changes)

    def lintian_clean(self, log: IO[str]) -> bool:
        """Tags lintian prints (none: the rest are overridden, each with a
        reason)."""
        changes = sorted(glob.glob(
            f"{self.out}/refcnt_{self.c.ver}_*.changes"))
        if not changes:
            return False
        r = subprocess.run(["lintian", "-I", "-E", "--pedantic", "--fail-on",
                            "error,warning,info,pedantic,experimental",
                            *changes], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           errors="replace")
        tags = "".join(ln + "\n" for ln in r.stdout.splitlines()
                       if not ln.startswith("running with root privileges"))
        log.write(tags)
        with open(f"{self.logs}/deb-lintian.out", "w") as f:
            f.write(tags)
        return r.returncode == 0 and not tags

    def symbols_match_map(self, log: IO[str]) -> bool:
        want = map_symbols(G.read(f"{G.ROOT}/lib/librefcnt.map"))
        sym = G.read(f"{G.ROOT}/debian/librefcnt1.symbols").split("\n")
        have = sorted((ln for ln in sym if ln.startswith(" ")),
                      key=lambda s: s.encode())
        if want != have:
            log.write("".join(ln + "\n" for ln in difflib.unified_diff(
                want, have, "want", "debian/librefcnt1.symbols",
                lineterm="")))
            return False
        return "* Build-Depends-Package: librefcnt-dev" in sym[:2]

    def no_test_modules(self, log: IO[str]) -> bool:
        """The test rig's modules (tools/testing/kmod/: refcnt_test.ko's
        hooks, refcnt_hub.ko) stay out of what users install: no file of
        them in any package, and the DKMS package's dkms.conf builds
        refcnt.ko alone."""
        ok = True
        for p in PKGS:
            deb = self.the_deb(p)
            if deb is None:
                return False
            r = subprocess.run(["dpkg-deb", "-c", deb],
                               stdout=subprocess.PIPE, text=True)
            bad = [f[5] for f in (ln.split() for ln in r.stdout.split("\n"))
                   if len(f) > 5 and
                   re.search(r"refcnt_(test|hub)|tools/testing", f[5])]
            if bad:
                log.write("".join(b + "\n" for b in bad) +
                          f"{p} holds the test rig's files\n")
                ok = False
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile",
                                f"{self.out}/refcnt-dkms_{self.c.ver}_all.deb"],
                               stdout=subprocess.PIPE)
        r = subprocess.run(["tar", "-xO",
                            f"./usr/src/refcnt-{self.c.ver}/dkms.conf"],
                           stdin=tar.stdout, stdout=subprocess.PIPE, text=True)
        if tar.wait() != 0 or r.returncode != 0:
            return False
        names = [ln for ln in r.stdout.split("\n")
                 if ln.startswith("BUILT_MODULE_NAME")]
        log.write("".join(n + "\n" for n in names))
        return ok and names == ['BUILT_MODULE_NAME[0]="refcnt"']

    def dkms_private(self, d: str, args: Sequence[str], log: IO[str]) -> int:
        """DKMS with trees of its own, and its own signing key: nothing of
        the host's."""
        return self.run(["dkms", *args, "--sourcetree", f"{d}/root/usr/src",
                         "--dkmstree", f"{d}/tree", "--installtree",
                         f"{d}/inst"], log,
                        {"mok_signing_key": f"{d}/mok.key",
                         "mok_certificate": f"{d}/mok.pub"})

    def dkms_tree(self) -> Optional[str]:
        d = tempfile.mkdtemp()
        for sub in ("root", "tree", "inst", "kernel"):
            os.makedirs(f"{d}/{sub}")
        if subprocess.call(["dpkg-deb", "-x",
                            f"{self.out}/refcnt-dkms_{self.c.ver}_all.deb",
                            f"{d}/root"]) != 0:
            shutil.rmtree(d, ignore_errors=True)
            return None
        return d

    def dkms_host_build(self, log: IO[str]) -> bool:
        if not shutil.which("dkms"):
            log.write("dkms is not installed (tools/testing/refcnt-setup "
                      "deps)\n")
            return False
        d = self.dkms_tree()
        if d is None:
            return False
        hk, ok = self.c.host_kernel, False
        try:
            if self.dkms_private(d, ["build", f"refcnt/{self.c.ver}", "-k",
                                     hk, "--kernelsourcedir",
                                     f"/usr/src/linux-headers-{hk}"],
                                 log) == 0:
                kos = glob.glob(f"{d}/tree/refcnt/{self.c.ver}/{hk}/*/"
                                "module/refcnt.ko*")
                if kos:
                    r = subprocess.run(["modinfo", "-F", "vermagic", kos[0]],
                                       stdout=subprocess.PIPE, text=True)
                    log.write(r.stdout)
                    ok = r.returncode == 0 and \
                        (r.stdout.split() or [""])[0] == hk
            else:
                log.write(tail(G.read(f"{d}/tree/refcnt/{self.c.ver}/build/"
                                      "make.log"), 20) + "\n")
        finally:
            shutil.rmtree(d, ignore_errors=True)
        return ok

    def dkms_host_no_numa(self, log: IO[str]) -> bool:
        """The same build against a kernel configured without NUMA:
        skipped, exit 77."""
        d = self.dkms_tree()
        if d is None:
            return False
        hk = self.c.host_kernel
        try:
            cfg = G.read(f"/usr/src/linux-headers-{hk}/.config")
            with open(f"{d}/kernel/.config", "w") as f:
                f.write("".join(ln + "\n" for ln in cfg.splitlines()
                                if not ln.startswith("CONFIG_NUMA=")))
            with open(f"{d}/out", "w") as out:
                rc = self.dkms_private(d, ["build", f"refcnt/{self.c.ver}",
                                           "-k", hk, "--kernelsourcedir",
                                           f"{d}/kernel"], out)
            text = G.read(f"{d}/out")
            log.write(text + f"exit {rc}\n")
        finally:
            shutil.rmtree(d, ignore_errors=True)
        return rc == SKIPPED and \
            "BUILD_EXCLUSIVE directive which does not match" in text

    def clean_chroot_build(self) -> None:
        """The packages built from their Build-Depends alone (deb-chroot);
        its own log is build/logs/deb-chroot.log.  Exit 77: not root,
        skipped."""
        t0, out = time.time(), f"{self.logs}/deb-chroot.out"
        desc = ("the packages build in a clean bookworm chroot from "
                "build-essential and the Build-Depends")
        with open(out, "w") as f:
            rc = subprocess.call([f"{HERE}/deb-chroot"], stdout=f,
                                 stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        desc += f" ({int(time.time() - t0)}s)"
        if rc == 0:
            self.t.ok(desc)
        elif rc == SKIPPED:
            self.t.skip(desc, tail(G.read(out), 1))
        else:
            self.t.notok(desc)
            self.t.diag(tail(G.read(out), 30))

    # --- guest ---------------------------------------------------------

    def debs_depends(self) -> List[str]:
        """What the packages depend on, read from the .deb files: the
        guest has no network, so its root must hold every one before
        apt-get installs the packages, and a library a tool starts to
        link comes with it."""
        fields = []
        for p in PKGS:
            deb = self.the_deb(p)
            if deb is not None:
                r = subprocess.run(["dpkg-deb", "-f", deb, "Depends"],
                                   stdout=subprocess.PIPE, text=True)
                fields.append(r.stdout)
        return depends(fields, PKGS)

    def guest_run(self, root_pkgs: str) -> int:
        stage = f"{self.out}/guest"
        shutil.rmtree(stage, ignore_errors=True)
        os.makedirs(stage)
        for p in PKGS:
            for deb in debs(self.out, p, self.c.ver):
                os.link(deb, os.path.join(stage, os.path.basename(deb)))
        with open(f"{self.logs}/deb-guest.out", "w") as out:
            return subprocess.call(vm_cmd(self.c, root_pkgs, self.logs,
                                          stage),
                                   stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)

    def guest(self) -> Optional[int]:
        """Step 5; SKIPPED when the guest's root cannot be had."""
        root_pkgs = self.c.root_pkgs + " " + \
            "".join(d + " " for d in self.debs_depends())
        self.t.emit(f"# the guest's root: {root_pkgs}")
        if os.geteuid() != 0 and subprocess.call(
                [G.tool("refcnt-debian-root"), "--pkgs",
                 f"{root_pkgs} systemd udev", "--cached"]) != 0:
            return SKIPPED
        t0 = time.time()
        cpu0 = children_cpu()
        rc = self.guest_run(root_pkgs)
        cpu = children_cpu() - cpu0
        tap = guest_tap(G.read(f"{self.logs}/deb-guest.log"), self.t.n)
        with open(f"{self.logs}/deb-guest.tap", "w") as f:
            f.write("".join(ln + "\n" for ln in tap))
        for ln in tap:
            self.t.emit(ln)
        self.t.n += sum(1 for ln in tap if re.match(r"(ok|not ok) ", ln))
        self.t.failed += sum(1 for ln in tap if ln.startswith("not ok "))
        self.t.emit(f"# guest: {int(time.time() - t0)}s, {cpu} s of CPU, "
                    f"refcnt-vm exit {rc} (log {self.logs}/deb-guest.log)")
        if rc != 0:
            self.t.notok(f"the guest ran to its end (refcnt-vm exit {rc})")
            self.t.diag(tail(G.read(f"{self.logs}/deb-guest.out"), 20))
        return None

    def main(self) -> int:
        c, t = self.c, self.t
        t.emit(f"# packages {c.ver}; guest kernel {c.kernel}, host DKMS "
               f"build for {c.host_kernel}")
        built = self.step("build", "make deb", self.make_deb) if c.build \
            else self.step("build", "the packages are in build/deb",
                           self.debs_built)
        if not built:
            t.plan(t.n)
            return 1
        if c.host:
            self.step("lintian", "lintian -I -E --pedantic: no tag but the "
                      "overridden ones", self.lintian_clean)
            self.step("symbols", "debian/librefcnt1.symbols matches "
                      "lib/librefcnt.map", self.symbols_match_map)
            self.step("no-test-modules", "no package holds the test rig's "
                      "modules; refcnt-dkms builds refcnt.ko alone",
                      self.no_test_modules)
            self.step("dkms-host", "DKMS builds the package's module for "
                      f"{c.host_kernel} on the host", self.dkms_host_build)
            self.step("dkms-no-numa", "DKMS skips a kernel without "
                      "CONFIG_NUMA (exit 77, BUILD_EXCLUSIVE)",
                      self.dkms_host_no_numa)
        if c.chroot:
            self.clean_chroot_build()
        if c.guest and self.guest() == SKIPPED:
            t.plan(t.n)
            print(f"{PROG}: the guest's Debian root is not built and only "
                  "root can build it", file=sys.stderr)
            return SKIPPED
        t.plan(t.n)
        return 0 if t.failed == 0 else 1


def children_cpu() -> int:
    """CPU seconds of the finished children (user + system): around the
    guest run, what QEMU cost, whatever else the machine was doing."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return int(r.ru_utime + r.ru_stime)


def main(argv: List[str]) -> int:
    try:
        o = G.parse_opts(argv, {"--kernel": "", "--host-kernel": "",
                                "--timeout": "1800"},
                         flags=("--no-build", "--no-host", "--no-chroot",
                                "--no-guest", "--verbose"))
    except G.HelpAsked:
        sys.stdout.write(USAGE.format(prog=PROG))
        return 0
    except G.Usage as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    build = G.build_dir()
    os.makedirs(os.path.join(build, "logs"), exist_ok=True)
    r = subprocess.run([G.tool("refcnt-setup"), "kernels"],
                       stdout=subprocess.PIPE, text=True)
    kernels = r.stdout.split()
    if r.returncode != 0:
        print("Bail out! refcnt-setup kernels failed")
        return 1
    c = Config(kernel=o["--kernel"] or (kernels or [""])[0],
               host_kernel=o["--host-kernel"] or (kernels or [""])[-1],
               ver=changelog_version(G.read(f"{G.ROOT}/debian/changelog")),
               build="--no-build" not in o, host="--no-host" not in o,
               chroot="--no-chroot" not in o, guest="--no-guest" not in o,
               timeout=int(o["--timeout"]), verbose="--verbose" in o)
    return DebCheck(c, build, Writer()).main()
