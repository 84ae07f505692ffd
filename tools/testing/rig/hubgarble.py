# SPDX-License-Identifier: GPL-2.0
"""hub-garble: write garbage into a hub device's file while a guest
drains it, from the host, as a buggy or hostile producer would (hub_test's
host_garbage test, run by hub-check).  Waits for "@@hub-garble-start" in
the guest's log, then until "@@hub-garble-stop" (or 300 s) writes into
every ring: random records at its tail with a head that publishes them,
and now and then a head far ahead; at the end the header itself.

The layout is tools/testing/kmod/uapi/linux/refcnt_hub.h's: the header's
first 40 bytes (struct refcnt_hub_header up to record_size), ring R's
control block at 4096 + R * ring_stride (head at 0, tail at 64) and its
records after the 128 bytes of control."""
from __future__ import annotations

import os
import random
import struct
import sys
import time
from dataclasses import dataclass
from typing import BinaryIO, Callable, Sequence

PROG = "hub-garble"
START = "@@hub-garble-start"
STOP = "@@hub-garble-stop"
HEADER = struct.Struct("<QIIQIIII")
HEADER_SIZE = 4096       # REFCNT_HUB_HEADER_SIZE: the rings follow
RING_CTRL = 128          # REFCNT_HUB_RING_CTRL: a ring's records follow
TAIL_OFF = 64            # the ring's tail, which the guest advances
RECORDS_PER_ROUND = 16
WAIT_START = 3000.0      # seconds: no guest test started, nothing to do
WAIT_STOP = 300.0
MASK64 = (1 << 64) - 1


class Fatal(Exception):
    """A message for stderr and the exit status (Perl's die's: errno
    when a system call failed, else 255)."""

    def __init__(self, msg: str, status: int = 255) -> None:
        super().__init__(msg)
        self.status = status


@dataclass(frozen=True)
class Header:
    nr_rings: int
    ring_records: int
    ring_stride: int
    record_size: int


def parse_header(data: bytes) -> Header:
    if len(data) != HEADER.size:
        raise Fatal(f"{PROG}: short header")
    f = HEADER.unpack(data)
    h = Header(*f[4:8])
    if not (h.nr_rings and h.ring_records and h.ring_stride
            and h.record_size and h.record_size % 8 == 0):
        raise Fatal(f"{PROG}: not a hub device")
    return h


def record(rng: random.Random, size: int, reference: bool) -> bytearray:
    """SIZE random bytes; a REFERENCE has kind 0 (bytes 36-37 of a
    version 3 record) with random addresses, the others random kinds:
    both the reference path and the emulated PMU's get garbage."""
    rec = bytearray(b"".join(rng.getrandbits(64).to_bytes(8, "little")
                             for _ in range(size // 8)))
    if reference and size >= 48:
        rec[36:38] = b"\0\0"
    return rec


def pread(f: BinaryIO, off: int, n: int) -> bytes:
    return os.pread(f.fileno(), n, off)


def pwrite(f: BinaryIO, off: int, data: bytes) -> None:
    os.pwrite(f.fileno(), data, off)


def garble_ring(f: BinaryIO, h: Header, ring: int, n: int,
                rng: random.Random) -> None:
    """One round on one ring: 16 records from its tail on, then a head
    that publishes them, or every fourth round a head far ahead."""
    base = HEADER_SIZE + ring * h.ring_stride
    buf = pread(f, base + TAIL_OFF, 8)
    if len(buf) != 8:
        return
    tail = int.from_bytes(buf, "little")
    for i in range(RECORDS_PER_ROUND):
        slot = (tail + i) % h.ring_records
        pwrite(f, base + RING_CTRL + slot * h.record_size,
               record(rng, h.record_size, i % 2 == 0))
    if n % 4 == 3:
        head = tail + 2**40 + rng.randrange(2**20)
    else:
        head = tail + RECORDS_PER_ROUND
    pwrite(f, base, (head & MASK64).to_bytes(8, "little"))


def seen(log: str, marker: str) -> bool:
    try:
        with open(log, "rb") as f:
            return any(marker.encode() in line for line in f)
    except OSError:
        return False


def wait_for(log: str, marker: str, limit: float, pause: float,
             clock: Callable[[], float] = time.monotonic) -> bool:
    t0 = clock()
    while not seen(log, marker):
        if clock() - t0 > limit:
            return False
        time.sleep(pause)
    return True


def garble(f: BinaryIO, log: str, rng: random.Random,
           limit: float = WAIT_STOP) -> str:
    """Rounds over every ring until the log says stop (or LIMIT seconds),
    then the header's first 16 bytes; what was done, for hub-check."""
    h = parse_header(pread(f, 0, HEADER.size))
    n = 0
    t0 = time.monotonic()
    while not seen(log, STOP) and time.monotonic() - t0 <= limit:
        for r in range(h.nr_rings):
            garble_ring(f, h, r, n, rng)
        n += 1
        time.sleep(0.05)
    pwrite(f, 0, rng.getrandbits(128).to_bytes(16, "little"))
    return f"{PROG}: {n} rounds of garbage into {h.nr_rings} rings " \
        "and the header"


def main(argv: Sequence[str]) -> int:
    """hub-garble FILE LOG.  Nothing written, status 0, when the guest's
    test has not started within 3000 s."""
    try:
        if len(argv) < 2:
            raise Fatal(f"usage: {PROG} FILE LOG")
        path, log = argv[0], argv[1]
        if not wait_for(log, START, WAIT_START, 0.2):
            return 0
        try:
            f = open(path, "r+b", buffering=0)
        except OSError as e:
            raise Fatal(f"{PROG}: {path}: {e.strerror}", e.errno or 255)
        with f:
            print(garble(f, log, random.Random()), flush=True)
        return 0
    except Fatal as e:
        print(e, file=sys.stderr)
        return e.status
