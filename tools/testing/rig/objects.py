# SPDX-License-Identifier: GPL-2.0
"""objects-check: refcnt-run's object reports tested in guests (make
check): every object named with its symbol or allocation site and
file:line, the misplaced one advised to the right node with its counts
equal to the truth's, the bad inputs (stripped, static, fork and exec),
the HTML report in headless Chromium, and programs nobody here wrote
(Debian's perl under the hub; redis-server under the hinting feed and the
hub).

  exact  one boot of the busybox guest (four) with the hub device at
         period 1 and the truth plugin's window: objects-guest exact,
         then the host's perl without and under refcnt-run
  bad    one boot of the busybox guest (four), no device: objects-guest bad
  html   on the host: the exact stage's HTML in headless Chromium
         against its JSON (html-check), and a sampled report's (weight
         64, with its intervals; its text report too), made on the host
         by resolve-bench
  redis  one boot of the Debian guest with redis-server and redis-tools
         and the hub device at period 64: redis-guest (redis-check)

The busybox guest gets the dynamic loader and the libraries the programs
need from the host (guest-libs), so that the tracker can be preloaded.
TAP on stdout; the guests' logs in LOG_DIR.  The guest side stays shell:
objects/objects-guest and objects/redis-guest; the reports are judged by
objects/check-objects.py and objects/html-check.py."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Sequence

from . import guestout as G

PROG = "objects-check"
STAGES = "bad exact html redis"
OBJ = G.tool("objects")
REDIS_PKGS = "redis-server redis-tools"
# redis-check: nothing run (the Debian root missing, not root).
SKIPPED = 77

USAGE = """\
Usage: {prog} [--kernel VER] [--stages "bad exact html redis"] [--log-dir DIR]
             [--timeout SECS]

Runs the stages asked for (default: all) and prints TAP on stdout.
"""


@dataclass
class Config:
    kernel: str
    build: str
    logdir: str
    timeout: int = 900
    stages: List[str] = field(default_factory=lambda: STAGES.split())

    @property
    def ko(self) -> str:
        return os.path.join(self.build, self.kernel, "refcnt.ko")

    @property
    def out(self) -> str:
        return os.path.join(self.build, "objects/out")


def busybox_cmd(c: Config, stage: str, log: str, libs: Sequence[str],
                extra: Sequence[str] = ()) -> List[str]:
    """refcnt-vm's command line for objects-guest STAGE."""
    b = c.build
    return [G.tool("refcnt-vm"), "--kernel", c.kernel, "--topology", "four",
            "--module", c.ko, "--timeout", str(c.timeout), "--quiet",
            "--log", log, "--file", f"{b}/tools:/refcnt/tools",
            "--file", f"{b}/objects:/refcnt/objects",
            "--file", f"{OBJ}/objects-guest:/refcnt/objects-guest",
            *libs, *extra, "--", f"/refcnt/objects-guest {stage}"]


def exact_extra(truth: str) -> List[str]:
    return ["--hub=1", "--truth", truth, "--truth-window", "--no-debug",
            "--file", "/usr/bin/perl:/usr/bin/perl"]


def guest_failed(name: str, log: str) -> str:
    """A failed guest run: one "not ok" line of TAP of its own."""
    return f"1..1\nnot ok 1 {name}: the guest run failed (log {log})\n"


def merge_tap(texts: Sequence[str]) -> str:
    """The stages' TAP as one stream: the results renumbered, their
    plans dropped, one plan at the end."""
    out, n = [], 0
    for text in texts:
        for line in text.splitlines():
            if re.match(r"(ok|not ok) [0-9]+", line):
                n += 1
                line = re.sub(r" [0-9]+", f" {n}", line, count=1)
            elif line.startswith("1.."):
                continue
            out.append(line + "\n")
    return "".join(out) + f"1..{n}\n"


def python_tap(args: Sequence[str], tap: str) -> None:
    """A checker's TAP into TAP (its status is its TAP's)."""
    with open(tap, "w") as f:
        subprocess.call(["python3", *args], stdout=f)


def append(path: str, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


class Objects:
    def __init__(self, c: Config) -> None:
        self.c = c
        self.taps: List[str] = []

    def busybox_run(self, stage: str, log: str,
                    extra: Sequence[str] = ()) -> bool:
        b = self.c.build
        libs = G.guest_libs([f"{b}/objects/obj-workload",
                             f"{b}/tools/librefcnt-track.so", "/usr/bin/perl"])
        with open(log + ".err", "wb") as err:
            return subprocess.call(busybox_cmd(self.c, stage, log, libs, extra),
                                   stdout=subprocess.DEVNULL, stderr=err,
                                   stdin=subprocess.DEVNULL) == 0

    def finish(self, stage: str, t0: float) -> None:
        tap = f"{self.c.out}/{stage}.tap"
        append(tap, f"# objects {stage}: {int(time.time() - t0)} s\n")
        self.taps.append(tap)

    def stage_bad(self) -> None:
        log, t0, out = f"{self.c.logdir}/objects-bad.log", time.time(), \
            self.c.out
        if self.busybox_run("bad", log):
            G.extract(log, f"{out}/bad")
            python_tap([f"{OBJ}/check-objects.py", "bad", f"{out}/bad",
                        f"{OBJ}/obj-workload.c"], f"{out}/bad.tap")
        else:
            write(f"{out}/bad.tap", guest_failed("objects bad", log))
        self.finish("bad", t0)

    def stage_exact(self) -> None:
        log, t0, out = f"{self.c.logdir}/objects-exact.log", time.time(), \
            self.c.out
        truth = f"{out}/exact-truth.csv"
        if not G.make("truth"):
            raise G.Die("make truth failed")
        if self.busybox_run("exact", log, exact_extra(truth)):
            G.extract(log, f"{out}/exact")
            python_tap([f"{OBJ}/check-objects.py", "exact", f"{out}/exact",
                        truth, f"{OBJ}/obj-workload.c",
                        f"{self.c.build}/objects/obj-workload"],
                       f"{out}/exact.tap")
        else:
            write(f"{out}/exact.tap", guest_failed("objects exact", log))
        self.finish("exact", t0)

    def stage_html(self) -> None:
        t0, out = time.time(), self.c.out
        html = f"{out}/exact/exact.html"
        if os.path.isfile(html) and os.path.getsize(html) > 0:
            python_tap([f"{OBJ}/html-check.py", html,
                        f"{out}/exact/exact.json"], f"{out}/html-exact.tap")
        else:
            write(f"{out}/html-exact.tap", "1..1\nnot ok 1 html: no HTML "
                  "report from the exact stage\n")
        write(f"{out}/html.tap", merge_tap([G.read(f"{out}/html-exact.tap"),
                                            G.read(self.sampled_html())]))
        self.finish("html", t0)

    def sampled_html(self) -> str:
        """The HTML of sampled counts (a feed of weight 64: the intervals'
        column and tooltips) against its JSON: refcnt-run's report code
        on the host, on made-up counts (resolve-bench); its TAP's path."""
        b, d = self.c.build, f"{self.c.out}/sampled"
        tap = f"{self.c.out}/html-sampled.tap"
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        env = {**os.environ, "RESOLVE_BENCH_OUT": d,
               "RESOLVE_BENCH_WEIGHT": "64",
               "REFCNT_TRACK_LIB": f"{b}/tools/librefcnt-track.so"}
        if not G.make("objects-bench-bin") or subprocess.call(
                [f"{b}/objects/resolve-bench", f"{b}/objects/track-bench",
                 "20", "300000"], env=env, stdout=subprocess.DEVNULL) != 0:
            write(tap, "1..1\nnot ok 1 html sampled: resolve-bench wrote no "
                  "report\n")
        else:
            python_tap([f"{OBJ}/html-check.py", f"{d}/report.html",
                        f"{d}/report.json", "html sampled"], tap)
            append(tap, text_intervals(G.read(f"{d}/report.txt"),
                                       G.read(f"{d}/report.json")))
        return tap

    def stage_redis(self) -> None:
        log, t0, out = f"{self.c.logdir}/objects-redis.log", time.time(), \
            self.c.out
        # The Debian guest with the hub's plugin: the slowest of the stages.
        rc = redis_boot(self.c.kernel, self.c.build, log, f"{out}/redis",
                        2 * self.c.timeout)
        if rc == 0:
            python_tap([f"{OBJ}/check-objects.py", "redis", f"{out}/redis"],
                       f"{out}/redis.tap")
            self.redis_results(f"{out}/redis", f"{out}/redis.tap", log)
        elif rc == SKIPPED:
            why = (G.read(log + ".err").splitlines() or [""])[-1]
            write(f"{out}/redis.tap", f"1..1\nok 1 # SKIP redis: {why}\n")
        else:
            write(f"{out}/redis.tap", guest_failed("objects redis", log))
        self.finish("redis", t0)

    def redis_results(self, d: str, tap: str, log: str) -> None:
        """The redis stage's reports as a results file (build/results/
        objects-redis-<UTC time>.txt, the hub run's JSON beside it as
        .json): a reference run is in
        Documentation/results/objects-redis.txt."""
        f = G.results_start("objects-redis", self.c.kernel, PROG,
                            ["--stages", "redis", "--timeout",
                             str(self.c.timeout)])
        append(f, redis_report(G.read(log), G.read(f"{d}/rc"), G.read(tap),
                               G.read(f"{d}/redis-hub.txt"),
                               G.read(f"{d}/redis-hinting.txt")))
        js = f"{d}/redis-hub.json"
        if os.path.isfile(js) and os.path.getsize(js) > 0:
            shutil.copy(js, f[:-len(".txt")] + ".json")
        G.say(PROG, f"redis reports written to {f}")

    def run(self) -> str:
        stages: Dict[str, Callable[[], None]] = {
            "bad": self.stage_bad, "exact": self.stage_exact,
            "html": self.stage_html, "redis": self.stage_redis}
        for s in self.c.stages:
            if s not in stages:
                raise G.Die(f"unknown stage '{s}'")
            stages[s]()
        return merge_tap([G.read(t) for t in self.taps])


def text_intervals(text: str, js: str) -> str:
    """TAP (no plan: merge_tap counts) on the text report TEXT of sampled
    counts against its JSON JS: it says how its intervals are made, has
    the column, and each listed object's row its JSON's refs_interval."""
    try:
        data = json.loads(js)
        objs = data["objects"]
        weight = data["feeds"]["weight"]
    except (ValueError, KeyError, TypeError):
        return "not ok 1 text sampled: no JSON report to compare with\n"
    lines = text.splitlines()
    top = next((i for i, ln in enumerate(lines)
                if ln.startswith("   #   object ")), len(lines))
    rows: List[str] = []
    for ln in lines[top + 1:]:
        if not re.match(r"   [0-9]+ ", ln):
            break
        rows.append(ln)
    want = ["[%d, %d]" % tuple(o["refs_interval"]) for o in objs[:len(rows)]]
    bad = [f"row {i + 1}: no {w}" for i, (r, w) in enumerate(zip(rows, want))
           if w not in r]
    head = ("95% interval of a count: from its samples n, Poisson" in text
            and f"times {weight}" in text and
            top < len(lines) and " 95% interval " in lines[top])
    out = "ok" if head else "not ok"
    out += (" 1 text sampled: the report says how its 95% intervals are "
            "made, and has their column\n")
    out += ("ok" if rows and not bad else "not ok") + \
        (f" 2 text sampled: each of the {len(rows)} rows shows its object's "
         "95% interval, as the JSON\n")
    return out + "".join(f"#   {b}\n" for b in bad[:10])


def redis_report(log: str, rc: str, tap: str, hub: str, hinting: str) -> str:
    """The body of the redis results file."""
    m = re.search(r"Redis version=([^,]*),", log)
    runs = "; ".join(" ".join(f[1:3]) + f" {f[3]} s" for f in
                     (ln.split() for ln in rc.splitlines()) if len(f) >= 4)
    oks = "".join(f"# {ln}\n" for ln in tap.splitlines()
                  if re.match(r"(not )?ok", ln))
    return (f"# redis-server {m.group(1) if m else ''} under redis-benchmark"
            " and DEBUG POPULATE (tools/testing/objects/redis-guest)\n"
            f"# runs (name, exit status, seconds): {runs}\n{oks}\n"
            "== refcnt-run --feed=hub (the hub device at period 64)\n"
            f"{hub}\n== refcnt-run --feed=hinting (the hub feed off)\n"
            f"{hinting}")


def main(argv: List[str]) -> int:
    try:
        o = G.parse_opts(argv, {"--kernel": "", "--stages": STAGES,
                                "--log-dir": "", "--timeout": "900"})
    except G.HelpAsked:
        sys.stdout.write(USAGE.format(prog=PROG))
        return 0
    build = G.build_dir()
    c = Config(kernel=o["--kernel"] or G.first_kernel(), build=build,
               logdir=o["--log-dir"] or f"{build}/logs",
               timeout=int(o["--timeout"]), stages=o["--stages"].split())
    os.makedirs(c.logdir, exist_ok=True)
    os.makedirs(c.out, exist_ok=True)
    if not os.path.isfile(c.ko):
        raise G.Die(f"no {c.ko} (make module KVER={c.kernel})")
    if not G.make("tools", "objects-tests"):
        raise G.Die("make tools objects-tests failed")
    sys.stdout.write(Objects(c).run())
    return 0


# --- redis-check ---------------------------------------------------------

REDIS_PROG = "redis-check"


def redis_cmd(kernel: str, build: str, log: str, timeout: int) -> List[str]:
    """refcnt-vm's command line for redis-guest."""
    return [G.tool("refcnt-vm"), "--debian-pkgs", REDIS_PKGS, "--kernel",
            kernel, "--topology", "four", "--module",
            f"{build}/{kernel}/refcnt.ko", "--hub=64", "--timeout",
            str(timeout), "--quiet", "--log", log,
            "--file", f"{build}/tools:/refcnt/tools",
            "--file", f"{OBJ}/redis-guest:/refcnt/redis-guest",
            "--", "/refcnt/redis-guest"]


def debian_root_cached(pkgs: str) -> bool:
    return subprocess.call([G.tool("refcnt-debian-root"), "--pkgs", pkgs,
                            "--cached"]) == 0


def redis_boot(kernel: str, build: str, log: str, out: str,
               timeout: int) -> int:
    """Boot the Debian guest with redis-server and redis-tools and the hub
    device (period 64) once and run redis-guest there; its reports into
    OUT.  refcnt-vm's status; SKIPPED (nothing run) when the Debian root
    for these packages is not built and this is not root, who alone can
    build it."""
    os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
    if os.geteuid() != 0 and not debian_root_cached(REDIS_PKGS):
        why = (f"the Debian root for '{REDIS_PKGS}' is not built and only "
               "root can build it")
        write(log + ".err", why + "\n")
        print(why, file=sys.stderr)
        return SKIPPED
    if not G.make("truth"):
        raise G.Die("make truth failed")
    with open(log + ".err", "wb") as err:
        rc = subprocess.call(redis_cmd(kernel, build, log, timeout),
                             stdout=subprocess.DEVNULL, stderr=err,
                             stdin=subprocess.DEVNULL)
    G.extract(log, out)
    return rc


def redis_main(argv: List[str]) -> int:
    """redis-check --log FILE --out DIR: redis_boot's exit status."""
    try:
        o = G.parse_opts(argv, {"--kernel": "", "--log": "", "--out": "",
                                "--timeout": "900"},
                         unknown="unknown argument '{}'")
    except G.HelpAsked:
        print(f"Usage: {REDIS_PROG} [--kernel VER] --log FILE --out DIR "
              "[--timeout SECS]")
        return 0
    if not o["--log"] or not o["--out"]:
        raise G.Usage("--log and --out are needed")
    return redis_boot(o["--kernel"] or G.first_kernel(), G.build_dir(),
                      o["--log"], o["--out"], int(o["--timeout"]))
