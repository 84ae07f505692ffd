# SPDX-License-Identifier: GPL-2.0
"""refcnt-vm's options (data/refcnt-vm-help.txt is its --help) and the
state of one run that the other modules fill in."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from .msg import Error
from .topology import Dimm, Topology, size_mb

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(TOOLS))

# Kernel command line.  The debug options turn memory corruption into
# loud failures; panic=-1 with -no-reboot makes QEMU exit on a panic
# instead of hanging until the timeout; panic_print=0x20 replays the
# whole kernel log on a panic, since loglevel=4 keeps WARN details off
# the console otherwise; printk.time=1 stamps the kernel's lines, which
# the log scan keys on, in a kernel built without PRINTK_TIME too.
# A soft lockup panics at once with every CPU's stack (the one spinning
# often waits for another): it fails the run as a WARNING does, not after
# the guest's whole timeout with one CPU's report. After 60 s, not 20: a
# TCG vCPU starved by a loaded host stalls that long with nothing wrong
# (the crypto self-tests at boot did, 26 s, beside a second guest).
BASE_APPEND = ("console=ttyS0 panic=-1 panic_on_warn=1 loglevel=4 nokaslr "
               "panic_print=0x20 printk.time=1 softlockup_panic=1 "
               "softlockup_all_cpu_backtrace=1 watchdog_thresh=30")
# Left out with --no-debug, for benchmarks: slab user tracking saves a
# stack trace per kmalloc and kfree, and page poisoning writes and
# checks every page allocated, costs a production kernel does not have.
DEBUG_APPEND = " slub_debug=FZPU page_poison=1"
# The guest's architectures (--arch) and their consoles: arm64 is QEMU's
# virt machine, whose UART is a PL011.
ARCHES = ("x86_64", "arm64")
CONSOLE = {"x86_64": "console=ttyS0", "arm64": "console=ttyAMA0"}
QEMU = {"x86_64": "qemu-system-x86_64", "arm64": "qemu-system-aarch64"}
QEMU_PKG = {"x86_64": "qemu-system-x86", "arm64": "qemu-system-arm"}
# What an arm64 guest has not: no KVM on this x86 host, the plugins map
# x86 guests' physical memory, no ACPI HMAT or memory hotplug without
# UEFI firmware, no Debian arm64 root; its command line has no
# instruction clock (untried there).
NOT_ARM64 = (("hmat", "--hmat"), ("truth", "--truth"), ("vtruth", "--vtruth"),
             ("hub_period", "--hub"), ("debian", "--debian"),
             ("dimm_args", "--dimm"), ("hotplug_mb", "--hotplug-mem"),
             ("icount", "--icount"))


def usage(prog: str) -> str:
    with open(os.path.join(HERE, "data", "refcnt-vm-help.txt")) as f:
        return f.read().replace("{prog}", prog)


@dataclass
class Vm:
    """The options ("" or 0: not given, as in the bash original), then
    what the run derives from them."""
    build: str
    arch: str = "x86_64"
    kernel: str = ""
    topology: str = "four"
    module: str = ""
    modparams: str = ""
    noload: bool = False
    nounload: bool = False
    files: List[str] = field(default_factory=list)
    timeout: str = "900"
    logfile: str = ""
    accel: str = "auto"
    icount: str = ""
    mem_extra: int = 0
    dimm_args: List[str] = field(default_factory=list)
    hotplug_mb: int = 0
    append_extra: str = ""
    debug_append: str = DEBUG_APPEND
    qemu_extra: List[str] = field(default_factory=list)
    pvh: bool = True
    quiet: bool = False
    keep: bool = False
    cmd: Optional[List[str]] = None
    truth: str = ""
    truth_window: bool = False
    truth_llc: str = ""
    truth_opts: List[str] = field(default_factory=list)
    vtruth: str = ""
    truth_series: str = ""
    trace: str = ""
    hmat: bool = False
    debian: bool = False
    debian_pkgs: str = ""
    debian_systemd: bool = False
    debian_masks: List[str] = field(default_factory=list)
    hub_period: str = ""
    hub_opts: List[str] = field(default_factory=list)
    hub_records: str = ""
    hub_file_arg: str = ""
    truth_plugin: str = ""
    # Derived.
    topo: Topology = field(default_factory=lambda: Topology([], []))
    dimms: List[Dimm] = field(default_factory=list)
    vmlinuz: str = ""
    kver: str = ""
    truth_plugin_arg: str = ""
    hub_file: str = ""
    debian_img: str = ""
    debian_mods: List[str] = field(default_factory=list)
    # arm64: the modules of the kernel-log console, in load order.
    klog_mods: List[str] = field(default_factory=list)
    tmp: str = ""
    nonce: str = ""

    @property
    def append(self) -> str:
        base = BASE_APPEND.replace(CONSOLE["x86_64"], CONSOLE[self.arch])
        return base + self.debug_append + self.append_extra


def size_arg(opt: str, text: str) -> int:
    mb = size_mb(text)
    if mb is None:
        raise Error(f"{opt}: bad size '{text}'")
    return mb


def _append(attr: str) -> Callable[[Vm, str], None]:
    def f(v: Vm, a: str) -> None:
        getattr(v, attr).append(a)
    return f


def _set(attr: str) -> Callable[[Vm, str], None]:
    return lambda v, a: setattr(v, attr, a)


def _pkgs(v: Vm, a: str) -> None:
    v.debian, v.debian_pkgs = True, f"{v.debian_pkgs} {a}"


def _append_extra(v: Vm, a: str) -> None:
    v.append_extra += f" {a}"


def _hotplug(v: Vm, a: str) -> None:
    v.hotplug_mb = size_arg("--hotplug-mem", a)


def _mem_extra(v: Vm, a: str) -> None:
    v.mem_extra = size_arg("--mem-extra", a)


WITH_ARG: Dict[str, Callable[[Vm, str], None]] = {
    "--arch": _set("arch"),
    "--kernel": _set("kernel"), "--topology": _set("topology"),
    "--module": _set("module"), "--modparams": _set("modparams"),
    "--file": _append("files"), "--timeout": _set("timeout"),
    "--log": _set("logfile"), "--accel": _set("accel"),
    "--icount": _set("icount"),
    "--dimm": _append("dimm_args"), "--hotplug-mem": _hotplug,
    "--mem-extra": _mem_extra, "--append": _append_extra,
    "--qemu-arg": _append("qemu_extra"), "--truth": _set("truth"),
    "--truth-llc": _set("truth_llc"), "--truth-opt": _append("truth_opts"),
    "--vtruth": _set("vtruth"), "--truth-series": _set("truth_series"),
    "--trace": _set("trace"), "--debian-pkgs": _pkgs,
    "--mask": _append("debian_masks"), "--hub-opt": _append("hub_opts"),
    "--hub-records": _set("hub_records"), "--hub-file": _set("hub_file_arg"),
}

FLAGS: Dict[str, Callable[[Vm], None]] = {
    "--no-load": lambda v: setattr(v, "noload", True),
    "--no-unload": lambda v: setattr(v, "nounload", True),
    "--no-debug": lambda v: setattr(v, "debug_append", ""),
    "--no-pvh": lambda v: setattr(v, "pvh", False),
    "--truth-window": lambda v: setattr(v, "truth_window", True),
    "--hmat": lambda v: setattr(v, "hmat", True),
    "--debian": lambda v: setattr(v, "debian", True),
    "--debian-systemd": lambda v: setattr(v, "debian_systemd", True),
    "--hub": lambda v: setattr(v, "hub_period", "1"),
    "--quiet": lambda v: setattr(v, "quiet", True),
    "--keep": lambda v: setattr(v, "keep", True),
}


class Help(Exception):
    """-h or --help: print the usage and exit 0."""


def parse(argv: List[str], v: Vm) -> None:
    """The options into V, in order (a bad one ends the parse there), then
    checked as a whole."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in WITH_ARG:
            if i + 1 >= len(argv):
                raise Error(f"option {a} needs an argument")
            WITH_ARG[a](v, argv[i + 1])
            i += 2
        elif a in FLAGS:
            FLAGS[a](v)
            v.debian = v.debian or a == "--debian-systemd"
            i += 1
        elif a.startswith("--hub="):
            v.hub_period = a[len("--hub="):]
            i += 1
        elif a in ("-h", "--help"):
            raise Help()
        elif a == "--":
            v.cmd = argv[i + 1:]
            break
        elif a.startswith("-"):
            raise Error(f"unknown option '{a}' (see --help)")
        else:
            v.cmd = argv[i:]
            break
    check(v)


def check(v: Vm) -> None:
    if not (re.fullmatch("[0-9]+", v.timeout) and int(v.timeout) > 0):
        raise Error(f"--timeout: '{v.timeout}' is not a positive number of "
                    "seconds")
    if v.accel not in ("kvm", "tcg", "auto"):
        raise Error(f"--accel: '{v.accel}' is not kvm, tcg or auto")
    check_arch(v)
    if v.icount and not re.fullmatch("[0-9]|10", v.icount):
        raise Error(f"--icount: '{v.icount}' is not a shift from 0 to 10")
    if v.icount and v.accel == "kvm":
        raise Error("--icount needs TCG: KVM runs at the host's clock "
                    "(use --accel tcg)")
    if v.module and not os.path.isfile(v.module):
        raise Error(f"--module: {v.module} does not exist (build it with "
                    "'make module KVER=...')")
    if v.modparams and not v.module:
        raise Error("--modparams given without --module")
    check_plugins(v)
    for u in v.debian_masks:
        if not v.debian_systemd:
            raise Error("--mask needs --debian-systemd")
        if not re.fullmatch(r"[A-Za-z0-9@_.:-]+\."
                            r"(service|socket|timer|target|path|mount)", u):
            raise Error(f"--mask: '{u}' is not a systemd unit name")
    hub_ko = os.path.join(os.path.dirname(v.module), "refcnt_hub.ko")
    if v.hub_period and v.module and not os.path.isfile(hub_ko):
        raise Error(f"--hub: no refcnt_hub.ko beside {v.module} (make module "
                    "KVER=... builds it)")


def check_arch(v: Vm) -> None:
    if v.arch not in ARCHES:
        raise Error(f"--arch: '{v.arch}' is not {' or '.join(ARCHES)}")
    if v.arch == "x86_64":
        return
    if v.accel == "kvm":
        raise Error("--arch arm64 runs under TCG: no KVM for arm64 guests "
                    "on this host")
    v.accel = "tcg"
    for attr, opt in NOT_ARM64:
        if getattr(v, attr):
            raise Error(f"{opt} is not supported with --arch arm64")


def check_plugins(v: Vm) -> None:
    if not v.truth:
        if (v.truth_window or v.truth_opts or v.trace or v.truth_series):
            raise Error("--truth-window, --truth-opt, --truth-series and "
                        "--trace need --truth FILE")
        if v.truth_llc and not v.hub_period:
            raise Error("--truth-llc needs --truth FILE (or --hub, for "
                        "hub_misses=on)")
    p = v.hub_period
    if p and not (re.fullmatch("[0-9]+", p) and 1 <= int(p) <= 4294967295):
        raise Error(f"--hub={p}: the period is a number from 1 to "
                    "4294967295")
    if v.hub_opts and not v.hub_period:
        raise Error("--hub-opt needs --hub")
