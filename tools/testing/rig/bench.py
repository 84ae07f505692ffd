# SPDX-License-Identifier: GPL-2.0
"""refcnt-bench (make bench): the native figures, then the guest's table
(selftests/refcnt/bench.c and bench_feeds.c in a QEMU NUMA guest), then
hub-bench and objects-bench.  A benchmark, not a test: it fails only if
it cannot run."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import List, Sequence

from . import hostcmd as H

PROG = "refcnt-bench"

USAGE = """\
Usage: refcnt-bench [OPTIONS]

Build, boot a NUMA guest, run the refcnt benchmark, print the table.

Options:
  --kernel VER      guest kernel release (default: the first of
                    'tools/testing/refcnt-setup kernels', i.e. the 6.1 kernel)
  --topology SPEC   tools/testing/refcnt-vm topology (default: four)
  --refs N          references per CPU per measurement (default: 2000000)
  --repeat R        measurements per figure, the best is shown (default: 3)
  --accel A         kvm, tcg or auto, passed to tools/testing/refcnt-vm
  --timeout SECS    guest timeout (default: 900)
  --no-build        use what is already in the build directory
  --no-native       skip the native (user-space core) figures
  --native-only     only the native figures, no guest
  -h, --help        this text

Environment: REFCNT_BUILD_DIR (default <repo>/build), REFCNT_VM_ACCEL.
"""

TCG_NOTE = """\
Note: TCG emulates every guest instruction (no KVM here), so the ratios are
dominated by the instruction count of the entry point against one atomic
increment, not by caches or contention as on real hardware; the all-CPU
rows also depend on how many host cores the vCPUs really got."""

VALUES = {"--kernel": "kver", "--topology": "topology", "--refs": "refs",
          "--repeat": "repeat", "--accel": "accel", "--timeout": "timeout"}
FLAGS = {"--no-build": "build", "--no-native": "native",
         "--native-only": "guest"}


@dataclass
class Config:
    kver: str = ""
    topology: str = "four"
    refs: str = "2000000"
    repeat: str = "3"
    accel: str = ""
    timeout: str = "900"
    build: bool = True
    native: bool = True
    guest: bool = True


def parse(argv: Sequence[str]) -> Config:
    """The script's case loop: the last value counts, an empty one too;
    an unknown argument prints the usage on stderr first."""
    c = Config()
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            raise H.Help()
        if a in VALUES:
            if i + 1 >= len(argv):
                raise H.Die(f"{a} needs an argument", 1)
            setattr(c, VALUES[a], argv[i + 1])
            i += 2
        elif a in FLAGS:
            setattr(c, FLAGS[a], False)
            i += 1
        else:
            sys.stderr.write(USAGE)
            raise H.Die(f"unknown argument '{a}'", 1)
    for opt, v in (("--refs", c.refs), ("--repeat", c.repeat)):
        if not re.fullmatch(r"[1-9][0-9]*", v):
            raise H.Die(f"{opt}: '{v}' is not a positive number", 1)
    return c


def vm_cmd(root: str, build: str, c: Config) -> List[str]:
    """refcnt-vm's command line."""
    args = [H.refcnt_vm(root), "--kernel", c.kver, "--topology", c.topology,
            "--module", f"{build}/{c.kver}/refcnt.ko",
            "--file", f"{build}/selftests/bench",
            "--file", f"{build}/selftests/bench_feeds",
            "--timeout", c.timeout, "--mem-extra", "1536M", "--no-debug"]
    if c.accel:
        args += ["--accel", c.accel]
    return args + ["--", f"./bench -n {c.refs} -r {c.repeat} && "
                   f"./bench_feeds -r {c.repeat}"]


def accelerator(lines: Sequence[str]) -> str:
    """The accelerator refcnt-vm chose: "kernel VER (tcg), topology ..."."""
    for ln in lines:
        m = re.match(r"refcnt-vm: kernel [^ ]* \(([a-z]*)\)", ln)
        if m:
            return m.group(1)
    return ""


def table(lines: Sequence[str], title: str) -> List[str]:
    """sed's range from "=== TITLE ===" to "=== end ===", less the "==="
    lines and the kernel's console lines."""
    out: List[str] = []
    inside = False
    for ln in lines:
        if not inside:
            inside = ln == f"=== {title} ==="
            if not inside:
                continue
        elif ln == "=== end ===":
            inside = False
        if not (ln.startswith("===") or re.match(r"\[ *[0-9.]*\]", ln)):
            out.append(ln)
    while out and out[-1] == "":
        out.pop()
    return out


def report(kver: str, topology: str, used: str, tab: Sequence[str],
           feeds: Sequence[str]) -> List[str]:
    lines = ["=== guest: refcnt.ko in a QEMU NUMA guest ===",
             f"guest: {kver}, topology {topology}, {used or '?'} accelerator",
             "\n".join(tab), "", "\n".join(feeds)]
    if used == "tcg":
        lines += TCG_NOTE.split("\n")
    return lines


def say(text: str) -> None:
    print(f"{PROG}: {text}", file=sys.stderr, flush=True)


def perf_count(bench: str, ev: str, args: Sequence[str]) -> str:
    """perf stat's count of EV for `bench ARGS`, or nothing."""
    r = subprocess.run(["perf", "stat", "-x,", "-e", ev, "--", bench, *args],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, text=True, errors="replace")
    for ln in r.stderr.split("\n"):
        f = ln.split(",")
        if len(f) > 2 and f[2].startswith(ev) and re.fullmatch(r"[0-9]+", f[0]):
            return f[0]
    return ""


def perf_missing() -> str:
    """Why perf cannot count cycles here, or nothing."""
    if shutil.which("perf") is None:
        return "perf is not installed"
    r = subprocess.run(["perf", "stat", "-x,", "-e", "cycles,instructions",
                        "--", "true"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                       text=True, errors="replace")
    out = r.stderr
    if re.search(r"^[0-9][0-9]*,[^,]*,cycles", out, re.M):
        return ""
    m = re.search(r"<not supported>|<not counted>", out)
    why = m.group(0) if m else out.split("\n")[0]
    return f"perf stat: {why or 'no output'}; no hardware performance counters"


def native_perf(bench: str) -> None:
    """Cycles and instructions per reference: a run of N references less
    a run of one, so the fake machine's boot is not counted."""
    n = 20000000
    why = perf_missing()
    if why:
        print(f"cycles and instructions per reference: not available ({why})",
              flush=True)
        return
    for what in ("entry", "atomic"):
        line = f"{what}, 1 thread:"
        for ev in ("cycles", "instructions"):
            base = ["--only", what, "--threads", "1", "--refs"]
            c1 = perf_count(bench, ev, base + ["1"])
            cn = perf_count(bench, ev, base + [str(n)])
            if not c1 or not cn:
                line += f" {ev} not available"
            else:
                line += f" {(int(cn) - int(c1)) / (n - 1):.1f} {ev}"
        print(f"{line} per reference", flush=True)


def to_stderr(cmd: Sequence[str]) -> int:
    """CMD with its stdout on our stderr (the scripts' `>&2`)."""
    sys.stdout.flush()
    return subprocess.call(cmd, stdout=sys.stderr.fileno())


def native_bench(root: str, build: str, repeat: int) -> None:
    print("=== native: the core of kmod/ in user space on this host "
          "(tools/testing/core) ===", flush=True)
    bench = f"{build}/core/bench"
    if to_stderr(["make", "-C", f"{root}/tools/testing/core",
                  "--no-print-directory", f"O={build}/core", bench]) != 0:
        print("not run: the native build failed (liburcu-dev missing? "
              "tools/testing/refcnt-setup deps)", flush=True)
        return
    if H.call([bench, "--repeat", str(max(repeat, 5))]) != 0:
        print("not run: bench failed", flush=True)
    native_perf(bench)
    print(flush=True)


def first_kernel(root: str) -> str:
    """The first line of refcnt-setup kernels."""
    try:
        r = subprocess.run([f"{root}/tools/testing/refcnt-setup", "kernels"],
                           stdout=subprocess.PIPE, text=True)
    except OSError:
        r = None
    if r is None or r.returncode != 0:
        raise H.Die("cannot tell the guest kernels "
                    "(tools/testing/refcnt-setup kernels)", 1)
    kver = r.stdout.split("\n")[0]
    if not kver:
        raise H.Die("no guest kernel (tools/testing/refcnt-setup kernels)", 1)
    return kver


class Tee:
    """Everything printed from here on, ours and our children's, also
    appended to the results file (the script's exec > >(tee -a))."""

    def __init__(self, path: str) -> None:
        sys.stdout.flush()
        self.saved = os.dup(1)
        self.p = subprocess.Popen(["tee", "-a", path], stdin=subprocess.PIPE)
        assert self.p.stdin is not None
        os.dup2(self.p.stdin.fileno(), 1)
        self.p.stdin.close()

    def close(self) -> None:
        sys.stdout.flush()
        os.dup2(self.saved, 1)
        os.close(self.saved)
        self.p.wait()


def guest(root: str, build: str, c: Config) -> None:
    if c.build:
        say(f"building refcnt.ko for {c.kver} and the selftests")
        make = ["make", "-C", root, "--no-print-directory", f"BUILD={build}"]
        if to_stderr(make + ["module", f"KVER={c.kver}"]) != 0:
            raise H.Die(f"module build for {c.kver} failed", 1)
        if to_stderr(make + ["selftests"]) != 0:
            raise H.Die("selftests build failed", 1)
    for path, test in ((f"{build}/{c.kver}/refcnt.ko", os.path.isfile),
                       (f"{build}/selftests/bench", executable),
                       (f"{build}/selftests/bench_feeds", executable)):
        if not test(path):
            raise H.Die(f"no {path} (run without --no-build)", 1)
    fd, out = tempfile.mkstemp(prefix="refcnt-bench.",
                               dir=os.environ.get("TMPDIR") or "/tmp")
    os.close(fd)
    try:
        say(f"booting the '{c.topology}' guest on {c.kver}")
        status = H.call(vm_cmd(root, build, c), both=out)
        lines = H.lines(out)
        used = accelerator(lines)
        tab = table(lines, "refcnt bench")
        if status != 0 or not tab:
            for ln in lines[-40:]:
                print(ln, file=sys.stderr)
            raise H.Die("the benchmark did not run (refcnt-vm exit status "
                        f"{status})", 1)
        for ln in report(c.kver, c.topology, used, tab,
                         table(lines, "refcnt bench feeds")):
            print(ln, flush=True)
    finally:
        os.unlink(out)
    # The hub device (TCG guests only): its cost and the rates its feed
    # sustains.
    if used == "tcg" and (os.environ.get("REFCNT_BENCH_HUB") or "1") == "1":
        print(flush=True)
        if H.call([f"{root}/tools/testing/hub-bench", "--kernel",
                   c.kver]) != 0:
            say("hub-bench failed")
    # refcnt-run's objects: the allocation tracker's cost per call and on
    # malloc-heavy programs, and refcnt-run's time to resolve and report
    # 10,000 objects (on the host).
    if (os.environ.get("REFCNT_BENCH_OBJECTS") or "1") == "1":
        print(flush=True)
        if H.call([f"{root}/tools/testing/objects/objects-bench"]) != 0:
            say("objects-bench failed")


def executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def main(argv: Sequence[str], root: str) -> int:
    c = parse(argv)
    build = H.build_dir(root)
    if c.guest and not c.kver:
        c.kver = first_kernel(root)
    results = H.results_start(build, root, "bench", c.kver, PROG, argv)
    tee = Tee(results)
    status = 0
    try:
        if c.native:
            native_bench(root, build, int(c.repeat))
        if c.guest:
            guest(root, build, c)
    except H.Die as e:
        # Its message before the results file's, as the script's die
        # before its EXIT trap.
        print(f"{PROG}: error: {e}", file=sys.stderr, flush=True)
        status = e.status
    finally:
        tee.close()
        say(f"results: {results}")
    return status


def entry(argv: Sequence[str], root: str) -> int:
    return H.entry(PROG, main, argv, root, USAGE, 1)
