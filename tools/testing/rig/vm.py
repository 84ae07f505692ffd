# SPDX-License-Identifier: GPL-2.0
"""refcnt-vm: boot a kernel in QEMU with an emulated NUMA topology, load
refcnt.ko and run one command in the guest (see --help, and
Documentation/testing.rst).

REFCNT_VM_DRY_RUN=DIR (for the rig's tests) does everything up to
starting QEMU, then writes QEMU's arguments one a line to DIR/qemu-args
and the initramfs tree to DIR/root, and exits 0; REFCNT_VM_NONCE then
fixes the exit marker's nonce."""
from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import tempfile
import time
from typing import List, NoReturn, Optional

from . import guest, klog, msg, qemu, topology, vmargs
from .msg import Error, say
from .vmargs import Vm

DIE_STATUS = 2


def options(v: Vm, argv: List[str]) -> None:
    """The options, the topology and the dimms into V."""
    vmargs.parse(argv, v)
    v.topo = topology.parse(v.topology, v.mem_extra, v.arch)
    v.dimms = [topology.parse_dimm(d, v.topo) for d in v.dimm_args]
    if v.dimms:
        v.append_extra += " memhp_default_state=offline"


def icount_smp(v: Vm) -> None:
    """Several CPUs on the instruction clock.  QEMU 7.2's fixed-shift
    icount hangs Linux's SMP bring-up in the TSC sync check: the boot CPU
    spins with interrupts off waiting for the other, which the
    round-robin vCPU thread does not run.  tsc=unstable skips the check:
    6.12 then brings every CPU up; 6.1 hangs before its console with or
    without it (any -cpu model, shift 0 to 6, PVH or not)."""
    if not v.icount or sum(v.topo.cpus) <= 1:
        return
    if re.match(r"6\.1\.", v.kver):
        raise Error(f"--icount: the topology has {sum(v.topo.cpus)} CPUs "
                    f"and kernel {v.kver} hangs bringing up a second CPU "
                    "on QEMU 7.2's instruction clock: use one CPU (e.g. "
                    "512M/1,512M/0) or a 6.12 kernel")
    v.append_extra += " tsc=unstable"


def setup(v: Vm, argv: List[str]) -> None:
    """The options and what they need, checked before anything is
    created."""
    options(v, argv)
    qemu.resolve_kernel(v)
    icount_smp(v)
    if shutil.which(vmargs.QEMU[v.arch]) is None:
        raise Error(f"{vmargs.QEMU[v.arch]} not found (Debian's "
                    f"{vmargs.QEMU_PKG[v.arch]}: run "
                    "'tools/testing/refcnt-setup deps' as root)")


def prepare(v: Vm, prog: str) -> List[str]:
    """The plugins, the accelerator, the Debian root, the initramfs:
    QEMU's arguments."""
    qemu.truth_setup(v)
    qemu.hub_setup(v)
    qemu.vtruth_setup(v)
    qemu.choose_accel(v, prog)
    qemu.debian_setup(v)
    v.tmp = tempfile.mkdtemp(prefix="refcnt-vm.",
                             dir=os.environ.get("TMPDIR") or "/tmp")
    v.nonce = os.urandom(8).hex()
    if os.environ.get("REFCNT_VM_DRY_RUN"):
        v.nonce = os.environ.get("REFCNT_VM_NONCE", v.nonce)
    guest.initramfs(v)
    return qemu.args(v)


def headline(v: Vm) -> str:
    return (f"kernel {v.kver} ({v.accel}), topology "
            f"{topology.summary(v.topo)}, {len(v.topo.slot_node)} CPU slots"
            + (f", module {v.module}" if v.module else "")
            + (f" ({v.modparams})" if v.modparams else "")
            + (f", truth {v.truth}" if v.truth else "")
            + (f", hub period {v.hub_period}" if v.hub_period else ""))


def dry_run(v: Vm, args: List[str], out: str) -> None:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "qemu-args"), "w") as f:
        f.write("".join(a + "\n" for a in args))
    shutil.copytree(f"{v.tmp}/root", os.path.join(out, "root"),
                    symlinks=True, dirs_exist_ok=True)


def read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def boot(v: Vm, args: List[str]) -> int:
    """The run and its verdict: the command's status, or a failure."""
    # With --log, the serial output goes straight to the log file, so a
    # long run can be followed with tail -f; the dmesg dump is appended
    # at the end.
    serial = f"{v.tmp}/serial.log"
    if v.logfile:
        os.makedirs(os.path.dirname(v.logfile) or ".", exist_ok=True)
        serial = v.logfile
    open(serial, "w").close()
    open(f"{v.tmp}/dmesg.log", "w").close()
    agent = None if os.environ.get("REFCNT_VM_DRY_RUN") else \
        qemu.hotplug_agent(v)
    say(headline(v))
    dry = os.environ.get("REFCNT_VM_DRY_RUN")
    if dry:
        dry_run(v, args, dry)
        return 0
    t0 = time.time()
    try:
        qrc = guest.run(v, args, serial)
    finally:
        qemu.hotplug_agent_stop(v, agent)
    secs = f"{time.time() - t0:.1f}"
    # Scan a copy: with --log, the sections appended below are not serial.
    o = klog.Outcome(qrc, read(f"{v.tmp}/qemu.err"), read(serial),
                     read(f"{v.tmp}/dmesg.log"), v.timeout, v.modparams)
    if v.logfile:
        append_log(v, o)
    return verdict(v, o, secs)


def append_log(v: Vm, o: klog.Outcome) -> None:
    with open(v.logfile, "a") as f:
        f.write("===== refcnt-vm: guest dmesg =====\n")
        f.write(o.dmesg.replace("\r", ""))
        if o.qemu_err:
            f.write("===== refcnt-vm: qemu stderr =====\n" + o.qemu_err)


def verdict(v: Vm, o: klog.Outcome, secs: str) -> int:
    marker = klog.find_marker(o.serial, v.nonce)
    kcsan_other = klog.kcsan_reports(
        klog.split_lines(o.serial) +
        klog.split_lines(o.dmesg.replace("\r", "")), False)
    if kcsan_other:
        say(f"{len(kcsan_other)} KCSAN reports without refcnt in them, not "
            f"counted: first: {kcsan_other[0]}")
    why = klog.reasons(o, marker)
    if v.truth and marker is None:
        # Counts of a run cut short are not the run's truth.
        t = v.truth
        qemu.remove(t, t + ".summary", t + ".llc", t + ".tmp",
                    t + ".summary.tmp", t + ".llc.tmp",
                    *([v.truth_series] if v.truth_series else []))
        if v.trace:
            qemu.remove(re.sub(r"([*?[])", r"[\1]", v.trace) +
                        ".[0-9]*.[0-9]*")
        why.append("no truth written: the guest did not finish")
    status = marker.status if marker else ""
    if why:
        say(f"FAILED after {secs}s (kernel {v.kver}, topology "
            f"{v.topology}):")
        for line in why:
            print(f"{msg.PROG}:   {line}", file=sys.stderr)
        if v.logfile:
            say(f"full log: {v.logfile}")
        return int(status or 1) or 1
    say(f"done in {secs}s: exit status {status}")
    return int(status or 0)


def cleanup(v: Vm) -> None:
    if v.hub_file:
        qemu.remove(v.hub_file)
    if v.tmp and os.path.isdir(v.tmp):
        if v.keep:
            say(f"kept {v.tmp}")
        else:
            shutil.rmtree(v.tmp, ignore_errors=True)


def on_term(signum: int, frame: object) -> NoReturn:
    sys.exit(143)


def main(argv: List[str], prog: str) -> int:
    """refcnt-vm ARGV; PROG is its path (the KVM probe runs it again)."""
    msg.PROG = os.path.basename(prog)
    build = os.environ.get("REFCNT_BUILD_DIR") or \
        os.path.join(vmargs.ROOT, "build")
    v = Vm(build=build, accel=os.environ.get("REFCNT_VM_ACCEL") or "auto",
           truth_plugin=os.environ.get("REFCNT_TRUTH_PLUGIN") or
           os.path.join(build, "truth/refcnt-truth.so"))
    try:
        setup(v, argv)
    except vmargs.Help:
        sys.stdout.write(vmargs.usage(msg.PROG))
        return 0
    except Error as e:
        return die(e)
    signal.signal(signal.SIGTERM, on_term)
    try:
        return boot(v, prepare(v, prog))
    except Error as e:
        return die(e)
    except KeyboardInterrupt:
        return 130
    finally:
        cleanup(v)


def die(e: Error) -> int:
    print(f"{msg.PROG}: error: {e}", file=sys.stderr)
    return DIE_STATUS


def entry(prog: Optional[str] = None) -> None:
    sys.exit(main(sys.argv[1:], prog or sys.argv[0]))
