# SPDX-License-Identifier: GPL-2.0
"""papi-build: build PAPI with the refcnt component (papi/components/
refcnt) from Debian's PAPI source package, and the PAPI programs of refcnt
against it, into build/papi/ (make papi):

  build/papi/papi-VERSION/   Debian's source, with the component copied
                             into src/components/refcnt
  build/papi/bin/            papi_component_avail, papi_native_avail,
                             papi_avail, the examples (examples/papi),
                             each also as NAME-truth (papi-window.c), and
                             papi_test (selftests/refcnt/papi_test.c, the
                             component's kselftest), all static: they run
                             in the busybox guests as they are

PAPI is configured as Debian configures it (perf_event, the system's
libpfm4) plus --with-components=refcnt, static (libpapi.a and static
utilities).  Configure runs once per configuration; make rebuilds what
changed."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import List, Sequence, Tuple

PROG = "papi-build"
UTILS = ("papi_component_avail", "papi_native_avail", "papi_avail")
# What a static link with libnuma says that is no news.
LINK_NOISE = ("getaddrinfo", "in function `affinity_ip'")


class Fatal(Exception):
    pass


def say(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def configure_args(pfm_libdir: str) -> List[str]:
    return ["--prefix=/usr", "--with-components=refcnt",
            "--with-static-lib=yes", "--with-shared-lib=no",
            "--with-static-tools", "--with-perf-events",
            "--with-pfm-incdir=/usr/include",
            f"--with-pfm-libdir={pfm_libdir}"]


def needs_configure(psrc: str, conf: Sequence[str]) -> bool:
    """Configure again unless there is a Makefile made by CONF (the stamp
    .refcnt-configured holds the arguments)."""
    if not os.path.isfile(os.path.join(psrc, "Makefile")):
        return True
    try:
        with open(os.path.join(psrc, ".refcnt-configured")) as f:
            return f.read().rstrip("\n") != " ".join(conf)
    except OSError:
        return True


def component_warnings(make_log: str) -> List[str]:
    """The lines (as grep -n numbers them) where the compiler warned about
    or refused the component's refcnt.c."""
    return [f"{n}:{line}" for n, line in enumerate(make_log.split("\n"), 1)
            if re.search(r"refcnt\.c:.*(warning|error):", line)]


def link_noise(line: str) -> bool:
    return any(s in line for s in LINK_NOISE)


def copy_newer(srcs: Sequence[str], dest: str) -> None:
    """cp -pu: each file whose copy is missing or older, with its mode
    and times (a changed file rebuilds libpapi)."""
    for s in srcs:
        d = os.path.join(dest, os.path.basename(s))
        if not os.path.exists(d) or \
                os.stat(s).st_mtime > os.stat(d).st_mtime:
            shutil.copy2(s, d)


@dataclass
class Paths:
    root: str
    build: str
    pfm_libdir: str
    psrc: str = ""

    @property
    def out(self) -> str:
        return os.path.join(self.build, "papi")

    @property
    def librefcnt(self) -> str:
        return os.path.join(self.build, "lib/librefcnt.a")

    @property
    def ksft(self) -> str:
        return os.path.join(self.build,
                            "linux-source/tools/testing/selftests")

    def r(self, path: str) -> str:
        return os.path.join(self.root, path)

    def link_libs(self) -> List[str]:
        """librefcnt in the tree, for the component and everything linked
        with it, and the system's libpfm."""
        return [self.librefcnt, "-lnuma", "-pthread",
                f"-L{self.pfm_libdir}", "-lpfm"]


def programs(p: Paths) -> List[Tuple[str, List[str]]]:
    """The programs written against PAPI and their sources: each example,
    and its -truth build for papi-check (its sessions' windows marked for
    the truth plugins by truth/papi-window.c through the linker's --wrap,
    and the hub's stream narrowed to each session's ranges when
    REFCNT_HUB_FILTER=1: hub-filter.c, papi-check --filter); papi_test."""
    truth = p.r("tools/testing/truth")
    hub_filter = [f"-I{truth}", f"-I{p.r('tools/testing/kmod/uapi')}",
                  f"{truth}/hub-filter.c", f"{truth}/hub-map.c"]
    out: List[Tuple[str, List[str]]] = []
    for ex in sorted(glob.glob(p.r("examples/papi/*.c"))):
        name = os.path.basename(ex)[:-2]
        out.append((name, [ex]))
        out.append((f"{name}-truth", [
            ex, f"{truth}/papi-window.c", *hub_filter,
            "-Wl,--wrap=refcnt_count_open,--wrap=ioctl"]))
    out.append(("papi_test", [
        "-D_GNU_SOURCE", f"-I{p.ksft}", f"-I{p.r('uapi')}",
        p.r("selftests/refcnt/papi_test.c"),
        p.r("selftests/refcnt/refcnt_helpers.c"),
        f"{truth}/hub-filter-wrap.c", *hub_filter,
        "-Wl,--wrap=refcnt_count_open,--wrap=refcnt_count_stop"]))
    return out


def compile_cmd(p: Paths, cc: str, out: str, args: Sequence[str]) -> List[str]:
    """-O0, as the paper's counts assume; static."""
    return [cc, "-O0", "-g", "-Wall", "-Wextra", "-Werror", f"-I{p.psrc}",
            f"-I{p.r('lib/include')}", "-o", os.path.join(p.out, "bin", out),
            *args, os.path.join(p.psrc, "libpapi.a"), *p.link_libs(),
            "-static"]


def compile_prog(cmd: Sequence[str]) -> int:
    """CMD, its stderr without the static link's known noise."""
    pr = subprocess.Popen(cmd, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL)
    assert pr.stderr is not None
    for raw in pr.stderr:
        line = raw.decode(errors="replace")
        if not link_noise(line):
            sys.stderr.write(line)
    sys.stderr.flush()
    return pr.wait()


def check_inputs(p: Paths) -> None:
    if not (os.path.isfile("/usr/include/perfmon/pfmlib.h") and
            os.path.isfile(os.path.join(p.pfm_libdir, "libpfm.a"))):
        raise Fatal("libpfm4-dev is missing (tools/testing/refcnt-setup "
                    "deps, as root)")
    if not os.path.isfile(p.librefcnt):
        raise Fatal(f"no {p.librefcnt}: make lib first")


def source(p: Paths) -> str:
    """Debian's PAPI source, unpacked (refcnt-setup papi-source)."""
    r = subprocess.run([p.r("tools/testing/refcnt-setup"), "papi-source",
                        p.out], stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(r.returncode)
    return r.stdout.rstrip("\n")


def configure(p: Paths, src: str, cc: str) -> None:
    conf = configure_args(p.pfm_libdir)
    if not needs_configure(p.psrc, conf):
        return
    say(f"configuring PAPI {os.path.basename(src)} with "
        "--with-components=refcnt")
    log = os.path.join(p.out, "configure.log")
    with open(log, "wb") as f:
        rc = subprocess.call(["./configure", *conf, f"CC={cc}"],
                             cwd=p.psrc, stdout=f, stderr=subprocess.STDOUT)
    if rc != 0:
        raise Fatal(f"PAPI's configure failed: see {log}")
    with open(os.path.join(p.psrc, ".refcnt-configured"), "w") as f:
        f.write(" ".join(conf) + "\n")


def make_utils(p: Paths, jobs: str) -> None:
    """libpapi.a and the utilities.  LDFLAGS on make's command line reaches
    the utilities' make too: a static link needs librefcnt, libnuma and
    libpfm."""
    say("building libpapi.a and the PAPI utilities")
    log = os.path.join(p.out, "make.log")
    with open(log, "wb") as f:
        rc = subprocess.call(
            ["nice", "-n", "10", "make", f"-j{jobs}", "utils",
             f"PAPI_REFCNT_CFLAGS=-I{p.r('lib/include')}",
             "LDFLAGS=" + " ".join(["-static", *p.link_libs()])],
            cwd=p.psrc, stdout=f, stderr=subprocess.STDOUT)
    with open(log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if rc != 0:
        sys.stderr.write("".join(line + "\n" for line in
                                 text.rstrip("\n").split("\n")[-30:]))
        raise Fatal(f"building PAPI failed: see {log}")
    warned = component_warnings(text)
    if warned:
        sys.stderr.write("".join(w + "\n" for w in warned))
        raise Fatal(f"the refcnt component has warnings: see {log}")
    for u in UTILS:
        shutil.copy2(os.path.join(p.psrc, "utils", u),
                     os.path.join(p.out, "bin"))


def build(p: Paths, cc: str, jobs: str) -> int:
    check_inputs(p)
    t0 = time.time()
    os.makedirs(os.path.join(p.out, "bin"), exist_ok=True)
    src = source(p)
    p.psrc = os.path.join(src, "src")
    comp = os.path.join(p.psrc, "components/refcnt")
    os.makedirs(comp, exist_ok=True)
    mine = p.r("papi/components/refcnt")
    copy_newer(sorted(glob.glob(f"{mine}/*.[ch]")) +
               [f"{mine}/Rules.refcnt"], comp)
    configure(p, src, cc)
    make_utils(p, jobs)
    for name, args in programs(p):
        if name == "papi_test" and not os.path.isfile(
                os.path.join(p.ksft, "kselftest_harness.h")):
            raise Fatal(f"no kselftest_harness.h in {p.ksft} "
                        "(make selftests extracts it)")
        rc = compile_prog(compile_cmd(p, cc, name, args))
        if rc != 0:
            return rc
    say(f"PAPI with the refcnt component in {p.out}/bin "
        f"({int(time.time() - t0)}s)")
    return 0


def multiarch() -> str:
    return subprocess.run(["gcc", "-print-multiarch"], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def main(argv: Sequence[str], root: str) -> int:
    """papi-build (no arguments; REFCNT_BUILD_DIR, CC and JOBS, default
    2, from the environment)."""
    env = os.environ
    p = Paths(root, env.get("REFCNT_BUILD_DIR") or
              os.path.join(root, "build"), f"/usr/lib/{multiarch()}")
    try:
        return build(p, env.get("CC") or "gcc", env.get("JOBS") or "2")
    except Fatal as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
