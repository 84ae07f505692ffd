# SPDX-License-Identifier: GPL-2.0
"""rig.fleethost: the PMDA's files of the tree, and what the checks read
in the exporter's HTTP answers and a dbpmda session."""
from __future__ import annotations

import os
import tempfile
import unittest

from rig import fleethost as fh

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                    "../../../.."))
PMDA = os.path.join(ROOT, "tools/pmda")


class PmdaFiles(unittest.TestCase):
    def test_pmns(self) -> None:
        text = "/* x */\nrefcnt {\n    loaded\tREFCNT:0:0\n    node\n}\n\n" \
            "refcnt.node {\n    refs\tREFCNT:1:0\n}\n"
        self.assertEqual(fh.pmns_names(text),
                         ["refcnt.loaded", "refcnt.node.refs"])

    def test_tree_pmns_and_help_agree(self) -> None:
        names = fh.pmns_names(fh.read(os.path.join(PMDA, "pmns")))
        helps = fh.read(os.path.join(PMDA, "help"))
        self.assertGreaterEqual(len(names), 25)
        self.assertEqual(fh.missing_extra(sorted(names),
                                          sorted(fh.help_names(helps))),
                         ([], []))
        self.assertEqual(fh.indom_helps(helps), 4)

    def test_missing_and_extra(self) -> None:
        self.assertEqual(fh.missing_extra(["a", "b", "b"], ["b", "c"]),
                         (["a", "b"], ["c"]))


OK_004 = ("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
          "\r\n# TYPE refcnt_up gauge\nrefcnt_up 0\n")
OK_OM = ("HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; "
         "version=1.0.0; charset=utf-8\r\n\r\nrefcnt_up 0\n# EOF\n")


class Http(unittest.TestCase):
    def test_text_004(self) -> None:
        self.assertTrue(fh.http_ok_004(OK_004))
        self.assertFalse(fh.http_ok_004(OK_004 + "# EOF\n"))
        self.assertFalse(fh.http_ok_004(OK_004.replace("200 OK", "500 X")))
        self.assertFalse(fh.http_ok_004(""))

    def test_openmetrics(self) -> None:
        self.assertTrue(fh.http_openmetrics(OK_OM))
        self.assertFalse(fh.http_openmetrics(OK_OM + "x\n"))
        self.assertFalse(fh.http_openmetrics(OK_004))

    def test_no_server(self) -> None:
        self.assertEqual(fh.get(1), "")


DBPMDA = """\
PMID: 510.0.0
    Data Type: 32-bit unsigned int  InDom: PM_INDOM_NULL 0xffffffff
    Semantics: instant  Units: none
Help:
Whether the module is loaded
PMID: 510.3.0
    Data Type: 64-bit unsigned int  InDom: 510.1 0x7fc00001
    Semantics: counter  Units: count
pmResult dump from 0x1 timestamp: 0.000000 1:00:00.000 numpmid: 3
  510.0.0 (refcnt.loaded): numval: 1 valfmt: 0 vlist[]:
   value 0 0x0
  510.1.0 (refcnt.node.references): No values returned!
  510.3.0 (refcnt.access.references): No values returned!
"""


class Dbpmda(unittest.TestCase):
    def test_complete(self) -> None:
        self.assertTrue(fh.dbpmda_complete(DBPMDA, 2))
        self.assertFalse(fh.dbpmda_complete(DBPMDA, 3))
        self.assertFalse(fh.dbpmda_complete(DBPMDA + "Unknown metric\n", 2))

    def test_without_the_module(self) -> None:
        self.assertTrue(fh.dbpmda_no_module(DBPMDA))
        self.assertFalse(fh.dbpmda_no_module(
            DBPMDA.replace("value 0", "value 1")))


@unittest.skipUnless(fh.have_module("prometheus_client"),
                     "python3-prometheus-client is not installed")
class Parsers(unittest.TestCase):
    def test_family_count_is_checked(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            prom, om = os.path.join(d, "p"), os.path.join(d, "o")
            with open(prom, "w") as f:
                f.write("# TYPE a gauge\na 1\n")
            with open(om, "w") as f:
                f.write("# TYPE a gauge\na 1\n# EOF\n")
            self.assertEqual(fh.parse_both(prom, om),
                             "AssertionError: (1, 1)")
            with open(om, "w") as f:
                f.write("a 1\n")
            self.assertTrue(fh.parse_both(prom, om).startswith("ValueError"))
