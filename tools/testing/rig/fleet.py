# SPDX-License-Identifier: GPL-2.0
"""fleet-check: the fleet tests (pmdarefcnt under a real pmcd,
refcnt-exporter checked by promtool) in one boot of the Debian guest.

Boots refcnt-vm --debian-pkgs with pcp and prometheus on one kernel, with
the module, librefcnt, the tools, the PMDA and the test helper, and runs
tools/testing/fleet/fleet-guest (shell, in the guest) there.  Its TAP goes
to stdout (and --log); tap-summary counts it.  The host checks of the
same agents are refcnt-fleet-check (rig.fleethost)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import List

from . import guestout as G

PROG = "fleet-check"
# The Debian packages the fleet tests run: pmcd, pminfo, pmval, dbpmda
# (pcp) and promtool (prometheus).
FLEET_PKGS = "pcp prometheus"
FLEET = G.tool("fleet")
SKIPPED = 77

USAGE = """\
Usage: {prog} [--kernel VER] [--topology SPEC] [--log FILE] [--timeout SECS] [-v]
       {prog} --root-only

Boot the Debian guest (refcnt-vm --debian-pkgs "{pkgs}") once and
run the fleet tests there, TAP on stdout:
  - pmcd started from its init script; pmdarefcnt installed with its
    Install script; after injected references, pminfo -f refcnt equals the
    module's statistics and RCB_SETS_READ sums exactly; pmval's rate over
    two samples is the references injected between them; a dbpmda session
    checks descriptors and help text
  - refcnt-exporter: promtool check metrics passes; values equal the
    module's; the --textfile file is never seen half-written
  - refcnt.ko unloaded and loaded again under a running pmcd and exporter
  - bad input to both: one line on stderr, non-zero exit
Until the PMDA and the exporter are built, only pmcd, pminfo and promtool
themselves are checked.

Options:
  --kernel VER     guest kernel (default: the first of refcnt-setup kernels)
  --topology SPEC  refcnt-vm topology (default: four)
  --log FILE       the guest's serial log (default: build/logs/fleet-VER.log)
  --timeout SECS   guest time limit (default 900)
  -v, --verbose    stream the guest's console, not only the TAP lines
  --root-only      build the Debian root the tests boot on (if it is not
                   cached) and exit: make check starts it in the
                   background, beside the other steps

The first run builds the Debian root (tools/testing/refcnt-debian-root;
root needed, 1 to 8 minutes depending on the mirror); later runs boot the
cached image.  Exit status: refcnt-vm's (0 iff every test passed and the
guest kernel stayed clean); 77 (nothing run) when the Debian root is not
built and this is not root, who alone can build it.
"""


@dataclass
class Config:
    kernel: str
    build: str
    topology: str = "four"
    log: str = ""
    timeout: int = 900
    verbose: bool = False


def vm_cmd(c: Config, have: List[str]) -> List[str]:
    """refcnt-vm's command line; HAVE: which of the build's lib, tools
    and pmda directories exist."""
    b = c.build
    files = ["--file", f"{FLEET}:/refcnt/fleet",
             "--file", f"{b}/fleet/fleet-ref:/refcnt/fleet/fleet-ref",
             "--file", f"{G.tool('lib')}:/refcnt/fleet/lib"]
    # The PMDA as 'make pmda' leaves it: binary, Install, Remove, pmns, help.
    for d in ("lib", "tools", "pmda"):
        if d in have:
            files += ["--file", f"{b}/{d}:/refcnt/{d}"]
    args = ["--debian-pkgs", FLEET_PKGS, "--kernel", c.kernel, "--topology",
            c.topology, "--module", f"{b}/{c.kernel}/refcnt.ko", "--timeout",
            str(c.timeout), "--log", c.log]
    if not c.verbose:
        args.append("--quiet")
    return [G.tool("refcnt-vm"), *args, *files, "--",
            "/refcnt/fleet/fleet-guest"]


def tap_lines(log: str) -> str:
    """The TAP lines and the guest's own diagnostics of a serial log, not
    the kernel's console nor the dmesg refcnt-vm appends."""
    out = []
    for ln in log.split("\n"):
        if ln.startswith("===== refcnt-vm: guest dmesg"):
            break
        if re.match(r"(ok|not ok|1\.\.|#|Bail out!)", ln) and \
                not ln.startswith("# live: "):
            out.append(ln + "\n")
    return "".join(out)


def fleet_ref(build: str) -> None:
    """The helper: static, so it needs nothing of the guest."""
    src, binary = f"{FLEET}/fleet-ref.c", f"{build}/fleet/fleet-ref"
    os.makedirs(os.path.dirname(binary), exist_ok=True)
    if os.access(binary, os.X_OK) and \
            os.path.getmtime(src) <= os.path.getmtime(binary):
        return
    if subprocess.call(["gcc", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-static", f"-I{G.ROOT}/uapi", "-o", binary,
                        src]) != 0:
        raise G.Die("cannot build fleet-ref")


def debian_root(*args: str) -> List[str]:
    return [G.tool("refcnt-debian-root"), "--pkgs", FLEET_PKGS, *args]


def main(argv: List[str]) -> int:
    if "--root-only" in argv[:next((i for i, a in enumerate(argv)
                                    if a in ("-h", "--help")), len(argv))]:
        os.execv(debian_root()[0], debian_root())
    try:
        o = G.parse_opts(argv, {"--kernel": "", "--topology": "four",
                                "--log": "", "--timeout": "900"},
                         flags=("--verbose",))
    except G.HelpAsked:
        sys.stdout.write(USAGE.format(prog=PROG, pkgs=FLEET_PKGS))
        return 0
    build = G.build_dir()
    kernel = o["--kernel"] or G.first_kernel()
    c = Config(kernel=kernel, build=build, topology=o["--topology"],
               log=o["--log"] or f"{build}/logs/fleet-{kernel}.log",
               timeout=int(o["--timeout"]), verbose="--verbose" in o)
    ko = f"{build}/{kernel}/refcnt.ko"
    if not os.path.isfile(ko):
        raise G.Die(f"no {ko} (make module KVER={kernel})")
    if os.geteuid() != 0 and subprocess.call(debian_root("--cached")) != 0:
        print(f"{PROG}: the Debian root for '{FLEET_PKGS}' is not built and "
              "only root can build it (run this once as root)",
              file=sys.stderr)
        return SKIPPED
    fleet_ref(build)
    have = [d for d in ("lib", "tools", "pmda")
            if os.path.isdir(f"{build}/{d}")]
    os.makedirs(os.path.dirname(c.log) or ".", exist_ok=True)
    cmd = vm_cmd(c, have)
    if c.verbose:
        os.execv(cmd[0], cmd)
    rc = subprocess.call(cmd, stdin=subprocess.DEVNULL)
    sys.stdout.write(tap_lines(G.read(c.log)))
    return rc
