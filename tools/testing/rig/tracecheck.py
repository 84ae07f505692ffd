# SPDX-License-Identifier: GPL-2.0
"""trace-check: the tests of the trace analyses on the host (see USAGE):
hand-made traces with figures worked out by hand (trace/data/README),
MACPO's controlled trace, bad traces, a trace larger than the memory;
rig.traceguest has the guest's half (--guest)."""
from __future__ import annotations

import gzip
import os
import re
import resource
import shutil
import subprocess
import tempfile
from typing import Optional, Sequence, Union

from . import hostcmd as H
from . import traceguest
from .tapout import Writer

PROG = "trace-check"

USAGE = """\
trace-check: the tests of the trace analyses (refcnt-trace, refcnt-replay,
refcnt-sharing, refcnt-policy, refcnt-tdist, refcnt-conflicts), as TAP.

  trace-check [--guest KERNEL] [--log FILE]

On the host (about 30 s): hand-made traces (data/, figures worked out by
hand in data/README) through every analysis, exact figures; the MACPO
controlled trace (two arrays mapping to the same sets), in text and from
examples/conflict-arrays under valgrind's lackey; truncated, garbled and
empty traces (one clear line naming the record, exit 1, no output file);
a trace larger than the memory the reader may use (ulimit -v), streamed.
With --guest (one boot of the four-node guest, about 60 s under TCG): the
truth plugin's traces of tools/testing/truth/trace-pattern, records and
markers exact, and equal to the truth table of the same window; a
replay into the counters equal to the table the trace implies.
Needs make tools (and make truth and make module KVER=KERNEL for --guest).
"""

TOOLS = ("refcnt-trace", "refcnt-replay", "refcnt-sharing", "refcnt-policy",
         "refcnt-tdist", "refcnt-conflicts")
HOST_TESTS = 45
PHYS_TIME_CODE = ("make", "--phys", "--time", "--code")


def two_arrays(pad: int) -> str:
    """10 rounds over 8 rows of two arrays 4 KiB apart (all in set 0 of
    the l1), the second PAD bytes further."""
    return "".join(f"load 8 {a * 1048576 + i * 4096 + (a == 2) * pad:#x}\n"
                   for _ in range(10) for a in (1, 2) for i in range(8))


def lines_twice(n: int) -> str:
    """N lines of 64 bytes, twice through."""
    return "".join(f"load 8 {1048576 + i * 64:#x}\n"
                   for _ in range(2) for i in range(n))


def gunzip(data: bytes) -> Optional[bytes]:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError):
        return None


def cmp(a: str, b: str, cwd: str) -> str:
    r = subprocess.run(["cmp", a, b], cwd=cwd, capture_output=True,
                       text=True)
    return (r.stdout + r.stderr).rstrip("\n")


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def ls_la(path: str) -> str:
    r = subprocess.run(["ls", "-la", path], capture_output=True, text=True)
    return (r.stdout + r.stderr).rstrip("\n")


class Host:
    """The tests, in a work directory: tools are named by their name in
    build/tools, "@D/x" is trace/data's x, "@W/x" the work directory's."""

    def __init__(self, root: str, tools: str, work: str, w: Writer) -> None:
        self.root = root
        self.tools = tools
        self.data = os.path.join(root, "tools/testing/trace/data")
        self.work = work
        self.w = w

    def path(self, name: str) -> str:
        return os.path.join(self.work, name)

    def arg(self, a: str) -> str:
        if a.startswith("@D/"):
            return os.path.join(self.data, a[3:])
        if a.startswith("@W/"):
            return self.path(a[3:])
        if a.startswith("@T/"):
            return os.path.join(self.tools, a[3:])
        return a

    def text(self, name: str) -> str:
        return H.read(self.path(name))

    def raw(self, name: str) -> bytes:
        return read_bytes(self.path(name))

    def write(self, name: str, data: Union[str, bytes]) -> None:
        with open(self.path(name), "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)

    def call(self, cmd: Sequence[str], out: Optional[str] = None,
             err: Optional[str] = None, stdin: Optional[str] = None,
             limit_kib: int = 0) -> int:
        """CMD in the work directory; OUT and ERR name files there (the
        same name: both into one), STDIN is its input."""
        def limit() -> None:
            if limit_kib:
                n = limit_kib * 1024
                resource.setrlimit(resource.RLIMIT_AS, (n, n))
        files = {}
        for n in {out, err} - {None}:
            assert n is not None
            files[n] = open(self.path(n), "wb")
        try:
            r = subprocess.run(
                [self.arg(c) for c in cmd], cwd=self.work,
                input=(stdin or "").encode(),
                stdout=files[out] if out else None,
                stderr=files[err] if err else None,
                preexec_fn=limit if limit_kib else None)
            return r.returncode
        except OSError as e:
            print(f"{PROG}: {cmd[0]}: {e.strerror}", flush=True)
            return 127
        finally:
            for f in files.values():
                f.close()

    def run(self, tool: str, *args: str, out: Optional[str] = None,
            err: Optional[str] = None, stdin: Optional[str] = None,
            limit_kib: int = 0) -> int:
        return self.call([os.path.join(self.tools, tool), *args], out, err,
                         stdin, limit_kib)

    def expect(self, name: str, file: str, *want: str) -> None:
        """NAME: every line of WANT is a whole line of FILE."""
        have = set(self.text(file).split("\n"))
        missing = [f"missing: {x}" for x in want if x not in have]
        if not missing:
            self.w.ok(name)
        else:
            self.w.notok(name, [*missing, f"--- {file}:",
                                *H.head_bytes(self.path(file),
                                              3000).split("\n")])

    def same(self, name: str, a: str, b: str) -> None:
        """NAME: the files are equal."""
        pa, pb = self.path(self.arg(a)), self.path(b)
        if os.path.isfile(pa) and os.path.isfile(pb) and \
                read_bytes(pa) == read_bytes(pb):
            self.w.ok(name)
        else:
            r = subprocess.run(["diff", pa, pb], capture_output=True,
                               text=True, errors="replace")
            self.w.notok(name, (r.stdout + r.stderr).split("\n")[:20])

    def fails(self, name: str, regex: str, file: str,
              cmd: Sequence[str]) -> None:
        """NAME: CMD exits 1 with one line on stderr matching REGEX,
        nothing on stdout, and FILE (an output it was asked for)
        absent."""
        rc = self.call(cmd, out="out", err="err")
        err = self.text("err")
        lines = err.count("\n")
        gone = not file or (not os.path.exists(self.path(file)) and
                            not os.path.exists(self.path(file + ".tmp")))
        if rc == 1 and lines == 1 and re.search(regex, err) and \
                not self.raw("out") and gone:
            self.w.ok(f"{name} ({err.rstrip(chr(10))})")
        else:
            left = [f for f in os.listdir(self.work)
                    if file and f.startswith(file)]
            self.w.notok(name, [f"exit {rc}, {lines} stderr lines, output "
                                f"file: {' '.join(sorted(left))}",
                                f"stderr: {err[:600].rstrip(chr(10))}",
                                f"stdout: {self.text('out')[:300]}"])

    def tests(self, guest_tests: int) -> None:
        # Traces of the hand-made texts: comm (3 threads) and policy (2 threads).
        for t in range(3):
            self.run("refcnt-trace", "make", "--code", "-t", str(t), "-n", "3",
                     f"comm.3.{t}", f"@D/comm.t{t}")
        self.run("refcnt-trace", *PHYS_TIME_CODE, "-t", "0", "-n", "2", "-N",
                 "0", "policy.2.0", "@D/policy.t0")
        self.run("refcnt-trace", *PHYS_TIME_CODE, "-t", "1", "-n", "2", "-N",
                 "1", "policy.2.1", "@D/policy.t1")

        # The plan first, as kselftest does: the host's tests, then the guest's.
        self.w.plan(HOST_TESTS + guest_tests)

        # --- the format -------------------------------------------------------------------

        self.run("refcnt-trace", "print", "policy", out="print.txt")
        self.run("refcnt-trace", *PHYS_TIME_CODE, "-t", "0", "-n", "2", "-N",
                 "0", "rt.2.0", "print.txt")
        self.run("refcnt-trace", *PHYS_TIME_CODE, "-t", "1", "-n", "2", "-N",
                 "1", "-z", "zstd", "rt.2.1", "print.txt")
        self.run("refcnt-trace", "print", "rt", out="print2.txt")
        self.same(
            'print, then make from its text: the same events (zstd too)',
            'print.txt',
            'print2.txt')
        self.run("refcnt-trace", *PHYS_TIME_CODE, "-t", "0", "-n", "2", "-N",
                 "0", "-z", "gzip", "rt0", "print.txt")
        name = "make from print's text: byte for byte the same file (gzip too)"
        want = self.raw("policy.2.0")
        if self.raw("rt.2.0") == want and gunzip(self.raw("rt0.gz")) == want:
            self.w.ok(name)
        else:
            self.w.notok(name, [cmp("rt.2.0", "policy.2.0", self.work)])
        self.run("refcnt-trace", "info", "policy", out="info.txt")
        self.expect(
            'info: accesses, loads, stores, code, markers per thread',
            'info.txt',
            '  format refcnt v1, none, node 0, threads 2, flags phys time code',
            '  accesses 8: loads 7, stores 1',
            '  accesses 6: loads 5, stores 1',
            '  code blocks 1 (2 instructions), markers 0')

        # --- refcnt-sharing (data/README, "comm") -------------------------------------------

        self.run("refcnt-sharing", "-u", "mem.txt", "comm",
                 out="sharing.txt")
        self.expect(
            'sharing: phase 1: RAW, WAR, WAW, RAR, degree vectors',
            'sharing.txt',
            'R1TxL06: RAW accesses 2',
            'R1TxL08: WAR accesses 3',
            'R1TxL10: WAW accesses 1',
            'R1TxL11: RAR accesses 2',
            'R1TxL07: RAW sharing degree: 1:0 2:1 3:0',
            'R1TxL09: WAR invalidation degree: 1:1 2:1 3:1',
            'R1T1L06: RAW accesses 1',
            'R1T2L06: RAW accesses 1',
            'R1T0L08: WAR accesses 1',
            'R1T1L10: WAW accesses 1',
            'R1T0L11: RAR accesses 1',
            'R1T1L11: RAR accesses 1')
        self.expect(
            'sharing: phase 2 after the marker, and all phases',
            'sharing.txt',
            'R2TxL00: phase 2: from marker 0 (none) num 5 of thread 0 at 13 ns, events 5',
            'R2T0L06: RAW accesses 1',
            'R2TxL07: RAW sharing degree: 1:1 2:0 3:0',
            'RxTxL06: RAW accesses 3',
            'RxTxL08: WAR accesses 3',
            'RxTxL10: WAW accesses 1',
            'RxTxL11: RAR accesses 2',
            'RxTxL07: RAW sharing degree: 1:1 2:1 3:0',
            'RxTxL09: WAR invalidation degree: 1:1 2:1 3:1')
        self.expect(
            'sharing: loads and stores by size, strings',
            'sharing.txt',
            'RxTxL01: memory accesses 14: loads 10 (71.4%), stores 4 (28.6%)',
            'R1T0L01: memory accesses 5: loads 3 (60.0%), stores 2 (40.0%)',
            'RxTxL02: load doubleword: 10 (100.0%)',
            'R1T0L04: load strings 1, by length: 3:1',
            'R1T0L05: store strings 1, by length: 2:1',
            'R1T1L04: load strings 2, by length: 1:1 2:1',
            'R2T0L04: load strings 1, by length: 1:1',
            'R2T0L12: instructions fetched 8 in 2 blocks')
        self.expect(
            "sharing: the memory usage summary (CIAT's 20 items)",
            'sharing.txt',
            'RxTxL21: touched pages 3',
            'RxTxL22: shared pages 2',
            'RxTxL24: touched bytes 40',
            'RxTxL25: touched data bytes 24',
            'RxTxL26: touched code bytes 16',
            'RxTxL27: shared bytes 32',
            'RxTxL28: page-shared bytes 32',
            'RxTxL30: memory accesses 26',
            'RxTxL31: data accesses 14',
            'RxTxL32: data accesses to shared locations 13',
            'RxTxL33: data accesses to shared pages 13',
            'RxTxL35: code accesses (instructions) 12',
            'RxTxL36: code accesses to shared locations 12',
            'RxTxL39: data locality index 4.67',
            'RxTxL40: code locality index 3.00')
        self.same(
            'sharing: the memory usage file, one record per touched page',
            '@D/comm.memory',
            'mem.txt')
        self.run("refcnt-sharing", "--shared-range", "0x2000+0x1000", "comm",
                 out="range.txt")
        self.expect(
            'sharing: --shared-range makes page 0x2 range-shared',
            'range.txt',
            'RxTxL23: range-shared pages 3',
            'RxTxL29: range-shared bytes 40',
            'RxTxL34: data accesses to range-shared pages 14',
            'RxTxL22: shared pages 2')
        self.run("refcnt-sharing", "--json", "comm",
                 out="sharing.json")
        self.expect(
            'sharing --json: the same figures',
            'sharing.json',
            (' "all": {"phase": "x", "events": 17, "threads": [{"loads": 4, "stores": 2, '
             '"loads_by_size": {"fixed 8": 4}, "load_strings": {"1": 1, "3": 1}, '
             '"stores_by_size": {"fixed 8": 2}, "store_strings": {"2": 1}, "raw": 1, "war": 1, '
             '"waw": 0, "rar": 1, "code_blocks": 2, "instructions": 8}, {"loads": 3, "stores": '
             '1, "loads_by_size": {"fixed 8": 3}, "load_strings": {"1": 1, "2": 1}, '
             '"stores_by_size": {"fixed 8": 1}, "store_strings": {"1": 1}, "raw": 1, "war": 1, '
             '"waw": 1, "rar": 1, "code_blocks": 1, "instructions": 4}, {"loads": 3, "stores": '
             '1, "loads_by_size": {"fixed 8": 3}, "load_strings": {"1": 1, "2": 1}, '
             '"stores_by_size": {"fixed 8": 1}, "store_strings": {"1": 1}, "raw": 1, "war": 1, '
             '"waw": 0, "rar": 0, "code_blocks": 0, "instructions": 0}], "all": {"loads": 10, '
             '"stores": 4, "loads_by_size": {"fixed 8": 10}, "load_strings": {"1": 3, "2": 2, '
             '"3": 1}, "stores_by_size": {"fixed 8": 4}, "store_strings": {"1": 2, "2": 1}, '
             '"raw": 3, "war": 3, "waw": 1, "rar": 2, "code_blocks": 3, "instructions": 12}, '
             '"raw_sharing_degree": [1, 1, 0], "war_invalidation_degree": [1, 1, 1]},'))
        self.run("refcnt-sharing", "--csv", "@D/policy.csv", "-u", "nmem.txt",
                 out="nodes.txt")
        self.expect(
            'sharing from the counters: node-level summary and node x node matrix',
            'nodes.txt',
            'RxTxL21: touched pages 4',
            'RxTxL22: shared pages 2 (referenced from more than one node)',
            'RxTxL31: data accesses 14 (and 0 lost to pegging)',
            'RxTxL33: data accesses to shared pages 8',
            'RxTxL41: n0                 3             2',
            'RxTxL41: n1                 2             3',
            'RxTxL42: n0                 8             6',
            'RxTxL42: n1                 2             6')
        self.expect(
            'sharing from the counters: the node-level memory usage file',
            'nmem.txt',
            '0x10 -1 -1 -1 4 -1 4 -1 -1 0',
            '0x121 -1 -1 -1 4 -1 0 -1 1 1',
            '0x131 -1 -1 -1 2 -1 0 -1 0 1')

        # --- refcnt-policy (data/README, "policy") ------------------------------------------

        self.run("refcnt-policy", "policy",
                 out="policy.txt")
        self.expect(
            'policy from a trace, data: now, first touch, rr1, rr2, oracle, majority',
            'policy.txt',
            'data references 14 on 4 pages (2 shared); memory on nodes 0,1',
            'now                      10              4    71.4%    28.6%',
            'first-touch              10              4    71.4%    28.6%',
            'rr1                       8              6    57.1%    42.9%',
            'oracle                   10              4    71.4%    28.6%',
            'majority                 12              2    85.7%    14.3%',
            ('interleaving (rr1) would make 43% of references remote, first touch 29%, oracle '
             'placement 29%, the best static placement 14%; now 29%'))
        self.expect(
            'policy from a trace, with the instructions: code replicated by rr2 and oracle',
            'policy.txt',
            ('with the instructions: 18 references on 5 pages (1 of code, replicated by rr2 '
             'and oracle)'),
            'now                       -              -        -        -',
            'first-touch              12              6    66.7%    33.3%',
            'rr1                      10              8    55.6%    44.4%',
            'rr2                      12              6    66.7%    33.3%',
            'oracle                   14              4    77.8%    22.2%',
            'majority                 14              4    77.8%    22.2%')
        self.run("refcnt-policy", "--csv", "@D/policy.csv",
                 out="pcsv.txt")
        self.expect(
            'policy from the counters: first touch unknown, private = one node',
            'pcsv.txt',
            'now                      10              4    71.4%    28.6%',
            'first-touch               -              -        -        -',
            'rr1                       8              6    57.1%    42.9%',
            'oracle                   10              4    71.4%    28.6%',
            'majority                 12              2    85.7%    14.3%')
        self.run("refcnt-policy", "--json", "policy",
                 out="policy.json")
        self.expect(
            'policy --json',
            'policy.json',
            ('{"source": "trace", "llc": null, "memory_nodes": [0, 1], "result": {"with_code": '
             'false, "references": 14, "pages": 4, "shared_pages": 2, "code_pages": 0, '
             '"now_unknown": 0, "policies": {"now": {"local": 10, "remote": 4, "local_pct": '
             '71.43}, "first-touch": {"local": 10, "remote": 4, "local_pct": 71.43}, "rr1": '
             '{"local": 8, "remote": 6, "local_pct": 57.14}, "rr2": {"local": 8, "remote": 6, '
             '"local_pct": 57.14}, "oracle": {"local": 10, "remote": 4, "local_pct": 71.43}, '
             '"majority": {"local": 12, "remote": 2, "local_pct": 85.71}}}, "with_code": '
             '{"with_code": true, "references": 18, "pages": 5, "shared_pages": 3, '
             '"code_pages": 1, "now_unknown": 4, "policies": {"now": null, "first-touch": '
             '{"local": 12, "remote": 6, "local_pct": 66.67}, "rr1": {"local": 10, "remote": '
             '8, "local_pct": 55.56}, "rr2": {"local": 12, "remote": 6, "local_pct": 66.67}, '
             '"oracle": {"local": 14, "remote": 4, "local_pct": 77.78}, "majority": {"local": '
             '14, "remote": 4, "local_pct": 77.78}}}}'))
        self.run("refcnt-policy", "--llc", "4K:1", "policy",
                 out="pllc.txt")
        self.expect(
            'policy --llc: only the misses of a per-node cache count',
            'pllc.txt',
            'data LLC misses 9 on 4 pages (2 shared); memory on nodes 0,1',
            'now                       5              4    55.6%    44.4%')

        # --- refcnt-replay (dry runs; the guest test injects) -------------------------------

        self.run("refcnt-replay", "-n", "--ram", "0:1,1:1", "-o", "replay.csv",
                 "policy",
                 out="replay.out")
        self.same(
            'replay as traced: the table the trace implies (data/policy.csv)',
            '@D/policy.csv',
            'replay.csv')
        self.expect(
            'replay: what was delivered, and how',
            'replay.out',
            'refcnt-replay: 14 references for 4 sets in 1 calls (9 entries), placed as traced')
        self.run("refcnt-replay", "-n", "--ram", "0:1,1:1", "-p", "first-touch",
                 "-o", "ft.csv", "policy",
                 out=os.devnull)
        self.expect(
            "replay placed first-touch: pages on frames of the first toucher's node",
            'ft.csv',
            '0,0x0,0,0,4,3,1,0',
            '1,0x1000,0,0,2,2,0,0',
            '0,0x100000,1,1,4,0,4,0',
            '1,0x101000,1,1,4,3,1,0')
        self.run("refcnt-replay", "-n", "--ram", "0:1,1:1", "-p", "rr1", "-o",
                 "rr.csv", "policy",
                 out=os.devnull)
        self.expect(
            'replay placed rr1: pages by page number over the memory nodes',
            'rr.csv',
            '0,0x0,0,0,4,3,1,0',
            '0,0x100000,1,1,4,0,4,0',
            '1,0x101000,1,1,2,2,0,0',
            '2,0x102000,1,1,4,3,1,0')
        self.run("refcnt-trace", "make", "--phys", "-N", "0", "hot",
                 stdin="repeat 1000\nload 8 0x5000 paddr 0x5000 node 0\n")
        self.run("refcnt-replay", "-n", "--ram", "0:1", "hot",
                 out="hot.out")
        self.expect(
            'replay: at most max - threshold + 1 = 256 references a counter per call',
            'hot.out',
            'refcnt-replay: 1000 references for 1 sets in 4 calls (4 entries), placed as traced')

        # --- refcnt-tdist (data/README, "tdist") --------------------------------------------

        self.run("refcnt-tdist", "--bin", "10", "--classes", "3", "--bins",
                 "bins.txt", "--text", "@D/events.txt",
                 out="td.txt")
        self.expect(
            'tdist: total, bins, rates, standard deviation, density, distribution',
            'td.txt',
            'events 7, bin width 10 clock units, bins 5 (from 0 to 50 clock units)',
            'rate (events per bin): average 1.4, minimum 0, maximum 3, standard deviation 1.0198',
            '  [0, 1)                            1     0.2000       0.2000',
            '  [1, 2)                            2     0.4000       0.6000',
            '  [2, 3]                            2     0.4000       1.0000')
        self.write("bins.want", "# bin_start(clock units) events; bin width 10\n"
                   "0 3\n10 2\n20 1\n30 0\n40 1\n")
        self.same("tdist: the bins file (TDAT's event.time)", 'bins.want', 'bins.txt')
        self.run("refcnt-tdist", "--bin", "4", "--clock", "records", "--per", "2",
                 "--json", "--plot", "td.png", "policy",
                 out="tdj.txt")
        self.expect(
            'tdist on trace records, per 2 processors, JSON',
            'tdj.txt',
            ('{"events": 14, "bin_width": 4, "unit": "records", "bins": 4, "first_bin_start": '
             '0, "per": 2, "average_rate": 1.75, "min_rate": 1.5, "max_rate": 2, "stddev": '
             '0.25, "classes": [{"from": 1.5, "to": 1.55, "bins": 2, "density": 0.5, '
             '"distribution": 0.5}, {"from": 1.55, "to": 1.6, "bins": 0, "density": 0, '
             '"distribution": 0.5}, {"from": 1.6, "to": 1.65, "bins": 0, "density": 0, '
             '"distribution": 0.5}, {"from": 1.65, "to": 1.7, "bins": 0, "density": 0, '
             '"distribution": 0.5}, {"from": 1.7, "to": 1.75, "bins": 0, "density": 0, '
             '"distribution": 0.5}, {"from": 1.75, "to": 1.8, "bins": 0, "density": 0, '
             '"distribution": 0.5}, {"from": 1.8, "to": 1.85, "bins": 0, "density": 0, '
             '"distribution": 0.5}, {"from": 1.85, "to": 1.9, "bins": 0, "density": 0, '
             '"distribution": 0.5}, {"from": 1.9, "to": 1.95, "bins": 0, "density": 0, '
             '"distribution": 0.5}, {"from": 1.95, "to": 2, "bins": 2, "density": 0.5, '
             '"distribution": 1}]}'))
        if self.raw("td.png")[:4] == b"\x89PNG":
            self.w.ok("tdist --plot: a PNG")
        else:
            self.w.notok("tdist --plot: a PNG", [ls_la(self.path("td.png"))])

        # --- refcnt-conflicts: MACPO's controlled trace ---------------------------------------

        # 10 rounds over 8 rows of two arrays 4 KiB apart: all in set 0 of the l1.
        self.run("refcnt-trace", "make", "ctl", stdin=two_arrays(0))
        self.run("refcnt-conflicts", "--regions", "@D/conflict.regions", "ctl",
                 out="ctl.txt")
        self.expect(
            'conflicts: two arrays in the same sets, 8 x 9 conflict misses each',
            'ctl.txt',
            'accesses 160: hits 0 (0.0%), cold 16, capacity 0, conflict 144 misses',
            ('  set 0: 144 conflicts of 160 accesses (hits 0, cold 16, capacity 0); reuse '
             '8-15:144 cold:16; [A 72, B 72]'),
            '  A                            80          0        8         0        72',
            '  B                            80          0        8         0        72')
        self.run("refcnt-trace", "make", "pad", stdin=two_arrays(64))
        self.run("refcnt-conflicts", "--regions", "@D/conflict.regions", "pad",
                 out="pad.txt")
        self.expect(
            'conflicts: the second array 64 bytes further (set 1): no conflict',
            'pad.txt',
            'accesses 160: hits 144 (90.0%), cold 16, capacity 0, conflict 0 misses')
        self.run("refcnt-trace", "make", "cap", stdin=lines_twice(600))
        self.run("refcnt-conflicts", "cap",
                 out="cap.txt")
        self.expect(
            'conflicts: 600 lines twice through 512: capacity misses',
            'cap.txt',
            'accesses 1200: hits 0 (0.0%), cold 600, capacity 600, conflict 0 misses')
        self.run("refcnt-conflicts", "--json", "--cache", "8K:64:2", "--regions",
                 "@D/conflict.regions", "ctl",
                 out="ctlj.txt")
        self.expect(
            'conflicts --json, another geometry',
            'ctlj.txt',
            ('{"cache": {"size": 8192, "line": 64, "ways": 2, "sets": 64, "shared_by": '
             '"thread", "caches": 1, "addresses": "virtual"},'))
        if shutil.which("valgrind") and self.call(
                ["cc", "-O2", "-static", "-o", "ca",
                 f"{self.root}/examples/conflict-arrays.c"],
                err=os.devnull) == 0:
            self.call(["valgrind", "--tool=lackey", "--trace-mem=yes",
                       "--log-file=lackey.out", "./ca", "10"], out=os.devnull,
                      err=os.devnull)
            self.call(["nm", "-S", "ca"], out="ca.sym")
            self.run("refcnt-conflicts", "--regions", "ca.sym", "lackey.out",
                     out="lk.txt")
            self.expect(
                "conflicts on lackey's trace of examples/conflict-arrays",
                'lk.txt',
                '  array_b                      80          0        8         0        72',
                '  array_a                      80          0        8         0        72')
        else:
            self.w.notok("conflicts on lackey's trace of examples/"
                         "conflict-arrays", ["no valgrind or no static libc "
                                             "(tools/testing/refcnt-setup deps)"])

        # --- bad traces ----------------------------------------------------------------------

        self.write("cut.2.0", self.raw("policy.2.0")[:100])
        self.write("cut.2.1", self.raw("policy.2.1"))
        self.fails(
            'a trace cut inside a record',
            'cut\\.2\\.0: record 12: truncated: the file ends 4 bytes into the record',
            'mem2.txt',
            ['@T/refcnt-sharing', '-u', 'mem2.txt', 'cut'])
        self.write("cut2", self.raw("policy.2.0")[:96])
        self.fails(
            'a trace without its end-of-trace record',
            'cut2: truncated: no end-of-trace record after record 11',
            '',
            ['@T/refcnt-policy', '--map', '0=0', 'cut2'])
        self.run("refcnt-trace", "make", "garbled",
                 stdin="load 8 0x10\nraw 0x12345678 0\n")
        self.fails(
            'a garbled type field',
            'garbled: record 7: unknown type field 0x12345678',
            'bins2.txt',
            ['@T/refcnt-tdist', '--bin', '1', '--clock', 'records', '--bins',
             'bins2.txt', 'garbled'])
        self.run("refcnt-trace", "make", "garbled2",
                 stdin="load 8 0x10\nraw 0x1170 0\n")
        self.fails(
            'a call record broken off',
            ('garbled2: record 8: type field 0x00001180 where simple record 1 of the call '
             'record of type 0x17 at record 7'),
            '',
            ['@T/refcnt-conflicts', 'garbled2'])
        self.write("empty", "")
        self.fails(
            'an empty file',
            'empty: empty: not a trace',
            '',
            ['@T/refcnt-trace', 'info', 'empty'])
        self.run("refcnt-trace", "make", "-z", "zstd", "z", stdin="load 8 0x10\n")
        self.write("zcut.zst", self.raw("z.zst")[:30])
        self.fails(
            'a cut zstd stream',
            'zcut.zst: .*zstd stream is truncated',
            '',
            ['@T/refcnt-trace', 'print', 'zcut.zst'])
        self.run("refcnt-trace", "make", "-z", "gzip", "g", stdin="load 8 0x10\n")
        self.write("gcut.gz", self.raw("g.gz")[:40])
        self.fails(
            'a cut gzip stream',
            'gcut.gz: record [0-9]+: the gzip stream is truncated',
            '',
            ['@T/refcnt-trace', 'info', 'gcut.gz'])
        self.run("refcnt-trace", "make", "--phys", "orphan",
                 stdin="raw 0x22000000 5\nraw 0x23000000 5\n")
        self.fails(
            'a physical-page record without its access',
            'orphan: record 6: a physical-page record not followed by a memory access',
            '',
            ['@T/refcnt-trace', 'info', 'orphan'])
        self.write("lk.bad", "==1== lackey\n L 1ffefffb68,8\n X 12,8\n")
        self.fails(
            'a bad lackey line',
            'lk.bad: line 3: not a lackey record',
            '',
            ['@T/refcnt-conflicts', 'lk.bad'])
        self.write("bad.csv", "set,paddr,node,cnodeid,refs,n0,lost\n"
                   "0,0x1000,0,0,1,x,0\n")
        self.fails(
            'a bad counter table',
            'bad.csv: line 2: not a row of the table',
            '',
            ['@T/refcnt-policy', '--csv', 'bad.csv'])
        self.write("noclock.txt", "1\nx\n")
        self.fails(
            'an event text without a clock',
            'line 2: does not start with a clock',
            'bins3.txt',
            ['@T/refcnt-tdist', '--bin', '1', '--bins', 'bins3.txt', '--text',
             '@W/noclock.txt'])

        # --- a trace larger than the memory the reader may use ------------------------------

        # 50 million accesses: 400 MB of records, a few MB as zstd; read under a
        # 200 MB address-space limit, so it cannot be loaded whole.
        self.run("refcnt-trace", "make", "-z", "zstd", "big",
                 stdin="repeat 50000000\nload 8 0x7fff0000\n")
        self.run("refcnt-trace", "info", "--progress", "big.zst", out="big.txt",
                 err="big.err", limit_kib=200000)
        self.expect(
            'a 400 MB trace read in 200 MB: streamed',
            'big.txt',
            '  accesses 50000000: loads 50000000, stores 0')
        self.run("refcnt-conflicts", "--json", "big.zst", out="bigc.txt",
                 err="bigc.txt", limit_kib=200000)
        self.expect(
            'the analyses stream it too',
            'bigc.txt',
            (' "total": {"accesses": 50000000, "hits": 49999999, "cold": 1, "capacity": 0, '
             '"conflict": 0, "reuse": {"0": 49999999, "1": 0, "2-3": 0, "4-7": 0, "8-15": 0, '
             '"16-31": 0, "32-63": 0, "64-127": 0, "128-255": 0, "beyond": 0, "cold": 1}},'))
        if re.search(r"refcnt-trace: [0-9.]*M events \(", self.text("big.err")):
            self.w.ok("a progress line on long traces")
        else:
            self.w.notok("a progress line on long traces",
                         ["stderr: " + H.head_bytes(self.path("big.err"), 300)])


def main(argv: Sequence[str], root: str) -> int:
    build = H.build_dir(root)
    o = H.parse(argv, values=("--guest", "--log"))
    guest = o.values.get("--guest", "")
    log = o.values.get("--log", f"{build}/logs/trace-guest.log")
    tools = f"{build}/tools"
    for t in TOOLS:
        if not os.access(f"{tools}/{t}", os.X_OK):
            raise H.Die(f"no {tools}/{t} (make tools)")
    work = tempfile.mkdtemp(prefix="trace-check.",
                            dir=os.environ.get("TMPDIR") or "/tmp")
    w = Writer()
    try:
        h = Host(root, tools, work, w)
        h.tests(traceguest.TESTS if guest else 0)
        if guest:
            traceguest.run(h, build, guest, log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if w.failed == 0 else 1


def entry(argv: Sequence[str], root: str) -> int:
    return H.entry(PROG, main, argv, root, USAGE)
