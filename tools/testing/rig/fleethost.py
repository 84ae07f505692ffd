# SPDX-License-Identifier: GPL-2.0
"""refcnt-fleet-check: host checks of the fleet agents, no module needed
(make check runs them; the values against the module are checked in the
guests: the selftest exporter_test in the busybox guest, pmcd and
promtool in the Debian one):

- refcnt-exporter's text formats from a made-up snapshot
  (tools/testing/fleet/omtext_test.c), parsed by prometheus_client's
  Prometheus and OpenMetrics parsers (python3-prometheus-client) and, if
  there is one, promtool;
- refcnt-exporter's bad input and its answer without the module: one
  line on stderr, the exit status of its man page; served over HTTP,
  refcnt_up 0, OpenMetrics when the Accept header asks;
- pmdarefcnt's files: every name of the PMNS has help text and nothing
  else has; with PCP's tools installed (package pcp), the PMNS loads and
  a dbpmda session gets every metric's descriptor and help text from the
  agent, and refcnt.loaded 0 with no other values.

TAP on stdout; exit status 0 when nothing failed."""
from __future__ import annotations

import collections
import glob
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import List, Optional, Sequence, Tuple

from .tapout import Writer

PROG = "refcnt-fleet-check"
OMTEXT_CHECKS = 18
FAMILIES = 28
NOBODY = "65534"
DOMAIN = "#define REFCNT 510"


def pmns_names(text: str) -> List[str]:
    """The metric names (refcnt.a.b) of a PMNS file: the leaves of each
    "ns {" block, the lines of two fields."""
    names, ns = [], ""
    for line in text.split("\n"):
        if re.match(r"[a-z.]+ \{", line):
            ns = line.split()[0]
        elif line.startswith("}"):
            ns = ""
        elif ns and len(line.split()) == 2:
            names.append(f"{ns}.{line.split()[0]}")
    return names


def help_names(text: str) -> List[str]:
    """The metrics of a PMDA help file ("@ refcnt.x.y text")."""
    return [m.group(1) for m in
            re.finditer(r"^@ (refcnt\.[a-z_.]*) ", text, re.MULTILINE)]


def missing_extra(names: Sequence[str],
                  helps: Sequence[str]) -> Tuple[List[str], List[str]]:
    """What comm(1) says of the two sorted lists: names without help
    text, help text of no name."""
    a, b = collections.Counter(names), collections.Counter(helps)
    return sorted((a - b).elements()), sorted((b - a).elements())


def indom_helps(text: str) -> int:
    return len(re.findall(r"^@ REFCNT\.[0-3] ", text, re.MULTILINE))


def lines(text: str) -> List[str]:
    out = text.split("\n")
    return out[:-1] if out and out[-1] == "" else out


def http_ok_004(r: str) -> bool:
    """An answer without the module in the 0.0.4 text format."""
    ls = r.split("\n")
    return ("HTTP/1.1 200 OK\r" in ls and "refcnt_up 0" in ls
            and "text/plain; version=0.0.4" in r and "# EOF" not in r)


def http_openmetrics(r: str) -> bool:
    ls = lines(r.rstrip("\n"))
    return ("application/openmetrics-text; version=1.0.0" in r
            and bool(ls) and ls[-1] == "# EOF")


def dbpmda_complete(out: str, n: int) -> bool:
    """A descriptor (its Semantics line) for each of N metrics, and no
    metric unknown or without help text."""
    sem = sum(1 for line in out.split("\n")
              if line.startswith("    Semantics: "))
    return (sem == n and "not available" not in out
            and "Unknown metric" not in out)


def dbpmda_no_module(out: str) -> bool:
    """refcnt.loaded 0 (on its line or the next), two fetches with no
    values."""
    ls = out.split("\n")
    loaded = any("value 0 " in ls[j]
                 for i, line in enumerate(ls) if re.search("refcnt.loaded",
                                                           line)
                 for j in (i, i + 1) if j < len(ls))
    return loaded and sum("No values returned" in x for x in ls) == 2


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def head_bytes(path: str, n: int) -> str:
    """$(head -c N FILE): its first N bytes, trailing newlines dropped."""
    try:
        with open(path, "rb") as f:
            data = f.read(n)
    except OSError:
        return ""
    return data.decode(errors="replace").rstrip("\n")


def call(cmd: Sequence[str], out: str, err: str) -> int:
    """CMD with stdout to OUT and stderr to ERR, stdin empty; 127 and a
    line in ERR when it cannot run, as the shell says it."""
    with open(out, "wb") as o, open(err, "wb") as e:
        try:
            return subprocess.call(cmd, stdout=o, stderr=e,
                                   stdin=subprocess.DEVNULL)
        except OSError as x:
            e.write(f"{PROG}: {cmd[0]}: {x.strerror}\n".encode())
            return 126 if isinstance(x, PermissionError) else 127


def get(port: int, accept: Optional[str] = None) -> str:
    """GET /metrics on PORT (with an Accept header): the whole answer,
    read until the server closes (10 s at most); "" if none."""
    req = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n"
    if accept:
        req += f"Accept: {accept}\r\n"
    data = b""
    try:
        with socket.create_connection(("127.0.0.1", port), 10) as s:
            s.sendall((req + "\r\n").encode())
            end = time.monotonic() + 10
            while time.monotonic() < end:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        pass
    return data.decode(errors="replace")


def wait_port(port: int) -> bool:
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def parse_both(prom: str, om: str) -> str:
    """prometheus_client's two parsers over the formats: the number of
    families, or the error as Python's traceback ends."""
    try:
        from prometheus_client.openmetrics.parser import \
            text_string_to_metric_families as om_parse
        from prometheus_client.parser import \
            text_string_to_metric_families as prom_parse
        # Their parsers are not annotated.
        a = list(prom_parse(read(prom)))  # type: ignore[no-untyped-call]
        b = list(om_parse(read(om)))  # type: ignore[no-untyped-call]
        if not len(a) == len(b) == FAMILIES:
            raise AssertionError((len(a), len(b)))
        return f"{len(a)} families"
    except Exception as e:
        return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def have_module(name: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(name) is not None


class Check:
    def __init__(self, root: str, build: str, tmp: str, tap: Writer) -> None:
        self.root, self.build, self.tmp, self.tap = root, build, tmp, tap
        self.exporter = os.path.join(build, "tools/refcnt-exporter")
        self.pmda = os.path.join(build, "pmda")
        self.port = 20000 + os.getpid() % 20000
        self.procs: List[subprocess.Popen[bytes]] = []

    def t(self, name: str) -> str:
        return os.path.join(self.tmp, name)

    def src(self, name: str) -> str:
        return os.path.join(self.root, name)

    def exporter_fails(self, want: int, what: str, *args: str) -> None:
        """The exporter exits WANT with one line on stderr."""
        rc = call([self.exporter, *args], self.t("out"), self.t("err"))
        self.tap.ok_if(rc == want and read(self.t("err")).count("\n") == 1,
                       f"{what}: exit {want} (got {rc}), one line: "
                       f"{head_bytes(self.t('err'), 200)}")

    def promtool(self, metrics: str) -> None:
        if shutil.which("promtool") is None:
            return
        with open(metrics, "rb") as i, open(self.t("prom"), "wb") as o:
            rc = subprocess.call(["promtool", "check", "metrics"], stdin=i,
                                 stdout=o, stderr=subprocess.STDOUT)
        self.tap.ok_if(rc == 0, "promtool check metrics: "
                       f"{head_bytes(self.t('prom'), 300)}")

    def build_omtext(self) -> bool:
        cc = os.environ.get("CC") or "gcc"
        s = self.src
        return subprocess.call([
            *cc.split(), "-O2", "-Wall", "-Wextra", "-Werror",
            "-D_GNU_SOURCE", f"-I{s('uapi')}", f"-I{s('lib/include')}",
            f"-I{s('tools/src')}", "-o", self.t("omtext_test"),
            s("tools/testing/fleet/omtext_test.c"), s("tools/src/omtext.c"),
            s("tools/src/rcsnap.c"), s("tools/src/rtools.c"),
            os.path.join(self.build, "lib/librefcnt.a"), "-lnuma", "-lm"],
            stdin=subprocess.DEVNULL) == 0

    def omtext(self, *args: str) -> str:
        p = subprocess.run([self.t("omtext_test"), *args],
                           stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        return p.stdout.decode(errors="replace")

    def formats(self) -> None:
        if not self.build_omtext():
            self.tap.notok("omtext_test builds")
            return
        out = lines(self.omtext())
        for line in out:
            self.tap.emit(f"# omtext: {line}")
        self.tap.ok_if(not any(x.startswith("not ok") for x in out) and
                       any(x.startswith(f"ok {OMTEXT_CHECKS} ") for x in out),
                       "exporter text formats (omtext_test, "
                       f"{OMTEXT_CHECKS} checks)")
        for name, args in (("fake.prom", ()), ("fake.om", ("--openmetrics",))):
            with open(self.t(name), "w") as f:
                f.write(self.omtext("--print", *args))
        what = "prometheus_client parses both formats"
        if have_module("prometheus_client"):
            said = parse_both(self.t("fake.prom"), self.t("fake.om"))
            self.tap.ok_if(said == f"{FAMILIES} families", f"{what}: {said}")
        else:
            self.tap.skip(what, "python3-prometheus-client is not installed")
        self.promtool(self.t("fake.prom"))

    def unwritable(self) -> None:
        """--textfile into a directory nobody cannot write to."""
        what = "--textfile unwritable directory"
        ro = self.t("ro")
        os.makedirs(ro, exist_ok=True)
        os.chmod(ro, 0o555)
        if os.getuid() != 0 or shutil.which("setpriv") is None:
            self.tap.skip(what, "needs root to drop to nobody")
            return
        rc = call(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                   "--clear-groups", self.exporter, "--textfile", ro,
                   "--once"], os.devnull, self.t("err"))
        err = read(self.t("err"))
        self.tap.ok_if(rc == 1 and err.count("\n") == 1
                       and "cannot write there" in err,
                       f"{what}: exit 1 (got {rc}), one line: "
                       f"{err.rstrip(chr(10))}")

    def serve(self) -> None:
        """An exporter on the port, for the port in use and HTTP."""
        self.procs.append(subprocess.Popen(
            [self.exporter, "--listen", f"127.0.0.1:{self.port}"],
            stderr=subprocess.DEVNULL))
        wait_port(self.port)

    def bad_input(self) -> None:
        if not os.access(self.exporter, os.X_OK):
            self.tap.notok(f"refcnt-exporter built ({self.exporter})")
            return
        fails = self.exporter_fails
        fails(2, "unknown option", "--no-such-option")
        fails(2, "unexpected argument", "stray")
        fails(2, "--hot out of range", "--hot", "1001")
        fails(2, "--interval not a number", "--interval", "soon")
        fails(1, "--textfile missing directory", "--textfile",
              self.t("none"), "--once")
        self.unwritable()
        fails(1, "--listen not an address", "--listen", "nowhere:80")
        self.serve()
        fails(1, "--listen port in use", "--listen",
              f"127.0.0.1:{self.port}")
        err = read(self.t("err"))
        self.tap.ok_if("in use" in err,
                       f"port in use is named: {err.rstrip(chr(10))}")

    def textfile_clean(self) -> bool:
        prom = read(self.t("refcnt.prom")).split("\n")
        left = glob.glob(self.t("*.tmp")) + glob.glob(self.t(".*.tmp"))
        return "refcnt_up 0" in prom and not left

    def no_module(self) -> None:
        if os.path.exists("/sys/module/refcnt"):
            self.tap.skip("exporter without the module",
                          "the refcnt module is loaded here")
            return
        self.exporter_fails(3, "stdout without the module")
        self.tap.ok_if("the refcnt module is not loaded"
                       in read(self.t("err")), "says the module is not loaded")
        self.exporter_fails(3, "--textfile --once without the module",
                            "--textfile", self.tmp, "--once")
        self.tap.ok_if(self.textfile_clean(), "the textfile says refcnt_up 0,"
                       " no temporary file left")
        self.tap.ok_if(http_ok_004(get(self.port)), "served without the "
                       "module: refcnt_up 0, text format 0.0.4")
        self.tap.ok_if(http_openmetrics(get(
            self.port, "application/openmetrics-text; version=1.0.0,"
            "text/plain;q=0.5")),
            "OpenMetrics when asked: its content type, ends with # EOF")
        if shutil.which("promtool") is not None:
            call([self.exporter, "--textfile", self.tmp, "--once"],
                 os.devnull, os.devnull)
            self.promtool(self.t("refcnt.prom"))

    def pmda_files(self) -> None:
        pmda = self.src("tools/pmda")
        names = sorted(pmns_names(read(os.path.join(pmda, "pmns"))))
        helps = read(os.path.join(pmda, "help"))
        n = len(names) or 1     # wc -l counts the empty list's line
        self.tap.ok_if(n >= 25, f"the PMNS names {n} metrics")
        missing, extra = missing_extra(names, sorted(help_names(helps)))
        self.tap.ok_if(not missing and not extra, "help text for every "
                       "metric, none for others" +
                       (f"; missing: {chr(10).join(missing)}" if missing
                        else "") +
                       (f"; extra: {chr(10).join(extra)}" if extra else ""))
        self.tap.ok_if(indom_helps(helps) == 4,
                       "help text for the 4 instance domains")
        self.tap.ok_if(all(os.access(os.path.join(pmda, x), os.X_OK)
                           for x in ("Install", "Remove")),
                       "Install and Remove are executable")
        self.tap.ok_if(all(DOMAIN in read(os.path.join(pmda, x)).split("\n")
                           for x in ("domain.h", "root")),
                       "domain 510 in domain.h and root")

    def dbpmda_input(self, names: Sequence[str]) -> str:
        t = self.t
        out = [f"open pipe {self.pmda}/pmdarefcnt -d 510 -h {t('help')} "
               f"-l {t('pmda.log')}"]
        for name in names:
            out += [f"desc {name}", f"text {name}"]
        out.append("fetch refcnt.loaded refcnt.node.references "
                   "refcnt.access.references")
        return "\n".join(out) + "\n"

    def pmda_help(self, newhelp: str) -> None:
        """The help text compiled as Install does, domain 510."""
        text = re.sub(r"^@ REFCNT\.", "@ 510.",
                      read(self.src("tools/pmda/help")), flags=re.MULTILINE)
        subprocess.run([newhelp, "-n", self.t("root"), "-o", self.t("help")],
                       input=text.encode())

    def dbpmda(self) -> None:
        newhelp = "/usr/lib/pcp/bin/newhelp"
        if shutil.which("dbpmda") is None or not os.access(newhelp, os.X_OK):
            self.tap.skip("dbpmda session",
                          "PCP's tools are not installed (package pcp)")
            return
        agent = os.path.join(self.pmda, "pmdarefcnt")
        if not os.access(agent, os.X_OK):
            self.tap.notok(f"pmdarefcnt built ({agent})")
            return
        for f in ("pmns", "root"):
            shutil.copy(self.src(f"tools/pmda/{f}"), self.tmp)
        rc = call(["pminfo", "-n", self.t("root"), "refcnt"], os.devnull,
                  self.t("err"))
        self.tap.ok_if(rc == 0, "the PMNS loads (pminfo -n root) "
                       f"{head_bytes(self.t('err'), 200)}")
        self.pmda_help(newhelp)
        names = pmns_names(read(self.src("tools/pmda/pmns")))
        out = subprocess.run(["dbpmda", "-n", self.t("root"), "-e"],
                             input=self.dbpmda_input(names).encode(),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT
                             ).stdout.decode(errors="replace")
        self.tap.ok_if(dbpmda_complete(out, len(names)), "dbpmda: a "
                       f"descriptor and help text for each of {len(names)} "
                       "metrics")
        self.tap.ok_if("Data Type: 64-bit unsigned int  InDom: 510.1 " in out
                       and "Semantics: counter  Units: count" in out,
                       "dbpmda: refcnt.access.references is a U64 counter "
                       "over indom 510.1")
        if os.path.exists("/sys/module/refcnt"):
            self.tap.skip("dbpmda without the module",
                          "the refcnt module is loaded here")
            return
        self.tap.ok_if(dbpmda_no_module(out), "dbpmda without the module: "
                       "refcnt.loaded 0, no other values")

    def run(self) -> int:
        self.tap.emit("TAP version 13")
        self.formats()
        self.bad_input()
        self.no_module()
        self.pmda_files()
        self.dbpmda()
        self.tap.plan(self.tap.n)
        return 1 if self.tap.failed else 0

    def stop(self) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def main(argv: Sequence[str], root: str) -> int:
    """refcnt-fleet-check [BUILD_DIR] (default build)."""
    build = os.path.abspath(argv[0] if argv else os.path.join(root, "build"))
    if not os.path.isdir(build):
        # The checks run and fail, naming what they miss there.
        print(f"{PROG}: {build}: No such directory", file=sys.stderr)
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    c = Check(root, build, tmp, Writer())
    try:
        return c.run()
    finally:
        c.stop()
        shutil.rmtree(tmp, ignore_errors=True)
