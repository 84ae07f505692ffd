# SPDX-License-Identifier: GPL-2.0
"""refcnt-vm's --topology language, its presets and sizes, the CPU-slot
layout, and QEMU's memory, CPU and NUMA arguments for it (-m, -smp,
-device CPUs, -numa nodes, CPUs and HMAT, the --dimm pc-dimms)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from .msg import Error

PRESETS = {
    "one": "512M/2",
    # The 4-node machine: a CPU-less node, a memory-less node and
    # a gap in the node ids, all in one topology.
    "four": "512M/1,512M/1,0/0,256M/0,0/1",
    "four-dense": "512M/1,512M/1,256M/0,0/1",
    # Node 2 is for --dimm: no memory or CPU at boot (memory hotplug).
    "cxl": "512M/1,512M/1,0/0",
    # Nodes 1 and 2 possible (placeholder CPU slots) but offline at boot.
    "hotplug": "512M/1,0/0,0/0,512M/1",
    # Memory tiering: two nodes with CPUs and memory, one CPU-less
    # memory node (the CXL case; make placement).
    "tiered": "512M/1,512M/1,256M/0",
    # Node 0 holds the kernel image (16M-80M physical), so it gets 256M
    # and every other node keeps its memory free for what tests put
    # there.  32M nodes, not 64M: with page_poison=1 every page is
    # written at boot, and under TCG 4.5G of guest RAM took 50 s to boot
    # against 25 s.
    "72": "256M/1,35*32M/0,32M/1,34*32M/0,32M/1",
}

# QEMU 7.2 allows 128 NUMA nodes.
MAX_NODES = 128


def size_mb(text: str) -> Optional[int]:
    """"512M" / "1G" / "0" / "65536K" (any case, optional B or iB) in
    MiB, or None.  A bare number must be 0: no silent bytes."""
    m = re.fullmatch(r"([0-9]+)([KMG]?)(I?B)?", text.upper())
    if m is None:
        return None
    n = int(m.group(1))
    unit = m.group(2)
    if unit == "K":
        return n // 1024 if n % 1024 == 0 else None
    if unit == "G":
        return n * 1024
    if unit == "":
        return n if n == 0 else None
    return n


def split_items(spec: str) -> List[str]:
    """The comma-separated items of SPEC as bash's read -a splits them:
    one trailing empty item dropped."""
    items = spec.split(",")
    if items and items[-1] == "":
        items.pop()
    return items


@dataclass
class Topology:
    """MiB and CPUs per node (0: memory-less or CPU-less), and the QEMU
    CPU slots: each slot's node and whether a CPU is plugged in it."""
    mem: List[int]
    cpus: List[int]
    slot_node: List[int] = field(default_factory=list)
    slot_present: List[bool] = field(default_factory=list)

    @property
    def total_mb(self) -> int:
        return sum(self.mem)

    def online(self) -> List[int]:
        return [n for n in range(len(self.mem))
                if self.mem[n] > 0 or self.cpus[n] > 0]


def parse_item(item: str) -> Tuple[int, int, int]:
    """One item, "[N*]MEM/CPUS": (repeat, MiB, CPUs)."""
    rep = 1
    m = re.fullmatch(r"([0-9]+)\*(.*)", item, re.S)
    if m:
        rep, item = int(m.group(1)), m.group(2)
    m = re.fullmatch(r"([^/]+)/([0-9]+)", item)
    if m is None:
        raise Error(f"--topology: '{item}' is not MEM/CPUS "
                    "(e.g. 512M/1, 0/1, 256M/0)")
    mem, cpus = m.group(1), int(m.group(2))
    mb = size_mb(mem)
    if mb is None:
        raise Error(f"--topology: bad memory size '{mem}' "
                    "(use e.g. 0, 64M, 1G)")
    if 0 < mb < 16:
        raise Error(f"--topology: node memory {mem} is below 16M (Linux "
                    "ignores nodes under 4M and needs room for its own "
                    "node data)")
    return rep, mb, cpus


def parse(spec: str, mem_extra: int = 0, arch: str = "x86_64") -> Topology:
    """A preset or node list; MEM_EXTRA MiB more on node 0.  The CPU
    slots laid out for ARCH."""
    items = split_items(PRESETS.get(spec, spec).split("\n")[0])
    if not items:
        raise Error("--topology: empty spec")
    mem: List[int] = []
    cpus: List[int] = []
    for item in items:
        rep, mb, c = parse_item(item)
        mem += [mb] * rep
        cpus += [c] * rep
    if len(mem) > MAX_NODES:
        raise Error(f"--topology: {len(mem)} nodes; QEMU supports at most "
                    f"{MAX_NODES}")
    if not cpus or cpus[0] == 0:
        raise Error("--topology: node 0 has no CPU; the boot CPU must be on "
                    "node 0 (Linux numbers nodes by the order CPUs appear "
                    "in the ACPI SRAT)")
    mem[0] += mem_extra
    if sum(mem) <= 0:
        raise Error("--topology: no node has memory")
    t = Topology(mem, cpus)
    layout_cpus(t, arch == "x86_64")
    return t


def layout_cpus(t: Topology, placeholders: bool = True) -> None:
    """QEMU CPU slots, one socket per CPU, and (PLACEHOLDERS, x86) the
    absent ones.  arm64 needs none: its guest reads the nodes from the
    device tree by their numa-node-id, whatever their order, and QEMU's
    virt machine has no CPU hotplug.  Why placeholders on x86: Linux
    numbers NUMA nodes in the order their proximity domains first appear
    in the ACPI SRAT, and it parses all CPU entries before all memory
    entries.  A CPU-less node followed by a node with CPUs would
    therefore be numbered after it.  So such a node gets one
    possible-but-absent (hotpluggable) CPU slot in its place: it shows up
    in the SRAT at the right position and Linux never onlines it.  Linux
    6.1 in "logical flat" APIC mode (at most 8 possible APIC ids) loses
    IPIs to a CPU whose APIC id follows an absent one under QEMU TCG (the
    boot hangs in stop_machine), so with placeholders we make at least 9
    slots, which selects "physical flat" mode; the padding slots are
    absent CPUs of node 0."""
    absent = 0
    for n, c in enumerate(t.cpus):
        if c > 0:
            t.slot_node += [n] * c
            t.slot_present += [True] * c
        elif placeholders and any(later > 0 for later in t.cpus[n + 1:]):
            t.slot_node.append(n)
            t.slot_present.append(False)
            absent += 1
    if absent:
        while len(t.slot_node) < 9:
            t.slot_node.append(0)
            t.slot_present.append(False)


def summary(t: Topology) -> str:
    """The node list in the --topology syntax, runs as N*MEM/CPUS."""
    out: List[str] = []
    items = [f"{m}M/{c}" if m else f"0/{c}" for m, c in zip(t.mem, t.cpus)]
    i = 0
    while i < len(items):
        j = i
        while j < len(items) and items[j] == items[i]:
            j += 1
        out.append(items[i] if j - i == 1 else f"{j - i}*{items[i]}")
        i = j
    return ",".join(out)


@dataclass(frozen=True)
class Dimm:
    node: int
    mb: int


def parse_dimm(text: str, t: Topology) -> Dimm:
    """--dimm NODE:SIZE, checked against the topology."""
    m = re.fullmatch(r"([0-9]+):(.+)", text, re.S)
    if m is None:
        raise Error(f"--dimm: '{text}' is not NODE:SIZE (e.g. 2:256M)")
    node = int(m.group(1))
    mb = size_mb(m.group(2))
    if mb is None:
        raise Error(f"--dimm: bad size in '{text}'")
    if node >= len(t.mem):
        raise Error(f"--dimm: node {node} is not in the topology "
                    f"(nodes 0-{len(t.mem) - 1})")
    if mb <= 0 or mb % 128:
        raise Error(f"--dimm: size of '{text}' is not a multiple of 128M "
                    "(the memory block size)")
    return Dimm(node, mb)


def memory_args(t: Topology, dimms: List[Dimm],
                hotplug_mb: int) -> List[str]:
    """-m, with room for the dimms and --hotplug-mem, and the dimms."""
    total = t.total_mb
    if not dimms and hotplug_mb == 0:
        return ["-m", f"{total}M"]
    extra = sum(d.mb for d in dimms)
    args = ["-m", f"{total}M,slots={len(dimms) + 5},"
            f"maxmem={total + extra + hotplug_mb + 1024}M"]
    for i, d in enumerate(dimms):
        args += ["-object", f"memory-backend-ram,id=dimm{i},size={d.mb}M",
                 "-device",
                 f"pc-dimm,id=pcdimm{i},memdev=dimm{i},node={d.node}"]
    return args


def cpu_args(t: Topology, cpu_dev: str) -> List[str]:
    """One socket per CPU: a socket shared by CPUs of two nodes makes
    Linux WARN in topology_sane() (LLC siblings on different nodes)."""
    n = len(t.slot_node)
    if all(t.slot_present):
        return ["-smp", f"{n},sockets={n},cores=1,threads=1"]
    # Slot 0 (node 0, the boot CPU) is plugged by -smp; the others are
    # plugged one by one so absent slots can sit in between.
    args = ["-smp", f"1,maxcpus={n},sockets={n},cores=1,threads=1"]
    for s in range(1, n):
        if t.slot_present[s]:
            args += ["-device",
                     f"{cpu_dev},socket-id={s},core-id=0,thread-id=0"]
    return args


def numa_args(t: Topology, hmat: bool) -> List[str]:
    """The nodes (a memory-less one without memdev; with HMAT, a node
    without CPU slots names its initiator), then each slot's node."""
    args: List[str] = []
    for n, mb in enumerate(t.mem):
        init = ",initiator=0" if hmat and n not in t.slot_node else ""
        if mb > 0:
            args += ["-object", f"memory-backend-ram,id=m{n},size={mb}M",
                     "-numa", f"node,nodeid={n},memdev=m{n}{init}"]
        else:
            args += ["-numa", f"node,nodeid={n}{init}"]
    for s, n in enumerate(t.slot_node):
        args += ["-numa", f"cpu,node-id={n},socket-id={s},core-id=0,"
                 "thread-id=0"]
    return args


def hmat_kind(t: Topology, n: int) -> int:
    """0 no memory, 1 memory and CPUs, 2 memory only (a memory tier)."""
    if t.mem[n] == 0:
        return 0
    return 1 if t.cpus[n] > 0 else 2


def hmat_args(t: Topology) -> List[str]:
    """--hmat: SLIT distances 10/20/30, and latency and bandwidth from
    every node with CPUs to every node with memory in their ratio."""
    nn = len(t.mem)
    args: List[str] = []
    for a in range(nn):
        for h in range(nn):
            d = 10 if a == h else (
                30 if 2 in (hmat_kind(t, a), hmat_kind(t, h)) else 20)
            args += ["-numa", f"dist,src={a},dst={h},val={d}"]
    for a in range(nn):
        if t.cpus[a] == 0:
            continue
        for h in range(nn):
            if t.mem[h] == 0:
                continue
            lat, bw = ((80, "20G") if a == h else
                       (240, "5G") if hmat_kind(t, h) == 2 else (160, "10G"))
            lb = f"hmat-lb,initiator={a},target={h},hierarchy=memory"
            args += ["-numa", f"{lb},data-type=access-latency,latency={lat}",
                     "-numa",
                     f"{lb},data-type=access-bandwidth,bandwidth={bw}"]
    return args


def plugin_machine(t: Topology, modparams: str) -> str:
    """The refcnt-truth plugin's description of the machine: online
    nodes, each CPU slot's node (QEMU's vCPU index is the slot, plugged
    or not), the granularity, the RAM of each node."""
    m = re.search(r" granularity=([0-9]+) ", f" {modparams} ")
    gran = m.group(1) if m else "4096"
    ram = ",".join(f"ram={n}:{mb}" for n, mb in enumerate(t.mem) if mb > 0)
    online = ":".join(str(n) for n in t.online())
    vcpus = ":".join(str(n) for n in t.slot_node)
    return f"online={online},vcpus={vcpus},granularity={gran},{ram}"
