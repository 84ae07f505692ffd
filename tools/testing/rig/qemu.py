# SPDX-License-Identifier: GPL-2.0
"""refcnt-vm's QEMU command line: the kernel and its PVH image, the
accelerator (KVM only where a probe boot works), the refcnt-truth and
refcnt-vtruth plugins, the hub device (ivshmem), --hotplug-mem's QMP
socket and agent, the Debian root's drive."""
from __future__ import annotations

import glob
import os
import re
import shutil
import stat
import subprocess
import tempfile
from typing import List, Optional

from . import cross, topology
from .debpkg import SetupError
from .msg import Error, say
from .vmargs import TOOLS, Vm


def tool(name: str, *args: str) -> Optional[str]:
    """stdout of tools/testing/NAME ARGS (its stderr passes), or None."""
    r = subprocess.run([os.path.join(TOOLS, name), *args],
                       stdout=subprocess.PIPE, text=True)
    return r.stdout.rstrip("\n") if r.returncode == 0 else None


def kernel_release(path: str) -> str:
    """The release of a --kernel path: include/config/kernel.release of
    the build tree it sits in, else its name after "vmlinuz-"."""
    d = os.path.dirname(path)
    for _ in range(4):
        rel = os.path.join(d, "include/config/kernel.release")
        if os.access(rel, os.R_OK):
            with open(rel) as f:
                return f.read().rstrip("\n")
        d = os.path.dirname(d)
    name = os.path.basename(path)
    return name[len("vmlinuz-"):] if name.startswith("vmlinuz-") else name


def resolve_kernel(v: Vm) -> None:
    if not v.kernel:
        ks = tool("refcnt-setup", "kernels")
        if ks is None:
            raise Error("cannot resolve the default kernel (run "
                        "'tools/testing/refcnt-setup deps' as root)")
        v.kernel = ks.split("\n")[0]
        if v.arch == "arm64":
            v.kernel = v.kernel.removesuffix("-amd64") + "-arm64"
    if "/" in v.kernel or os.path.isfile(v.kernel):
        if not os.access(v.kernel, os.R_OK):
            raise Error(f"--kernel: cannot read {v.kernel}")
        v.vmlinuz = os.path.realpath(v.kernel)
        v.kver = kernel_release(v.vmlinuz)
        return
    v.kver = v.kernel
    if v.arch == "arm64":
        v.vmlinuz = arm64_image(v)
        return
    z = tool("refcnt-setup", "vmlinuz", v.kver)
    if z is None:
        raise Error(f"no vmlinuz for kernel {v.kver} (run "
                    "'tools/testing/refcnt-setup deps' as root)")
    v.vmlinuz = z


def arm64_image(v: Vm) -> str:
    """Debian's arm64 Image of release v.kver and its kernel-log console
    modules, fetched into build/arm64/kernels/ on first use
    (rig/cross.py)."""
    if not v.kver.endswith("-arm64"):
        raise Error(f"--arch arm64: kernel {v.kver} is not an arm64 "
                    "release (e.g. 6.1.0-56-arm64) or an Image path")
    paths = cross.Paths(v.build)
    try:
        image = cross.image(paths, v.kver)
    except (SetupError, OSError) as e:
        raise Error(f"no arm64 Image of {v.kver}: {e}") from None
    v.klog_mods = cross.klog_modules(paths, v.kver)
    return image


def has_pvh_note(path: str) -> bool:
    """XEN_ELFNOTE_PHYS32_ENTRY (18): the PVH entry point QEMU needs."""
    r = subprocess.run(["readelf", "-n", path], capture_output=True,
                       text=True, errors="replace")
    return "0x00000012" in r.stdout


DECOMPRESS = ((b"\xfd\x37\x7a\x58", ["xz", "-dc"]),
              (b"\x28\xb5\x2f\xfd", ["zstd", "-dcq"]),
              (b"\x1f\x8b\x08", ["gzip", "-dc"]))


def payload(z: str) -> Optional[tuple[bytes, List[str]]]:
    """A bzImage's compressed kernel and its decompressor: setup_sects
    at 0x1f1, payload_offset/length at 0x248 (boot protocol 2.08+); the
    payload ends with its 4-byte decompressed size."""
    with open(z, "rb") as f:
        head = f.read(592)
        if len(head) < 592:
            return None
        ss = head[497]
        po = int.from_bytes(head[584:588], "little")
        pl = int.from_bytes(head[588:592], "little")
        if ss <= 0 or pl <= 4:
            return None
        f.seek((ss + 1) * 512 + po)
        data = f.read(pl - 4)
    for magic, dec in DECOMPRESS:
        if data.startswith(magic) and shutil.which(dec[0]):
            return data, dec
    return None


def pvh_image(v: Vm, z: str) -> Optional[str]:
    """The ELF vmlinux of bzImage Z, for QEMU to start at its PVH entry
    point: under TCG, decompressing Debian's kernel in the guest takes
    about 5 s of every boot.  Cached by name, size and mtime; None if the
    image can't be used that way (the debug kernel boots as it is)."""
    cache = os.path.join(v.build, "kernels/pvh")
    st = os.stat(z)
    out = f"{cache}/{os.path.basename(z)}-{st.st_size}-{int(st.st_mtime)}" \
        ".vmlinux"
    if os.path.isfile(out) and os.path.getsize(out) > 0:
        return out
    if os.path.exists(out + ".none"):
        return None
    p = payload(z)
    if p is None:
        return None
    os.makedirs(cache, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp.", dir=cache)
    with os.fdopen(fd, "wb") as f:
        r = subprocess.run(p[1], input=p[0], stdout=f,
                           stderr=subprocess.DEVNULL)
    if r.returncode == 0 and has_pvh_note(tmp):
        os.rename(tmp, out)
        return out
    os.unlink(tmp)
    open(out + ".none", "w").close()
    return None


def kvm_opens() -> bool:
    if not os.path.exists("/dev/kvm") or \
            not stat.S_ISCHR(os.stat("/dev/kvm").st_mode):
        return False
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError:
        return False
    os.close(fd)
    return True


def kvm_works(v: Vm, prog: str) -> bool:
    """/dev/kvm opening is not enough: nested setups exist where it opens
    but a guest hangs or QEMU aborts on an MSR.  Boot this kernel once
    under KVM and remember the answer until the host reboots."""
    cache = os.path.join(v.build, "vm/kvm-probe")
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot_id = f.read().strip()
    except OSError:
        boot_id = "unknown"
    key = f"{boot_id} {os.path.basename(v.vmlinuz)} "
    if os.path.isfile(cache):
        with open(cache, errors="replace") as f:
            lines = [x for x in f.read().split("\n") if key in x]
        if lines:
            return lines[-1].split(" ")[-1] == "ok"
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    say("probing KVM with a test boot (once per host boot)")
    # "four" also exercises the hotplug CPU slots (-device CPUs).
    r = subprocess.run([prog, "--accel", "kvm", "--kernel", v.vmlinuz,
                        "--topology", "four", "--timeout", "20", "--quiet",
                        "--", "true"], env={**os.environ,
                                            "REFCNT_VM_PROBE": "1"},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res = "ok" if r.returncode == 0 else "bad"
    with open(cache, "a") as f:
        f.write(f"{key}{res}\n")
    say(f"KVM probe: {res}")
    return res == "ok"


def choose_accel(v: Vm, prog: str) -> None:
    if v.accel == "kvm" and not kvm_opens():
        raise Error("--accel kvm: cannot open /dev/kvm")
    if v.icount:
        v.accel = "tcg"
    if v.accel == "auto":
        probe = os.environ.get("REFCNT_VM_PROBE", "")
        v.accel = "kvm" if (not probe and kvm_opens()
                            and kvm_works(v, prog)) else "tcg"


# --- the plugins -------------------------------------------------------


def plugin_check(v: Vm, what: str) -> None:
    """The truth and the hub need TCG and RAM the plugin can map."""
    if v.accel == "kvm":
        raise Error(f"{what} needs TCG: the plugin sees no access under KVM "
                    "(use --accel tcg)")
    v.accel = "tcg"
    if not os.path.isfile(v.truth_plugin):
        raise Error(f"{what}: no {v.truth_plugin} (build it with 'make "
                    "truth')")
    total = v.topo.total_mb
    if total >= 3584:
        raise Error(f"{what}: cannot map a guest with {total}M of RAM: QEMU "
                    "7.2 plugins get physical addresses above 4 GiB wrong; "
                    "use less than 3584M")


def out_path(opt: str, what: str, path: str) -> str:
    """An output file of a plugin: absolute, without commas (QEMU option
    syntax)."""
    path = path if path.startswith("/") else os.path.join(os.getcwd(), path)
    if "," in path:
        raise Error(f"{opt}: {what} may not contain a comma (QEMU option "
                    "syntax)")
    return path


def mkdir_p(d: str) -> None:
    """mkdir -p D, failures left to what writes there."""
    try:
        os.makedirs(d or "/", exist_ok=True)
    except OSError:
        pass


def writable(opt: str, path: str) -> None:
    """PATH.tmp can be written (then removed, with earlier dumps)."""
    mkdir_p(os.path.dirname(path))
    try:
        open(path + ".tmp", "w").close()
    except OSError:
        raise Error(f"{opt}: cannot write {path}.tmp (directory missing or "
                    "not writable)") from None


def remove(*patterns: str) -> None:
    for p in patterns:
        for f in glob.glob(p) if "*" in p else [p]:
            try:
                os.unlink(f)
            except OSError:
                pass


def truth_setup(v: Vm) -> None:
    """--truth: check what the refcnt-truth plugin needs before booting
    (TCG, RAM it can map, at most 64 nodes, a writable FILE), and its
    argument."""
    if not v.truth:
        return
    plugin_check(v, "--truth")
    nonline = len(v.topo.online())
    if nonline > 64:
        raise Error(f"--truth: {nonline} nodes online; the truth tables have "
                    "one counter per node, at most 64")
    v.truth = out_path("--truth", "FILE", v.truth)
    writable("--truth", v.truth)
    # Also an earlier run's dumps (FILE.N): they would pass for this one's.
    t = glob.escape(v.truth)
    remove(v.truth + ".tmp", v.truth, v.truth + ".summary",
           v.truth + ".llc", t + ".[0-9]*")
    arg = f"{v.truth_plugin},out={v.truth}," + \
        topology.plugin_machine(v.topo, v.modparams)
    if v.truth_window:
        arg += ",window=on"
    if v.truth_llc:
        size, _, ways = v.truth_llc.partition(":")
        ways = ways if ":" in v.truth_llc else "16"
        if not re.fullmatch("[0-9]+", ways):
            raise Error(f"--truth-llc: bad ways '{ways}'")
        arg += f",llc_out={v.truth}.llc,llc_size={size},llc_ways={ways}"
    v.truth_plugin_arg = arg + trace_series_args(v) + \
        "".join("," + o for o in v.truth_opts)
    mark = os.path.join(v.build, "truth")
    v.files.append(f"{mark}/truth-mark:/refcnt/truth/truth-mark")
    if os.path.isfile(f"{mark}/truth-exact"):
        v.files.append(f"{mark}/truth-exact:/refcnt/truth/truth-exact")


def trace_series_args(v: Vm) -> str:
    arg = ""
    if v.trace:
        v.trace = out_path("--trace", "PREFIX", v.trace)
        mkdir_p(os.path.dirname(v.trace))
        # An earlier run's traces would pass for this one's.
        remove(glob.escape(v.trace) + ".[0-9]*.[0-9]*")
        arg += f",trace={v.trace}"
    if v.truth_series:
        ms = ""
        if ":" in v.truth_series:
            v.truth_series, _, ms = v.truth_series.rpartition(":")
        if ms and not re.fullmatch("[0-9]+", ms):
            raise Error(f"--truth-series: bad period '{ms}' (ms)")
        v.truth_series = out_path("--truth-series", "FILE", v.truth_series)
        remove(v.truth_series)
        arg += f",series={v.truth_series}" + (f",series_ms={ms}" if ms else "")
    return arg


def vtruth_setup(v: Vm) -> None:
    """--vtruth: the plugin of the truth by virtual address."""
    if not v.vtruth:
        return
    if v.accel == "kvm":
        raise Error("--vtruth needs TCG: the plugin sees no access under KVM")
    v.accel = "tcg"
    so = os.path.join(v.build, "truth/refcnt-vtruth.so")
    if not os.path.isfile(so):
        raise Error(f"--vtruth: no {so} (build it with 'make truth')")
    v.vtruth = out_path("--vtruth", "FILE", v.vtruth)
    try:
        open(v.vtruth + ".tmp", "w").close()
    except OSError:
        raise Error(f"--vtruth: cannot write {v.vtruth}.tmp (directory "
                    "missing or not writable)") from None
    remove(v.vtruth + ".tmp", glob.escape(v.vtruth) + ".[0-9]*")
    v.files.append(os.path.join(v.build, "truth/truth-mark") +
                   ":/refcnt/truth/truth-mark")


# --- the hub device ----------------------------------------------------


def hub_size(v: Vm) -> int:
    """A 4 KiB header and one ring per CPU slot, each a control block and
    its 48-byte records (128Ki, 64Ki above 16 slots, or --hub-records),
    rounded up to a power of two."""
    r = v.hub_records
    if r:
        if not re.fullmatch("[0-9]+", r) or not 16 <= int(r) <= 2097152 \
                or int(r) & (int(r) - 1):
            raise Error(f"--hub-records={r}: a power of two from 16 to "
                        "2097152")
        ring = 48 * int(r) + 4096
    elif len(v.topo.slot_node) <= 16:
        ring = 6 * 1024 * 1024 + 4096
    else:
        ring = 3 * 1024 * 1024 + 4096
    size = 1
    while size < 4096 + len(v.topo.slot_node) * ring:
        size *= 2
    return size


def hub_file(v: Vm) -> str:
    if v.hub_file_arg:
        if "," in v.hub_file_arg:
            raise Error("--hub-file: PATH may not contain a comma (QEMU "
                        "option syntax)")
        try:
            open(v.hub_file_arg, "w").close()
        except OSError:
            raise Error(f"--hub-file: cannot create {v.hub_file_arg}") \
                from None
        return v.hub_file_arg
    try:
        fd, path = tempfile.mkstemp(prefix="refcnt-hub.", dir="/dev/shm")
    except OSError:
        raise Error("--hub: cannot create a file in /dev/shm") from None
    os.close(fd)
    return path


def hub_setup(v: Vm) -> None:
    """--hub: the device's file in /dev/shm, sized for one ring per CPU
    slot, that the plugin maps (hub=) and QEMU gives the guest as an
    ivshmem-plain device; the hub's plugin options."""
    if not v.hub_period:
        return
    plugin_check(v, "--hub")
    size = hub_size(v)
    v.hub_file = hub_file(v)
    try:
        os.truncate(v.hub_file, size)
    except OSError:
        raise Error(f"--hub: cannot size {v.hub_file}") from None
    if not v.truth_plugin_arg:
        v.truth_plugin_arg = f"{v.truth_plugin}," + \
            topology.plugin_machine(v.topo, v.modparams)
        # No truth table, but the LLC model for hub_misses=on.
        if v.truth_llc:
            size_, colon, ways = v.truth_llc.partition(":")
            v.truth_plugin_arg += f",llc_size={size_}"
            if colon:
                v.truth_plugin_arg += f",llc_ways={ways}"
    v.truth_plugin_arg += f",hub={v.hub_file},hub_period={v.hub_period}"
    # The stream off through the boot, whose references would only
    # overrun the rings (a debug kernel's boot took 6 times longer under
    # it), until /init turns it on with hub-pmu, when it has it.
    if os.access(os.path.join(v.build, "truth/hub-pmu"), os.X_OK):
        v.truth_plugin_arg += ",hub_start=off"
    v.truth_plugin_arg += "".join("," + o for o in v.hub_opts)


def plugin_args(v: Vm) -> List[str]:
    """The plugin's own arguments: after the nodes' memory backends an
    unused one as large as all of them, so that no ROM block's address
    as QEMU 7.2 reports it can alias a node's page (see refcnt-truth.c);
    the hub's backend comes after the pad, so it cannot alias one
    either.  Then the plugin, and the refcnt-vtruth plugin."""
    args: List[str] = []
    if v.truth or v.hub_period:
        args += ["-object",
                 f"memory-backend-ram,id=truthpad,size={v.topo.total_mb}M"]
        if v.hub_file:
            size = os.path.getsize(v.hub_file)
            args += ["-object", "memory-backend-file,id=hub,share=on,"
                     f"mem-path={v.hub_file},size={size}",
                     "-device", "ivshmem-plain,memdev=hub"]
        args += ["-plugin", v.truth_plugin_arg]
    if v.vtruth:
        so = os.path.join(v.build, "truth/refcnt-vtruth.so")
        args += ["-plugin", f"{so},out={v.vtruth}"]
    return args


# --- the Debian root ---------------------------------------------------


def debian_setup(v: Vm) -> None:
    """The image (tools/testing/refcnt-debian-root) and the modules that
    mount it, in load order: Debian builds virtio, the block driver and
    ext4 as modules, and the guest has no modprobe before its root is
    mounted."""
    if not v.debian:
        return
    if v.debian_systemd:
        v.debian_pkgs += " systemd udev"
    img = tool("refcnt-debian-root", "--pkgs", v.debian_pkgs)
    if img is None:
        raise Error("no Debian root image (see the error above)")
    v.debian_img = img
    md = tool("refcnt-setup", "modules", v.kver)
    if md is None:
        raise Error(f"no modules for kernel {v.kver} (--debian needs a "
                    "Debian kernel release)")
    seen: set[str] = set()
    for n in ("virtio_pci", "virtio_blk", "crc32c_generic", "ext4"):
        debian_resolve(v, md, n, seen)


def find_first(top: str, names: tuple[str, str]) -> Optional[str]:
    """The first file under TOP (find's order) named NAMES[0] or [1]
    followed by ".ko" and anything."""
    try:
        entries = list(os.scandir(top))
    except OSError:
        return None
    for e in entries:
        if any(e.name.startswith(n + ".ko") for n in names):
            return e.path
        if e.is_dir(follow_symlinks=False):
            f = find_first(e.path, names)
            if f:
                return f
    return None


def debian_resolve(v: Vm, md: str, name: str, seen: set[str]) -> None:
    """Module NAME (after its dependencies) into v.debian_mods."""
    n = name.replace("-", "_")
    if n in seen:
        return
    seen.add(n)
    pat = re.compile("/" + n.replace("_", "[-_]") + r"\.ko(\.[a-z]+)?$")
    with open(os.path.join(md, "modules.builtin")) as f:
        if any(pat.search(x) for x in f.read().split("\n")):
            return
    path = find_first(os.path.join(md, "kernel"), (n, n.replace("_", "-")))
    if path is None:
        raise Error(f"--debian: module {n} not found under {md}")
    r = subprocess.run(["modinfo", "-F", "depends", path],
                       capture_output=True, text=True)
    if r.returncode:
        raise Error(f"--debian: modinfo {path} failed")
    for dep in r.stdout.replace(",", " ").split():
        debian_resolve(v, md, dep, seen)
    v.debian_mods.append(path)


# --- the command line --------------------------------------------------


def boot_image(v: Vm) -> str:
    p = pvh_image(v, v.vmlinuz) if v.pvh and v.arch == "x86_64" else None
    return p or v.vmlinuz


# arm64's CPU: every feature QEMU has, with pointer authentication's
# cheap implementation-defined algorithm (QARMA's costs TCG dearly).
ARM64_CPU = "max,pauth-impdef=on"


def arm64_args(v: Vm) -> List[str]:
    """An aarch64 guest under TCG: QEMU's virt machine with a GICv3 (more
    than 8 CPUs), its PL011 UART the console and a virtio console the
    kernel log's file (/init loads its modules: v.klog_mods); NUMA from
    the device tree QEMU writes."""
    a = ["-accel", "tcg,thread=multi"]
    a += topology.memory_args(v.topo, v.dimms, v.hotplug_mb)
    a += ["-machine", "virt,gic-version=3", "-cpu", ARM64_CPU,
          "-nodefaults", "-no-user-config", "-no-reboot", "-display", "none",
          "-monitor", "none", "-nic", "none",
          "-chardev", "stdio,id=con", "-serial", "chardev:con",
          "-device", "virtio-serial-device",
          "-chardev", f"file,id=klog,path={v.tmp}/dmesg.log",
          "-device", "virtconsole,chardev=klog",
          "-kernel", boot_image(v), "-initrd", f"{v.tmp}/initrd.gz",
          "-append", v.append]
    a += topology.cpu_args(v.topo, "")
    a += topology.numa_args(v.topo, False)
    return a + v.qemu_extra


def args(v: Vm) -> List[str]:
    """QEMU's arguments, after the options' setup and the initramfs."""
    if v.arch == "arm64":
        return arm64_args(v)
    kvm = v.accel == "kvm"
    cpu_model = "host" if kvm else "max"
    a = ["-accel", "kvm" if kvm else "tcg,thread=multi"]
    if v.icount:
        # The instruction clock: virtual time advances 2^N ns per guest
        # instruction, whatever the host's speed, so that per-second
        # mechanisms see a hardware-like rate per instruction.  One
        # counter for the machine: the vCPUs take turns on one host
        # thread (no MTTCG), and k busy vCPUs each get 1/k of it.
        a = ["-accel", "tcg,thread=single",
             "-icount", f"shift={v.icount},sleep=off"]
    image = boot_image(v)
    # The plugin sees every access, which slows TCG several times over:
    # a 72-node boot then spends more than the default 20 s in one
    # initcall without scheduling, a soft lockup of the emulator's
    # making.  The longest threshold the kernel takes still catches a
    # real one.
    if v.truth or v.hub_period:
        v.append_extra += " watchdog_thresh=60"
    a += topology.memory_args(v.topo, v.dimms, v.hotplug_mb)
    a += ["-machine", "pc,hmat=on" if v.hmat else "pc", "-cpu", cpu_model,
          "-nodefaults", "-no-user-config", "-no-reboot", "-display", "none",
          "-vga", "none", "-monitor", "none", "-nic", "none",
          "-chardev", "stdio,id=con", "-serial", "chardev:con",
          "-serial", f"file:{v.tmp}/dmesg.log",
          "-kernel", image, "-initrd", f"{v.tmp}/initrd.gz",
          "-append", v.append]
    a += topology.cpu_args(v.topo, f"{cpu_model}-x86_64-cpu")
    a += topology.numa_args(v.topo, v.hmat)
    if v.hmat:
        a += topology.hmat_args(v.topo)
    a += plugin_args(v)
    if v.hotplug_mb > 0:
        # QMP, and the guest's request channel (its third serial port).
        a += ["-qmp", f"unix:{v.tmp}/qmp.sock,server=on,wait=off",
              "-chardev",
              f"socket,id=hpchan,path={v.tmp}/hp.sock,server=on,wait=off",
              "-serial", "chardev:hpchan"]
    if v.debian:
        # snapshot=on: writes go to a temporary file, the cached image
        # stays.
        a += ["-drive", f"file={v.debian_img},format=raw,if=virtio,"
              "snapshot=on,cache=unsafe"]
    return a + v.qemu_extra


def hotplug_agent(v: Vm) -> Optional[subprocess.Popen[bytes]]:
    """--hotplug-mem's host agent (tools/testing/refcnt-vm-qmp), which
    serves the guest's requests through QMP."""
    if v.hotplug_mb <= 0:
        return None
    with open(f"{v.tmp}/qmp.err", "wb") as err:
        return subprocess.Popen([os.path.join(TOOLS, "refcnt-vm-qmp"),
                                 f"{v.tmp}/qmp.sock", f"{v.tmp}/hp.sock"],
                                stderr=err)


def hotplug_agent_stop(v: Vm, p: Optional[subprocess.Popen[bytes]]) -> None:
    if p is None:
        return
    p.terminate()
    p.wait()
    try:
        with open(f"{v.tmp}/qmp.err", "rb") as f:
            err = f.read(500).decode(errors="replace")
    except OSError:
        err = ""
    if err:
        say(f"hotplug agent: {err.rstrip(chr(10))}")
