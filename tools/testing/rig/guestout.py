# SPDX-License-Identifier: GPL-2.0
"""What the guest-booting checks (objects-check, redis-check, fleet-check,
refcnt-demo, objects-bench) share on the host: the files a guest sends
back through its serial log ("@@file NAME", its base64 lines, "@@end";
"@@rc NAME STATUS SECS" lines), a benchmark's results file, the first
Debian kernel, and make."""
from __future__ import annotations

import base64
import os
import platform
import re
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

from . import guestlibs, vmargs
from .vm import read as read

ROOT = vmargs.ROOT
TOOLS = vmargs.TOOLS


def build_dir() -> str:
    return os.environ.get("REFCNT_BUILD_DIR") or os.path.join(ROOT, "build")


def tool(*parts: str) -> str:
    return os.path.join(TOOLS, *parts)


def log_lines(text: str) -> List[str]:
    """A serial log's lines, without carriage returns."""
    lines = text.replace("\r", "").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def rc_lines(text: str) -> List[str]:
    """The "@@rc " lines of a guest log."""
    return [ln for ln in log_lines(text) if ln.startswith("@@rc ")]


def blocks(text: str, drop_console: bool = True) -> Dict[str, List[str]]:
    """The lines of each "@@file NAME" ... "@@end" block, in order (a name
    sent twice: its blocks one after the other); with DROP_CONSOLE, the
    kernel's console lines ("[ time] ...") that fell in are left out."""
    out: Dict[str, List[str]] = {}
    cur: Optional[List[str]] = None
    for ln in log_lines(text):
        if cur is None:
            if ln.startswith("@@file ") and len(ln.split()) == 2:
                cur = out.setdefault(ln.split()[1], [])
        elif ln == "@@end":
            cur = None
        elif not (drop_console and ln.startswith("[")):
            cur.append(ln)
    return out


def b64(lines: Sequence[str]) -> bytes:
    """base64 -d of LINES: what decodes before the first character that
    is not base64 or the padding (as base64 -d writes what it decoded
    before its error, a last partial group included)."""
    m = re.match(r"[A-Za-z0-9+/]*", "".join(lines))
    data = m.group(0) if m else ""
    if len(data) % 4 == 1:
        data = data[:-1]
    data += "=" * (-len(data) % 4)
    return base64.b64decode(data)


def rm(*paths: str) -> None:
    """rm -f PATHS."""
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def extract(log: str, into: str) -> None:
    """The blocks of the guest log LOG decoded into the fresh directory
    INTO, its "@@rc" lines into INTO/rc."""
    subprocess.call(["rm", "-rf", into])
    os.makedirs(into, exist_ok=True)
    text = read(log)
    with open(os.path.join(into, "rc"), "w") as f:
        f.write("".join(ln + "\n" for ln in rc_lines(text)))
    for name, lines in blocks(text).items():
        if "/" in name or name in (".", ".."):
            continue
        with open(os.path.join(into, name), "wb") as f:
            f.write(b64(lines))


def first_kernel() -> str:
    """The first of refcnt-setup kernels (the 6.1 one)."""
    r = subprocess.run([tool("refcnt-setup"), "kernels"],
                       stdout=subprocess.PIPE, text=True)
    return (r.stdout.split() or [""])[0]


def make(*targets: str, quiet: bool = True) -> bool:
    """make -C ROOT TARGETS (their output hidden unless not QUIET)."""
    return subprocess.call(
        ["make", "-C", ROOT, "--no-print-directory", *targets],
        stdout=subprocess.DEVNULL if quiet else None) == 0


def cpu_model(cpuinfo: str) -> str:
    for ln in cpuinfo.split("\n"):
        if ln.startswith("model name"):
            return ln.split(":", 1)[1].strip()
    return ""


def results_header(bench: str, kernel: str, prog: str,
                   args: Sequence[str], now: float, host: str, cpu: str,
                   ncpu: int, release: str, tree: str) -> str:
    """The head of a results file (as the shell scripts wrote it)."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(now))
    lines = [f"# refcnt {bench}, {when}",
             f"# host: {host}, {cpu or 'unknown CPU'}, {ncpu} CPUs, "
             f"kernel {release}"]
    if kernel:
        lines.append(f"# guest kernel: {kernel}")
    lines += [f"# tree: {tree}", f"# command: {' '.join([prog, *args])}",
              "# the figures come from QEMU guests (emulated NUMA, emulated "
              "counters), not hardware"]
    return "".join(ln + "\n" for ln in lines)


def results_file(build: str, root: str, bench: str, kernel: str, prog: str,
                 args: Sequence[str]) -> str:
    """A benchmark's results file, BUILD/results/BENCH-<UTC time>.txt,
    headed by when, where, on what and how it ran (Documentation/
    testing.rst, "Results files"); its path.  The figures of a run live
    there (reference runs are copied to Documentation/results/).  Every
    benchmark's, through this or results_start()."""
    d = os.path.join(build, "results")
    os.makedirs(d, exist_ok=True)
    now = time.time()
    path = os.path.join(
        d, f"{bench}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(now))}.txt")
    r = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True)
    tree = r.stdout.strip() if r.returncode == 0 else "unknown"
    with open(path, "w") as f:
        f.write(results_header(bench, kernel, prog, args, now,
                               platform.node(), cpu_model(read("/proc/cpuinfo")),
                               os.cpu_count() or 1, platform.release(), tree))
    return path


def results_start(bench: str, kernel: str, prog: str,
                  args: Sequence[str]) -> str:
    """results_file() in this tree's build directory."""
    return results_file(build_dir(), ROOT, bench, kernel, prog, args)


class Usage(Exception):
    """A bad command line: the message, exit status 2."""


class HelpAsked(Exception):
    """-h or --help."""


def parse_opts(argv: Sequence[str], values: Dict[str, str],
               flags: Sequence[str] = (),
               unknown: str = "unknown argument '{}' (see --help)"
               ) -> Dict[str, str]:
    """The scripts' option loop: VALUES maps each option that takes a
    value to its default, FLAGS are options without one (set to "1"
    when given; "-v" is "--verbose").  -h/--help raises HelpAsked, an
    unknown argument or a missing value Usage."""
    opts = dict(values)
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            raise HelpAsked()
        name = "--verbose" if a == "-v" and "--verbose" in flags else a
        if name in flags:
            opts[name] = "1"
        elif name in values:
            if i + 1 >= len(argv) or argv[i + 1] == "":
                raise Usage(f"{a} needs a value")
            opts[name] = argv[i + 1]
            i += 1
        else:
            raise Usage(unknown.format(a))
        i += 1
    return opts


def guest_libs(programs: Sequence[str]) -> List[str]:
    """guest-libs PROGRAMS: the --file arguments of their libraries."""
    libs: set[str] = set()
    rc = 0
    for p in programs:
        rc, paths = guestlibs.ldd(p)
        libs.update(paths)
        if rc != 0:
            break
    if rc == 0:
        libs.add(guestlibs.libgcc_s())
    return guestlibs.file_args(libs)


class Die(Exception):
    """lib/rig.sh's die: "PROG: error: MESSAGE", exit status 1."""


def say(prog: str, text: str) -> None:
    print(f"{prog}: {text}", file=sys.stderr, flush=True)


def entry(prog: str, main: Callable[[List[str]], int],
          argv: Sequence[str]) -> int:
    """MAIN(ARGV) with the scripts' conventions: Die is exit 1, Usage
    exit 2 (messages prefixed with PROG)."""
    try:
        return main(list(argv))
    except Die as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except Usage as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
