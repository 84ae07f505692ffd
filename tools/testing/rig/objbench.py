# SPDX-License-Identifier: GPL-2.0
"""objects-bench: refcnt-run's object benchmarks (make bench), on the host.
A benchmark, not a test: it prints its figures (and writes them to its
results file, build/results/objects-bench-<UTC time>.txt; a reference run
is in Documentation/results/objects.txt) and fails only if it cannot run.

  - librefcnt-track.so's cost per call: malloc + free of 32 bytes (the
    fast path of a small allocation) and of 1 MiB (a large one: its call
    stack; the counters, which need the module, are not read here), in CPU
    ns per pair, with and without the tracker preloaded;
  - its cost on malloc-heavy programs, in CPU time: binary trees (nothing
    but allocation: the worst case), and redis-server under redis-benchmark
    (the server's CPU time for the same requests) where they are
    installed. Goal: at most 5% slower at the default threshold (1 MiB);
  - refcnt-run's own time to resolve and report 10,000 objects
    (resolve-bench: its code on a made-up machine of four counters).

Figures are the best of --repeat runs (CPU time: this machine is shared).
"""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence

from . import guestout as G

PROG = "objects-bench"
# Pairs of malloc+free in callgrind's binary trees (2^14 nodes x 10 x 2).
TREE_PAIRS = 327670
REDIS_TESTS = "set,get,lpush,lpop,hset"


def num(s: str) -> float:
    try:
        return float(s)
    except ValueError:
        return 0.0


def g(x: float) -> str:
    """A number as awk prints it (%.6g)."""
    return f"{x:.6g}"


def best_of(values: Sequence[Optional[str]]) -> Optional[str]:
    """The smallest figure (as it was printed); None if there is none."""
    b: Optional[str] = None
    for v in values:
        if v is not None and (b is None or num(v) < num(b)):
            b = v
    return b


def first_number(out: str) -> str:
    """The first field of a program's first line."""
    lines = out.split("\n")
    f = lines[0].split() if lines else []
    return f[0] if f else ""


def slower(a: str, b: str) -> str:
    """B against A, in percent (+ is slower)."""
    return f"{100 * (num(b) - num(a)) / num(a):+.1f}%"


def callgrind_count(stderr: str) -> str:
    for ln in stderr.split("\n"):
        if "Collected :" in ln:
            return ln.split()[-1]
    return ""


def proc_cpu(stat: str) -> Optional[str]:
    """A process's user + system seconds from /proc/PID/stat."""
    f = stat.split()
    if len(f) < 15:
        return None
    return g((num(f[13]) + num(f[14])) / 100)


def small_line(a: str, b: str) -> str:
    return ("tracker, small allocation (malloc+free of 32 B): "
            f"{a} ns without, {b} ns with: {num(b) - num(a):+.1f} ns a pair")


def large_line(a: str, b: str) -> str:
    return ("tracker, large allocation (malloc+free of 1 MiB, stack taken, "
            f"no counters): {a} ns without, {b} ns with: "
            f"{num(b) - num(a):+.0f} ns a pair")


def trees_line(a: str, b: str) -> str:
    return ("binary trees (2^16 nodes x 20, every node a malloc; worst "
            f"case): {a} s without, {b} s with: {slower(a, b)} (goal <= 5%)")


def callgrind_line(a: str, b: str) -> str:
    return (f"binary trees (2^14 nodes x 10) under callgrind: {a} "
            f"instructions without, {b} with: {slower(a, b)}, "
            f"{(num(b) - num(a)) / TREE_PAIRS:.1f} a malloc+free pair")


def redis_line(plain: str, tracked: str) -> str:
    if plain == "?" or tracked == "?":
        return ("redis-server under redis-benchmark: no figure (every run "
                f"failed: {plain} s without, {tracked} s with)")
    return ("redis-server under redis-benchmark (500,000 requests): "
            f"{plain} s of server CPU without, {tracked} s with: "
            f"{slower(plain, tracked)} (goal <= 5%)")


def quiet(cmd: Sequence[str]) -> int:
    return subprocess.call(cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)


class Bench:
    def __init__(self, build: str, repeat: int, objects: int, tmp: str,
                 out: Callable[[str], None]) -> None:
        self.tb = f"{build}/objects/track-bench"
        self.lib = f"{build}/tools/librefcnt-track.so"
        self.resolve = f"{build}/objects/resolve-bench"
        self.repeat = repeat
        self.objects = objects
        self.tmp = tmp
        self.out = out

    def env(self, tracked: bool) -> Dict[str, str]:
        if not tracked:
            return dict(os.environ)
        return {**os.environ, "REFCNT_TRACK_DIR": self.tmp,
                "LD_PRELOAD": self.lib}

    def best(self, tracked: bool, *args: str) -> str:
        """The smallest first number of track-bench ARGS over the runs."""
        vals = []
        for _ in range(self.repeat):
            r = subprocess.run([self.tb, *args], stdout=subprocess.PIPE,
                               text=True, env=self.env(tracked), check=True)
            vals.append(first_number(r.stdout))
        return best_of(vals) or ""

    def instructions(self, tracked: bool, *args: str) -> str:
        """Instructions the command executes (callgrind's count; the
        preload reaches the command through the environment)."""
        r = subprocess.run(["valgrind", "--tool=callgrind",
                            "--callgrind-out-file=/dev/null", self.tb, *args],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, env=self.env(tracked))
        return callgrind_count(r.stderr)

    def redis_once(self, tracked: bool, i: int) -> Optional[str]:
        """The server's CPU seconds for one redis-benchmark run; None if
        the server or the benchmark failed (its CPU time would be near 0
        and win the best of)."""
        port = str(20000 + random.randrange(20000))
        srv = subprocess.Popen(["redis-server", "--port", port, "--save", "",
                                "--appendonly", "no"],
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL,
                               env=self.env(tracked))
        for _ in range(100):
            if quiet(["redis-cli", "-p", port, "ping"]) == 0:
                break
            time.sleep(0.1)
        cpu = None
        if quiet(["redis-benchmark", "-p", port, "-q", "-n", "100000",
                  "-c", "8", "-r", "100000", "-t", REDIS_TESTS]) == 0:
            cpu = proc_cpu(G.read(f"/proc/{srv.pid}/stat"))
        if quiet(["redis-cli", "-p", port, "shutdown", "nosave"]) != 0:
            srv.kill()
        srv.wait()
        if cpu is None:
            G.say(PROG, f"redis-server ({'tracked' if tracked else 'plain'})"
                  f" run {i} failed: no figure")
        return cpu

    def redis(self) -> str:
        if not (shutil.which("redis-server") and
                shutil.which("redis-benchmark")):
            return ("redis-server under redis-benchmark: not run (apt-get "
                    "install redis-server redis-tools)")
        figs = [best_of([self.redis_once(t, i) for i in range(self.repeat)])
                or "?" for t in (False, True)]
        return redis_line(figs[0], figs[1])

    def run(self) -> None:
        out = self.out
        out(f"objects-bench {time.strftime('%Y-%m-%d', time.gmtime())} on "
            f"{os.cpu_count()} CPUs ({os.uname().release}), best of "
            f"{self.repeat}, CPU time")
        out(small_line(self.best(False, "calls", "2000000", "32"),
                       self.best(True, "calls", "2000000", "32")))
        out(large_line(self.best(False, "calls", "20000", "1048576"),
                       self.best(True, "calls", "20000", "1048576")))
        out(trees_line(self.best(False, "trees", "16", "20"),
                       self.best(True, "trees", "16", "20")))
        # Instructions do not move with the machine's load, CPU time does.
        if shutil.which("valgrind"):
            out(callgrind_line(self.instructions(False, "trees", "14", "10"),
                               self.instructions(True, "trees", "14", "10")))
        else:
            out("binary trees under callgrind: not run (apt-get install "
                "valgrind)")
        out(self.redis())
        r = subprocess.run([self.resolve, self.tb, str(self.objects), "8192"],
                           stdout=subprocess.PIPE, text=True,
                           env={**os.environ, "REFCNT_TRACK_LIB": self.lib})
        last = r.stdout.rstrip("\n").split("\n")[-1]
        out(f"refcnt-run resolving and reporting: {last}")


def main(argv: List[str]) -> int:
    try:
        o = G.parse_opts(argv, {"--repeat": "5", "--objects": "10000"},
                         unknown="unknown argument '{}'")
    except G.HelpAsked:
        sys.stdout.write(__doc__ or "")
        return 0
    if not G.make("tools", "objects-bench-bin"):
        return 2
    tmp = tempfile.mkdtemp(prefix="objects-bench.",
                           dir="/dev/shm" if os.access("/dev/shm", os.W_OK)
                           else None)
    path = G.results_start("objects-bench", "", PROG, argv)
    try:
        with open(path, "a") as f:
            def out(line: str) -> None:
                print(line, flush=True)
                f.write(line + "\n")
                f.flush()
            Bench(G.build_dir(), int(o["--repeat"]), int(o["--objects"]), tmp,
                  out).run()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"(written to {path})")
    return 0
