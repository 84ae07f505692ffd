# SPDX-License-Identifier: GPL-2.0
"""refcnt-vm's guest: its initramfs (busybox, the modules, the --file
files, /init and its settings; for --debian a first stage that mounts
the Debian root), and the run: QEMU under its timeout, its console
streamed to stdout and the log."""
from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from typing import IO, List, Optional

from . import cross
from .debpkg import SetupError
from .msg import Error
from .vmargs import QEMU, TOOLS, Vm

# Guest-side files: tools/testing/guest/.
GUEST = os.path.join(TOOLS, "guest")
# The command when none is given: the topology as the guest sees it.
DEFAULT_CMD = ('for f in online possible has_memory has_normal_memory '
               'has_cpu; do echo "$f: $(cat /sys/devices/system/node/$f)"; '
               'done; ls -l /dev/refcnt 2>/dev/null || true\n')
PASSWD = ("root:x:0:0:root:/root:/bin/sh\n"
          "nobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n")
GROUP = "root:x:0:\nnogroup:x:65534:\n"
# Where /init writes the full kernel log (a file on the host): the second
# serial port, or on arm64 (QEMU's virt machine has one UART) a virtio
# console.
KLOG_TTY = {"x86_64": "/dev/ttyS1", "arm64": "/dev/hvc0"}


def sq(word: str) -> str:
    """WORD single-quoted for a POSIX shell."""
    return "'" + word.replace("'", "'\\''") + "'"


def shell_join(cmd: List[str]) -> str:
    """The command for sh -c: one argument is a shell command line;
    several are quoted word by word, so "-- ./t --flag 'a b'" runs as
    typed."""
    return cmd[0] if len(cmd) == 1 else " ".join(sq(a) for a in cmd)


def write(path: str, text: str, mode: Optional[int] = None) -> None:
    with open(path, "w") as f:
        f.write(text)
    if mode is not None:
        os.chmod(path, mode)


def guest_file(name: str) -> str:
    with open(os.path.join(GUEST, name)) as f:
        return f.read()


def sched_pin(v: Vm) -> str:
    """tools/testing/guest/sched-pin.c, built static on first use: see
    there why TCG guests hold perf's scheduler hooks on from boot."""
    src = os.path.join(GUEST, "sched-pin.c")
    binary = os.path.join(v.build, "vm/sched-pin")
    if os.access(binary, os.X_OK) and \
            os.path.getmtime(src) <= os.path.getmtime(binary):
        return binary
    os.makedirs(os.path.dirname(binary), exist_ok=True)
    cc = os.environ.get("CC", "cc")
    r = subprocess.run([cc, "-O2", "-Wall", "-static", "-o",
                        binary + ".tmp", src])
    if r.returncode:
        raise Error(f"cannot build {binary} from {src}")
    os.rename(binary + ".tmp", binary)
    return binary


def busybox(v: Vm) -> str:
    if v.arch == "arm64":
        try:
            return cross.busybox(cross.Paths(v.build))
        except (SetupError, OSError) as e:
            raise Error(f"no arm64 busybox-static: {e}") from None
    bb = shutil.which("busybox") or "/bin/busybox"
    if not os.access(bb, os.X_OK):
        raise Error("busybox not found (install busybox-static: "
                    "tools/testing/refcnt-setup deps)")
    r = subprocess.run(["readelf", "-lW", bb], capture_output=True,
                       text=True, errors="replace")
    if "interpreter" in r.stdout:
        raise Error(f"{bb} is dynamically linked; the guest needs "
                    "busybox-static")
    return bb


def copy_in(root: str, spec: str) -> None:
    """--file SRC[:DST] (DST default /refcnt/$(basename SRC), relative to
    /refcnt), as cp -aL copies it."""
    src, colon, dst = spec.partition(":")
    if not colon:
        dst = "/refcnt/" + os.path.basename(src)
    if not dst.startswith("/"):
        dst = "/refcnt/" + dst
    if not os.path.exists(src):
        raise Error(f"--file: {src} does not exist")
    if os.path.isdir(src):
        shutil.copytree(src, root + dst, dirs_exist_ok=True)
    else:
        os.makedirs(os.path.dirname(root + dst), exist_ok=True)
        shutil.copy2(src, root + dst)


def skeleton(v: Vm, root: str) -> None:
    """Busybox, the users, the modules and the helpers."""
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "etc", "proc", "sys",
              "dev", "tmp", "root", "refcnt", "mnt", "etc/refcnt-vm"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy(busybox(v), f"{root}/bin/busybox")
    write(f"{root}/etc/passwd", PASSWD)
    write(f"{root}/etc/group", GROUP)
    write(f"{root}/etc/shells", "/bin/sh\n")
    os.chmod(f"{root}/refcnt", 0o755)
    os.chmod(f"{root}/tmp", 0o1777)
    if v.module:
        shutil.copy(v.module, f"{root}/refcnt/refcnt.ko")
        for f in ("refcnt_test.ko", "refcnt_hub.ko", "refcnt_testpmu.ko"):
            beside = os.path.join(os.path.dirname(v.module), f)
            if os.path.isfile(beside):
                shutil.copy(beside, f"{root}/refcnt/{f}")
    # x86's: arm64 patches a static key's branch in one write, no
    # breakpoint for TCG to replay.
    if v.accel == "tcg" and v.arch == "x86_64":
        shutil.copy(sched_pin(v), f"{root}/etc/refcnt-vm/sched-pin")
    if v.klog_mods:
        os.makedirs(f"{root}/etc/refcnt-vm/klog")
        for m in v.klog_mods:
            shutil.copy(m, f"{root}/etc/refcnt-vm/klog/")
    # The end of the run turns the hub device off with it (/init).
    hub_pmu = os.path.join(v.build, "truth/hub-pmu")
    if v.hub_period and os.access(hub_pmu, os.X_OK):
        shutil.copy(hub_pmu, f"{root}/etc/refcnt-vm/hub-pmu")


def settings(v: Vm, root: str) -> None:
    """/etc/refcnt-vm: env (shell assignments /init sources), dimms,
    hotplug-mem, and cmd (a file of its own: no quoting layer to get
    wrong)."""
    e = f"{root}/etc/refcnt-vm"
    load = int(bool(v.module) and not v.noload)
    write(f"{e}/env", f"NONCE={sq(v.nonce)}\nLOAD={load}\n"
          f"UNLOAD={int(not v.nounload)}\nMODPARAMS={sq(v.modparams)}\n"
          f"HUB={int(bool(v.hub_period))}\nKLOG_TTY={KLOG_TTY[v.arch]}\n")
    write(f"{e}/dimms", "".join(f"{d.node} {d.mb}\n" for d in v.dimms))
    if v.hotplug_mb > 0:
        write(f"{e}/hotplug-mem", f"{v.hotplug_mb}\n")
        write(f"{root}/bin/refcnt-vm-hotplug",
              guest_file("refcnt-vm-hotplug"), 0o755)
    write(f"{e}/cmd", shell_join(v.cmd) if v.cmd else DEFAULT_CMD)


def initramfs(v: Vm) -> None:
    """TMP/root, packed as TMP/initrd.gz (the kernel's built-in
    initramfs provides /dev/console; ours adds to it)."""
    root = f"{v.tmp}/root"
    skeleton(v, root)
    for spec in v.files:
        copy_in(root, spec)
    settings(v, root)
    write(f"{root}/init", guest_file("init"), 0o755)
    if v.debian:
        debian_initramfs(v, root)
    pack(root, f"{v.tmp}/initrd.gz")


def pack(root: str, out: str) -> None:
    names = ["."]
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        for n in dirs + files:
            names.append(os.path.join(".", rel, n) if rel != "." else
                         "./" + n)
    names.sort(key=os.fsencode)
    r = subprocess.run(["cpio", "--null", "-o", "-H", "newc", "-R", "0:0",
                        "--quiet"], cwd=root, capture_output=True,
                       input=b"".join(os.fsencode(n) + b"\0" for n in names))
    if r.returncode:
        raise Error("building the initramfs failed")
    with gzip.open(out, "wb", compresslevel=1) as f:
        f.write(r.stdout)


# --- the Debian root's first stage -------------------------------------

# What makes /init the second stage on the Debian root: busybox's tools
# after Debian's, the command run by Debian's /bin/sh.
DEBIAN_INIT = (
    (r"^/bin/busybox --install -s .*",
     "/.refcnt-vm/busybox --install -s /.refcnt-vm/bin 2>/dev/null"),
    (r"^export PATH=.*HOME", "export PATH=/usr/local/sbin:/usr/local/bin:"
     "/usr/sbin:/usr/bin:/sbin:/bin:/.refcnt-vm/bin HOME"),
    (r"REFCNT_VM=1 sh -c", "REFCNT_VM=1 REFCNT_VM_DEBIAN=1 /bin/sh -c"),
    (r"^mount -t devtmpfs devtmpfs /dev$",
     "mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev"))
# With systemd: leave alone what systemd mounted and what the first
# stage ran.
SYSTEMD_MOUNT = re.compile(
    r"^mount -t ([a-z0-9]*) (.*) (/[a-z/]*)( 2>/dev/null)?$")
# No login prompt on the console, no first-boot questions, and no timer
# (man-db, apt, logrotate...) taking the guest's CPU meanwhile.
SYSTEMD_MASKED = ["serial-getty@ttyS0.service", "getty@tty1.service",
                  "systemd-firstboot.service", "timers.target"]
DECOMPRESS = {".xz": ["xz", "-dc"], ".zst": ["zstd", "-dcq"],
              ".gz": ["gzip", "-dc"]}


def stage_two(init: str, systemd: bool) -> str:
    lines = init.split("\n")
    lines[0] = "#!/.refcnt-vm/busybox sh"
    out = []
    for line in lines:
        for pat, rep in DEBIAN_INIT:
            line = re.sub(pat, rep.replace("\\", "\\\\"), line, count=1)
        if systemd:
            if line.endswith("sched-pin"):
                continue
            line = SYSTEMD_MOUNT.sub(r"mountpoint -q \3 || mount -t \1 \2 \3"
                                     r"\4", line)
        out.append(line)
    return "\n".join(out)


def debian_module(path: str, out: str) -> None:
    with open(out, "wb") as f:
        for ext, dec in DECOMPRESS.items():
            if path.endswith(".ko" + ext):
                subprocess.run([*dec, path], stdout=f, check=True)
                return
    shutil.copy(path, out)


def debian_initramfs(v: Vm, root: str) -> None:
    """The initramfs becomes a first stage: load the modules, mount the
    image, copy /refcnt and the settings in, switch_root to the
    generated init (stage two), which runs from busybox with Debian's
    tools first in PATH."""
    os.makedirs(f"{root}/lib/refcnt-vm", exist_ok=True)
    for i, path in enumerate(v.debian_mods):
        name = os.path.basename(path)
        name = name[:name.rindex(".ko")]
        debian_module(path, f"{root}/lib/refcnt-vm/{i:02d}-{name}.ko")
    e = f"{root}/etc/refcnt-vm"
    write(f"{e}/init", stage_two(guest_file("init"), v.debian_systemd),
          0o755)
    if v.debian_systemd:
        write(f"{e}/systemd",
              "".join(u + "\n" for u in SYSTEMD_MASKED + v.debian_masks))
        for unit in ("refcnt-vm.target", "refcnt-vm.service"):
            write(f"{e}/{unit}", guest_file(unit))
        # The console is the test's: no boot status lines in its output.
        write(f"{e}/system.conf", "[Manager]\nShowStatus=no\n")
    write(f"{root}/init", guest_file("debian-init"), 0o755)


# --- the run -----------------------------------------------------------


def stream(src: IO[bytes], out: IO[bytes], quiet: bool) -> None:
    """QEMU's console output: CRLF -> LF, copied to OUT (the log) and
    (unless QUIET) to stdout as it comes."""
    for line in iter(src.readline, b""):
        if line.endswith(b"\r\n"):
            line = line[:-2] + b"\n"
        elif line.endswith(b"\r"):
            line = line[:-1]
        out.write(line)
        out.flush()
        if not quiet:
            try:
                sys.stdout.buffer.write(line)
                sys.stdout.flush()
            except OSError:
                quiet = True


def run(v: Vm, qemu: List[str], serial: str) -> int:
    """QEMU under timeout -k 5 (124 or 137: timed out); its status."""
    cmd = ["timeout", "-k", "5", v.timeout, QEMU[v.arch], *qemu]
    with open(f"{v.tmp}/qemu.err", "wb") as err, open(serial, "wb") as out:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=err)
        assert p.stdout is not None
        try:
            stream(p.stdout, out, v.quiet)
        finally:
            if p.poll() is None:
                p.terminate()
            rc = p.wait()
    return rc
