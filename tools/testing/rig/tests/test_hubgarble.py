# SPDX-License-Identifier: GPL-2.0
"""rig.hubgarble: the hub header read, and the garbage written into a
scratch hub file."""
from __future__ import annotations

import os
import random
import struct
import tempfile
import unittest

from rig import hubgarble as hg

NR, RECS, RSIZE = 2, 32, 48
STRIDE = hg.RING_CTRL + RECS * RSIZE
TAILS = (3, 30)


def image() -> bytearray:
    buf = bytearray(hg.HEADER_SIZE + NR * STRIDE)
    hg.HEADER.pack_into(buf, 0, 0x4255484E43524652, 3, 4096, len(buf),
                        NR, RECS, STRIDE, RSIZE)
    for r, tail in enumerate(TAILS):
        struct.pack_into("<Q", buf, hg.HEADER_SIZE + r * STRIDE + 64, tail)
    return buf


class Header(unittest.TestCase):
    def test_parse(self) -> None:
        h = hg.parse_header(bytes(image()[:hg.HEADER.size]))
        self.assertEqual(h, hg.Header(NR, RECS, STRIDE, RSIZE))

    def test_short_or_not_a_hub(self) -> None:
        with self.assertRaisesRegex(hg.Fatal, "short header"):
            hg.parse_header(b"\0" * 20)
        with self.assertRaisesRegex(hg.Fatal, "not a hub device"):
            hg.parse_header(b"\0" * 40)
        bad = image()
        struct.pack_into("<I", bad, 36, 44)    # record size not 8n
        with self.assertRaisesRegex(hg.Fatal, "not a hub device"):
            hg.parse_header(bytes(bad[:40]))


class Garble(unittest.TestCase):
    def setUp(self) -> None:
        fd, self.path = tempfile.mkstemp()
        os.write(fd, image())
        os.close(fd)

    def tearDown(self) -> None:
        os.unlink(self.path)

    def ring(self, data: bytes, r: int) -> bytes:
        b = hg.HEADER_SIZE + r * STRIDE
        return data[b:b + STRIDE]

    def test_rounds_write_records_at_tail_and_a_head(self) -> None:
        h = hg.Header(NR, RECS, STRIDE, RSIZE)
        rng = random.Random(1)
        with open(self.path, "r+b", buffering=0) as f:
            for n in range(4):
                for r in range(NR):
                    hg.garble_ring(f, h, r, n, rng)
        with open(self.path, "rb") as f:
            data = f.read()
        for r, tail in enumerate(TAILS):
            ring = self.ring(data, r)
            head = struct.unpack_from("<Q", ring, 0)[0]
            # Round 3 of every 4 puts the head far ahead.
            self.assertTrue(tail + 2**40 <= head < tail + 2**40 + 2**20)
            self.assertEqual(ring[8:128], self.ring(image(), r)[8:128])
            for s in range(RECS):
                rec = ring[128 + s * RSIZE:128 + (s + 1) * RSIZE]
                i = (s - tail) % RECS
                if i >= 16:
                    self.assertEqual(rec, bytes(RSIZE))
                elif i % 2 == 0:
                    self.assertEqual(rec[36:38], b"\0\0")

    def test_stop_in_the_log_garbles_only_the_header(self) -> None:
        with tempfile.NamedTemporaryFile("w") as log:
            log.write(f"x\n{hg.START}\n{hg.STOP}\n")
            log.flush()
            with open(self.path, "r+b", buffering=0) as f:
                said = hg.garble(f, log.name, random.Random(2))
        self.assertEqual(said, "hub-garble: 0 rounds of garbage into 2 rings"
                         " and the header")
        with open(self.path, "rb") as f:
            data = f.read()
        self.assertNotEqual(data[:16], image()[:16])
        self.assertEqual(data[16:], image()[16:])

    def test_no_log_no_start(self) -> None:
        self.assertFalse(hg.seen("/nonexistent/log", hg.START))
        self.assertFalse(hg.wait_for("/nonexistent/log", hg.START, 0, 0))
