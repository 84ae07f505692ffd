# SPDX-License-Identifier: GPL-2.0
"""rig.doccheck: kernel-doc directives and their options read out of a
document, the runs each needs, the problems a run's output makes."""
from __future__ import annotations

import unittest

from rig import doccheck as dc

DOC = """\
Title
=====

.. kernel-doc:: uapi/linux/refcnt.h
   :identifiers: rcb_info  rcb_slot

.. kernel-doc:: kmod/counter.c
   :doc: The   counters
   :bogus:
.. kernel-doc:: kmod/feed.c
.. kernel-doc:: kmod/feed.c
      :export: indented too far ends the directive
text
.. kernel-doc:: uapi/linux/refcnt.h"""


class Directives(unittest.TestCase):
    def test_options_of_each_directive(self) -> None:
        got = [(o.line, o.source, o.opt, o.value)
               for o in dc.directives("d.rst", DOC)]
        self.assertEqual(got, [
            (4, "uapi/linux/refcnt.h", "identifiers", "rcb_info rcb_slot"),
            (7, "kmod/counter.c", "doc", "The counters"),
            (7, "kmod/counter.c", "bogus", ""),
            (10, "kmod/feed.c", "-", ""),
            (11, "kmod/feed.c", "-", ""),
            (14, "uapi/linux/refcnt.h", "-", "")])

    def test_where(self) -> None:
        o = dc.directives("d.rst", DOC)[0]
        self.assertEqual(o.where, "d.rst:4: uapi/linux/refcnt.h")

    def test_runs(self) -> None:
        def r(opt: str, value: str = "") -> object:
            runs = dc.runs(dc.Option("d", 1, "f.c", opt, value))
            return None if runs is None else [(x.what, x.want, x.args)
                                              for x in runs]
        self.assertEqual(r("functions", "a b"), [
            ("a", "a", ["-function", "a", "f.c"]),
            ("b", "b", ["-function", "b", "f.c"])])
        self.assertEqual(r("identifiers"), [])
        self.assertEqual(r("doc", "X Y"),
                         [("DOC: X Y", "", ["-function", "X Y", "f.c"])])
        self.assertEqual(r("internal"), [(":internal:", "", ["f.c"])])
        self.assertEqual(r("-"), [("the whole file", "", ["f.c"])])
        self.assertIsNone(r("bogus"))


class Judge(unittest.TestCase):
    def test_name_must_be_found(self) -> None:
        run = dc.Run("a", "a", [])
        self.assertIsNone(dc.judge(run, ".. c:function:: int a(void)\n", ""))
        self.assertEqual(dc.judge(run, "", ""),
                         "a: kernel-doc finds no such documented name")

    def test_any_stderr_line_is_a_problem(self) -> None:
        run = dc.Run("DOC: X", "", [])
        self.assertIsNone(dc.judge(run, "", "\n\n"))
        self.assertEqual(dc.judge(run, "", "\nw1\nw2\nw3\nw4\n"),
                         "DOC: X: w1 w2 w3 ")
