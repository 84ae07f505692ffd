# SPDX-License-Identifier: GPL-2.0
"""make demo (tools/testing/refcnt-demo): see refcnt without a NUMA
machine.  Sets up what it needs (Debian packages), builds the module for
Debian's 6.1 kernel and the tools, boots a 4-node QEMU guest (two nodes
with CPUs and memory, one with memory only, one with CPUs only), loads
refcnt.ko, shows the nodes (refcnt-info), runs the demo workload under
refcnt-run and prints its report: one array is placed badly on purpose,
and the report names it after the function that allocated it (refcnt-run's
allocation tracker, preloaded into the workload; the guest gets the host's
dynamic loader and libraries for it) and says where it should go.  The
heatmaps and the HTML report are left on the host at the paths printed at
the end.

The counts come from the hub feed by default: the guest gets the emulated
memory-side reference device (refcnt-vm --hub=$HUB_PERIOD, default every
64th reference of each vCPU, weighted 64), which reports the references
the workload really makes, so 11-bit counters peg and fold and migration
events fire as on the Origin; refcnt-run finds the hub feed on and counts
with it.  HUB=0 (make demo HUB=0) leaves the device out: refcnt-run then
falls back, as on a machine without one, to its command's page faults and
NUMA balancing's hinting faults.

With TRUTH=1 (make demo TRUTH=1) the guest runs under the refcnt-truth
QEMU plugin, which counts every reference the demo makes, and a last
table puts refcnt's references and local share of each array beside the
true ones (refcnt-compare; Documentation/testing.rst, "The truth from the
emulator")."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import IO, Iterable, List, Mapping, Tuple

from . import guestout as G

PROG = "demo"
LOG = "build/demo.log"
PICTURES = ("regions.png", "physical.png", "report.html")
TRUTH_FILES = ("tables.csv", "pages")

# The guest's script after its two settings (MARK, PAGES): its $ expand
# in the guest.
GUEST_SCRIPT = (
    '\ncd /refcnt/tools\n'
    'echo "== refcnt-info"\n'
    './refcnt-info\n'
    'echo\n'
    'echo "== refcnt-run -- demo-workload"\n'
    '$MARK start\n'
    './refcnt-run --reset --objects=15 --heatmap /tmp/regions.png'
    ' --html /tmp/report.html -- \\\n'
    '\t/refcnt/demo/demo-workload $PAGES 2>&1\n'
    '$MARK stop\n'
    'echo\n'
    'echo "== after the run: the feeds, and what each node counted'
    ' (pegged: references lost to pegging)"\n'
    './refcnt-info | grep -E "^feeds|stats:"\n'
    './refcnt-dump --skip-empty --heatmap /tmp/physical.png\n'
    'for f in regions.png physical.png report.html; do'
    ' echo "@@file $f"; base64 /tmp/$f; echo "@@end"; done\n'
    'if [ "$MARK" != : ]; then\n'
    '\t./refcnt-dump --csv -o /tmp/tables.csv\n'
    '\tfor f in tables.csv pages; do'
    ' echo "@@file $f"; cat /tmp/$f; echo "@@end"; done\n'
    'fi\n')


@dataclass
class Config:
    kver: str
    hub: bool = True
    hub_period: str = "64"
    truth: bool = False
    root: str = G.ROOT

    @staticmethod
    def from_env(kver: str, env: Mapping[str, str]) -> "Config":
        # As ${HUB:-1}: make demo passes HUB and TRUTH empty when unset.
        return Config(kver, hub=(env.get("HUB") or "1") == "1",
                      hub_period=env.get("HUB_PERIOD") or "64",
                      truth=(env.get("TRUTH") or "0") == "1")


def guest_cmd(c: Config) -> str:
    mark = "/refcnt/truth/truth-mark" if c.truth else ":"
    pages = "-P /tmp/pages" if c.truth else ""
    return f"\nMARK={mark} PAGES='{pages}'" + GUEST_SCRIPT


def vm_cmd(c: Config, libs: List[str]) -> List[str]:
    """refcnt-vm's command line (paths relative to the tree's root)."""
    args = [G.tool("refcnt-vm"), "--kernel", c.kver, "--topology", "four",
            "--module", f"build/{c.kver}/refcnt.ko"]
    if c.hub:
        # A remote counter 512 ahead of home raises a migration event.
        args += ["--modparams", "diff_threshold=512"]
    args += ["--file", "build/tools:/refcnt/tools",
             "--file", "build/demo:/refcnt/demo", *libs]
    if c.hub:
        args.append(f"--hub={c.hub_period}")
    if c.truth:
        args += ["--truth", f"{c.root}/build/demo-truth.csv",
                 "--truth-window"]
    return [*args, "--log", LOG, "--", guest_cmd(c)]


class Shown:
    """What of the guest's console the demo shows: from "== refcnt-info"
    on, without the files it sends back, the kernel's lines and
    refcnt-vm's exit marker."""

    def __init__(self) -> None:
        self.started = False
        self.in_file = False

    def keep(self, line: str) -> bool:
        if not self.started:
            if not line.startswith("== refcnt-info"):
                return False
            self.started = True
        if self.in_file:
            self.in_file = not line.startswith("@@end")
            return False
        if line.startswith("@@file "):
            self.in_file = True
            return False
        return not (line.startswith("[") or
                    line.startswith("@@refcnt-vm-exit"))


def shown(lines: Iterable[str]) -> List[str]:
    s = Shown()
    return [ln for ln in lines if s.keep(ln)]


def _int(word: str) -> int:
    m = re.match(r"[0-9]+", word)
    return int(m.group(0)) if m else 0


def pegging(log: str) -> Tuple[List[str], bool]:
    """What the nodes lost to pegging of what they counted (their
    statistics after the run, summed), and whether it is under 1%.  A
    delivery folds as it crosses the threshold (Documentation/abi.rst,
    "Weighted deliveries"), so a feed that delivers in bursts (the hub's
    drain) loses next to nothing.  A check on counts, not on time.  The
    hub device's overruns (records it could not write: the drain was
    behind) are timing, not counting: printed only."""
    lines = G.log_lines(log)
    after = next((i for i, ln in enumerate(lines)
                  if ln.startswith("== after the run")), len(lines))
    refs = pegged = records = overruns = 0
    for ln in lines[after:]:
        if ln.startswith("feeds:"):
            m = re.search(r"([0-9]+) records, ", ln)
            if m:
                records = int(m.group(1))
                m = re.search(r"([0-9]+) overruns", ln)
                if m:
                    overruns = int(m.group(1))
        if re.match(r" *stats: references ", ln):
            f = ln.split()
            for i in range(len(f) - 1):
                if f[i] == "references":
                    refs += _int(f[i + 1])
                if f[i] == "pegged":
                    pegged += _int(f[i + 1])
    if not refs:
        return [f"demo: no node statistics after the run (see {LOG})"], False
    share = 100 * pegged / refs
    out = [f"{pegged} of {refs} references counted by the nodes were lost "
           f"to pegging: {share:.3f}% (goal: under 1%)"]
    if records + overruns:
        out.append(f"the hub device dropped {overruns} records for want of "
                   f"room, {100 * overruns / (records + overruns):.2f}% of "
                   "its records (the drain behind the guest; not counted "
                   "above)")
    return out, share < 1


def _value(obj: str, key: str) -> str:
    m = re.search(f'"{key}": ([^,}}]*)', obj)
    return m.group(1) if m else ""


def _local(r: str) -> str:
    if r == "null":
        return "-"
    try:
        x = float(r)
    except ValueError:
        x = 0.0
    return f"{100 * (1 - x):5.1f}%"


def compare_table(text: str) -> List[str]:
    """refcnt-compare --json's arrays, one line each: references and
    local share, refcnt's and true."""
    out = [f"{'array':<22} {'refcnt refs':>12} {'local':>7}   "
           f"{'true refs':>12} {'local':>7}"]
    for obj in re.findall(r'\{"name": [^}]*\}', text):
        name = _value(obj, "name").replace('"', "")
        out.append(f"{name:<22} {_value(obj, 'refs'):>12} "
                   f"{_local(_value(obj, 'remote_share')):>7}   "
                   f"{_value(obj, 'true_refs'):>12} "
                   f"{_local(_value(obj, 'true_remote_share')):>7}")
    return out


class Demo:
    def __init__(self, out: IO[str] = sys.stdout) -> None:
        self.t0 = time.time()
        self.out = out

    def step(self, text: str) -> None:
        print(f"\n==> [{int(time.time() - self.t0)}s] {text}", file=self.out,
              flush=True)

    def fail(self, text: str) -> int:
        print(text, file=sys.stderr)
        return 1

    def boot(self, c: Config) -> bool:
        """The guest run, its console shown as it comes."""
        libs = G.guest_libs(["build/demo/demo-workload",
                             "build/tools/librefcnt-track.so"])
        p = subprocess.Popen(vm_cmd(c, libs), stdout=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True,
                             errors="replace")
        assert p.stdout is not None
        s, n = Shown(), 0
        for line in p.stdout:
            if s.keep(line.rstrip("\n")):
                n += 1
                self.out.write(line)
                self.out.flush()
        return p.wait() == 0 and n > 0

    def files_back(self, c: Config) -> None:
        got = G.blocks(G.read(LOG))
        for f in PICTURES:
            with open(f"build/demo-{f}", "wb") as w:
                w.write(G.b64(got.get(f, [])))
        if c.truth:
            for f in TRUTH_FILES:
                with open(f"build/demo-{f}", "w") as t:
                    t.write("".join(ln + "\n" for ln in got.get(f, [])))

    def truth(self) -> None:
        self.step("refcnt against the truth (every reference the demo made, "
                  "counted by QEMU)")
        with open("build/demo-compare.json", "w") as f:
            subprocess.run(["build/tools/refcnt-compare", "--json", "-r",
                            "build/demo-pages", "build/demo-tables.csv",
                            "build/demo-truth.csv"], stdout=f, check=True)
        for ln in compare_table(G.read("build/demo-compare.json")):
            print(ln, file=self.out)
        print("full comparison: build/tools/refcnt-compare -r "
              "build/demo-pages build/demo-tables.csv build/demo-truth.csv",
              file=self.out)

    def run(self) -> int:
        os.chdir(G.ROOT)
        self.step("Installing what is missing (Debian packages; skipped when "
                  "present)")
        subprocess.run([G.tool("refcnt-setup"), "deps"], check=True)
        kver = G.first_kernel()
        c = Config.from_env(kver, os.environ)
        self.step(f"Building refcnt.ko for {kver}, librefcnt and the tools")
        for targets in (["module", f"KVER={kver}"], ["tools"]) + \
                ((["truth"],) if c.hub or c.truth else ()):
            # The truth plugin is the hub device's producer too.
            if not G.make(*targets):
                return 2
        self.step("Booting a 4-node guest and running the demo (QEMU; about "
                  "a minute without KVM" +
                  (", two with the hub device" if c.hub else "") + ")")
        if not self.boot(c):
            return self.fail(f"demo: the guest run failed; full log in {LOG}")
        self.step("References lost to pegging")
        lines, ok = pegging(G.read(LOG))
        for ln in lines:
            print(ln, file=self.out)
        if not ok:
            return self.fail("demo: 1% or more of the references were lost "
                             "to pegging")
        if c.hub and "counted by the hub feed" not in G.read(LOG):
            return self.fail("demo: the report does not name the hub feed "
                             f"that counted ({LOG})")
        self.files_back(c)
        if c.truth:
            self.truth()
        self.step("Done.")
        here = os.getcwd()
        print("heatmap of the demo's objects x accessing node:        "
              f"{here}/build/demo-regions.png\n"
              "the report as a page (open it in a browser):           "
              f"{here}/build/demo-report.html\n"
              "heatmap of the physical tables x accessing node:       "
              f"{here}/build/demo-physical.png\n"
              f"full guest log: {here}/{LOG}", file=self.out)
        return 0


def main(argv: List[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(__doc__ or "")
        return 0
    try:
        return Demo().run()
    except subprocess.CalledProcessError as e:
        return e.returncode or 1
