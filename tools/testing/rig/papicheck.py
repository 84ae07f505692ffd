# SPDX-License-Identifier: GPL-2.0
"""papi-check: the refcnt component of PAPI (see USAGE): the guest's
command, the sections of its log, the checks of each program's output."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from . import hostcmd as H
from .tapout import Writer

PROG = "papi-check"

USAGE = """\
papi-check: the refcnt component of PAPI, as TAP (Documentation/
testing.rst, "The PAPI component").

  papi-check [--kernel VER|PATH] [--topology four] [--log FILE]
             [--timeout SECS] [--filter] [--work DIR [--parse]]
  papi-check --host
  papi-check [--filter] --guest-args DIR

One guest boot with the hub device at period 1 (refcnt-vm --hub=1),
reporting user-mode references only (hub-pmu refs-user) into rings of
2Mi records that hold a counting window of the examples whole,
and the truth by virtual address (refcnt-vm --vtruth).  The guest runs
PAPI's papi_component_avail and papi_native_avail (the component
listed, enabled, its events described), papi_test (the component's
kselftest: its TAP lines are passed on), and the -truth builds of
examples/papi (data_range, instr_range), whose counts, window by
window, must equal the truth's (tools/testing/papi-window-check).
--work keeps the truth's dumps in DIR; --parse then checks the log of
a run again, without a guest (also the log of another script's boot
that ran what --guest-args printed).  --filter: the device reports
only the references near each session's ranges (the programs' test
builds set its filters: tools/testing/truth/hub-filter.c), in rings of
256Ki records; the sessions then drain thousands of records, not
millions, and still have to leave out those of the pages beside their
ranges (make check's variant; without it every user-mode reference is
reported, into rings of 2Mi records).  --host: the host's part, without
the module (the component listed, disabled, saying why).
--guest-args DIR prints, one per line, the refcnt-vm arguments and
(last) the guest command of these tests for another boot with the hub
at period 1 (hub-check's), the truth's dumps going to DIR.  Needs make
module, make truth and make papi.  Exit status 0 iff every test passed.
"""

# A ring holds a counting window of the examples at period 1: the
# device reports only user-mode references (hub-pmu refs-user), and
# data_range's windows at -O0 make about 1.2 million.
HUB_RECORDS = 2097152
# With --filter a window's records are those of its ranges and the page
# beside each end: the most, data_range's array1 (its pages hold the
# pointers too), about 134,000.
HUB_RECORDS_FILTER = 262144
# What the programs run, in the guest, in order; each one's output is
# framed by "papi-check: begin NAME" and "papi-check: end NAME RC".
PROGS = ("papi_component_avail", "papi_native_avail", "papi_test",
         "data_range-truth", "instr_range-truth")
HOST_PROGS = ("papi_component_avail", "papi_native_avail", "papi_test",
              "data_range", "instr_range")
EXAMPLES = ("data_range", "instr_range")
EVENTS = ("references", "local", "remote", "loads", "stores", "lost")
UPTIME = "echo papi-check: uptime $(cut -d' ' -f1 /proc/uptime); "


def guest_command(filtered: bool, progs: Sequence[str] = PROGS) -> str:
    """The hub's user-mode references only, and no machine-wide drain:
    the sessions alone take the records (a session syncs the rings as it
    starts and as it is read).  Both are put back after the programs.
    --filter: no references until a session's filter (the programs' own
    start-up makes none either).  The guest's uptime before each program
    and after the last: what they cost a boot."""
    cmd = "echo 0 >/sys/module/refcnt_hub/parameters/enable; "
    env = ""
    if filtered:
        cmd += "./hub-pmu off >/dev/null; "
        env = "REFCNT_HUB_FILTER=1 "
    else:
        cmd += "./hub-pmu refs-user >/dev/null; "
    for p in progs:
        cmd += (f"{UPTIME}echo papi-check: begin {p}; {env}./{p}; "
                f"echo papi-check: end {p} $?; ")
    return cmd + (f"{UPTIME}./hub-pmu refs >/dev/null; "
                  "echo 1 >/sys/module/refcnt_hub/parameters/enable;")


def files(build: str, progs: Sequence[str] = PROGS) -> List[str]:
    out = ["--file", f"{build}/truth/hub-pmu:/refcnt/hub-pmu"]
    for p in progs:
        out += ["--file", f"{build}/papi/bin/{p}:/refcnt/{p}"]
    return out


def records(filtered: bool) -> int:
    return HUB_RECORDS_FILTER if filtered else HUB_RECORDS


def guest_args(build: str, filtered: bool, dump_dir: str) -> List[str]:
    """refcnt-vm's arguments for another boot with the hub at period 1,
    the truth's dumps going to DUMP_DIR, and (last) the guest command."""
    os.makedirs(dump_dir, exist_ok=True)
    return [*files(build), "--hub-records", str(records(filtered)),
            "--vtruth", os.path.join(os.path.abspath(dump_dir), "vt"),
            guest_command(filtered)]


Section = Tuple[List[str], Optional[str]]


def sections(log_lines: Sequence[str]) -> Dict[str, Section]:
    """Each program's output in the guest's log, and its exit status
    (None if it did not end)."""
    out: Dict[str, Section] = {}
    for p in PROGS:
        on, body, rc = False, [], None
        for line in log_lines:
            if line == f"papi-check: begin {p}":
                on = True
                continue
            if on and line.startswith(f"papi-check: end {p} "):
                rc = line.split()[-1]
                on = False
                continue
            if on:
                body.append(line)
        out[p] = (body, rc)
    return out


def uptimes(log_lines: Sequence[str]) -> Optional[str]:
    """What the programs took of the guest's time (a shared boot's
    cost), or None without an uptime before each and after the last."""
    t = [H.num(x.split()[2]) for x in log_lines
         if x.startswith("papi-check: uptime ") and len(x.split()) > 2]
    if len(t) != len(PROGS) + 1:
        return None
    each = ", ".join(f"{p} {int(t[i + 1] - t[i])}s"
                     for i, p in enumerate(PROGS))
    return (f"# the programs took {int(t[-1] - t[0])}s of the guest's "
            f"time: {each}")


def component_enabled(comp: Sequence[str]) -> bool:
    """refcnt listed, and not "\\-> Disabled: why" after its name (the
    bash check looked for "disabled" and missed PAPI's capital D)."""
    return any(re.search("Name: *refcnt", x) for x in comp) and not any(
        re.search("disabled", x, re.IGNORECASE)
        for x in H.grep_after(comp, "Name: *refcnt", 2))


def missing_events(native: Sequence[str]) -> List[str]:
    text = "\n".join(native)
    return [e for e in EVENTS if f"refcnt:::{e}" not in text]


def tap_results(lines: Sequence[str]) -> List[Tuple[bool, str]]:
    """papi_test's own TAP results."""
    out = []
    for x in lines:
        if re.match(r"^(not ok|ok) [0-9]+ [a-z_]+\.", x):
            out.append((not x.startswith("not"),
                        re.sub(r"^(not ok|ok) [0-9]+ ", "", x)))
    return out


def host_main(build: str, w: Writer) -> int:
    """The host: no module, so the component is listed disabled, with
    why."""
    bin_dir = f"{build}/papi/bin"
    for p in HOST_PROGS:
        if not os.access(f"{bin_dir}/{p}", os.X_OK):
            raise H.Die(f"no {bin_dir}/{p} (make papi)")
    name = ("papi_component_avail on the host: refcnt listed, disabled: "
            "refcnt.ko is not loaded")
    if os.path.isdir("/sys/module/refcnt"):
        w.skip("papi_component_avail on the host says why refcnt is "
               "disabled", "refcnt.ko is loaded here")
    else:
        r = subprocess.run([f"{bin_dir}/papi_component_avail"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, text=True,
                           errors="replace")
        comp = r.stdout.split("\n")
        if any("Disabled: refcnt.ko is not loaded" in x
               for x in H.grep_after(comp, "Name: *refcnt", 3)):
            w.ok(name)
        else:
            w.notok(name, [" ".join(H.grep_after(comp, "refcnt", 3)[:4])])
    w.plan(w.n)
    return 0 if w.failed == 0 else 1


@dataclass
class Opts:
    kernel: str
    topology: str
    log: str
    timeout: str
    work: str
    parse: bool
    host: bool
    filter: bool
    guest_args: str


def parse_args(argv: Sequence[str], build: str) -> Opts:
    o = H.parse(argv, values=("--kernel", "--topology", "--log", "--timeout",
                              "--work", "--guest-args"),
                flags=("--parse", "--host", "--filter"))
    v = o.values
    return Opts(kernel=v.get("--kernel", ""),
                topology=v.get("--topology", "four"),
                log=v.get("--log", f"{build}/logs/papi.log"),
                timeout=v.get("--timeout", "1200"), work=v.get("--work", ""),
                parse="--parse" in o.flags, host="--host" in o.flags,
                filter="--filter" in o.flags,
                guest_args=v.get("--guest-args", ""))


def check_needs(build: str, rel: str) -> None:
    for f in (f"{build}/{rel}/refcnt.ko", f"{build}/{rel}/refcnt_hub.ko",
              f"{build}/truth/refcnt-truth.so",
              f"{build}/truth/refcnt-vtruth.so", f"{build}/truth/hub-pmu"):
        if not os.path.isfile(f):
            raise H.Die(f"no {f} (make module KVER={rel} truth)")
    for p in PROGS:
        if not os.access(f"{build}/papi/bin/{p}", os.X_OK):
            raise H.Die(f"no {build}/papi/bin/{p} (make papi)")


def main(argv: Sequence[str], root: str) -> int:
    build = H.build_dir(root)
    o = parse_args(argv, build)
    w = Writer()
    if o.host:
        return host_main(build, w)
    kernel = o.kernel or H.default_kernel(root)
    rel = H.release(kernel)
    check_needs(build, rel)
    if o.guest_args:
        for a in guest_args(build, o.filter, o.guest_args):
            print(a)
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(o.log)), exist_ok=True)
    if o.work:
        os.makedirs(o.work, exist_ok=True)
        work, tmp = os.path.abspath(o.work), None
    else:
        if o.parse:
            raise H.Die("--parse needs --work DIR")
        work = tmp = tempfile.mkdtemp(prefix="papi-check.",
                                      dir=os.environ.get("TMPDIR") or "/tmp")
    try:
        if not o.parse:
            guest(root, build, o, kernel, rel, work, w)
        check_log(root, o.log, work, f"{rel}/{o.topology}", w)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    w.plan(w.n)
    return 0 if w.failed == 0 else 1


def guest(root: str, build: str, o: Opts, kernel: str, rel: str, work: str,
          w: Writer) -> None:
    t0 = time.time()
    rc = H.call([H.refcnt_vm(root), "--kernel", kernel, "--topology",
                 o.topology, "--module", f"{build}/{rel}/refcnt.ko",
                 "--hub=1", "--hub-records", str(records(o.filter)),
                 "--vtruth", f"{work}/vt", "--timeout", o.timeout, "--quiet",
                 "--log", o.log, *files(build), "--", guest_command(o.filter)],
                both=f"{work}/vm.out")
    name = f"papi guest {rel}/{o.topology} ({int(time.time() - t0)}s)"
    if rc != 0:
        w.notok(name, [f"refcnt-vm exit {rc}: "
                       + " ".join(H.tail(f"{work}/vm.out", 5))])
    else:
        w.ok(name)


def window_check(root: str, work: str, first: int, lines: Sequence[str],
                 name: str, shift: int = 0) -> Tuple[int, str]:
    """tools/testing/papi-window-check on a program's output: its exit
    status and output."""
    path = f"{work}/{name}"
    with open(path, "w") as f:
        f.write("".join(x + "\n" for x in lines))
    cmd = [os.path.join(root, "tools/testing/papi-window-check"), "-v",
           f"truth={work}/vt", "-v", f"first={first}"]
    if shift:
        cmd += ["-v", f"shift={shift}"]
    try:
        r = subprocess.run([*cmd, path], stdout=subprocess.PIPE, text=True,
                           errors="replace", stdin=subprocess.DEVNULL)
    except OSError as e:
        return 127, f"{cmd[0]}: {e.strerror}"
    return r.returncode, r.stdout.rstrip("\n")


def check_log(root: str, log: str, work: str, where: str, w: Writer) -> None:
    """The checks of a run's log."""
    log_lines = H.lines(log)
    s = sections(log_lines)
    t = uptimes(log_lines)
    if t:
        w.emit(t)
    comp = s["papi_component_avail"][0]
    if component_enabled(comp):
        w.ok("papi_component_avail lists refcnt, enabled")
    else:
        w.notok("papi_component_avail lists refcnt, enabled",
                [" ".join(H.grep_after(comp, "refcnt", 3)[:4])])
    miss = missing_events(s["papi_native_avail"][0])
    w.ok_if(not miss, "papi_native_avail lists refcnt:::{"
            + ",".join(EVENTS) + "}"
            + (f" (missing: {' '.join(miss)})" if miss else ""))
    body, rc = s["papi_test"]
    for passed, desc in tap_results(body):
        if passed:
            w.ok(desc)
        else:
            w.notok(desc, [f"see {log}"])
    if rc != "0":
        w.notok(f"papi_test exit status {rc or 'none'}", [f"see {log}"])
    examples(root, work, where, s, w)


def examples(root: str, work: str, where: str,
             s: Dict[str, Section],
             w: Writer) -> None:
    """The examples against the truth, window by window.  The truth's
    dumps are numbered across the programs: each example's follow the
    windows of those before it."""
    first = 0
    for ex in EXAMPLES:
        body, rc = s[f"{ex}-truth"]
        out = ""
        good = False
        if rc == "0":
            wrc, out = window_check(root, work, first, body, ex)
            good = wrc == 0
        if good:
            w.ok(f"{ex} == truth {where}: {out.split(chr(10))[-1]}")
        else:
            w.notok(f"{ex} == truth {where}",
                    [f"exit {rc or 'none'}", *out.split("\n")])
        for x in body:
            w.emit(f"# {x}")
        if out:
            w.diag(out)
        # The check of the check: with every data range one page higher
        # than the one counted, the comparison must fail (a window whose
        # pages all see alike, such as array2's, may still agree).
        if ex == "data_range":
            wrc, wrong = window_check(root, work, first, body, ex, 4096)
            w.ok_if(wrc == 1, f"{ex} with its data ranges a page off != "
                    f"truth: {wrong.split(chr(10))[-1]}")
        first += sum(1 for x in body if x.startswith("papi-window: "))


def entry(argv: Sequence[str], root: str) -> int:
    return H.entry(PROG, main, argv, root, USAGE)
