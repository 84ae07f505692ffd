# SPDX-License-Identifier: GPL-2.0
"""rig.debugkernel: the options a configuration asks for that Kconfig
dropped, and the cache key."""
from __future__ import annotations

import os
import unittest

from rig import debugkernel

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                    "../../../.."))


class Unmet(unittest.TestCase):
    def test_dropped_options_are_named(self) -> None:
        wanted = ("# comment\nCONFIG_A=y\nCONFIG_B=m\n"
                  "# CONFIG_C is not set\n# CONFIG_D is not set\n")
        dot = "CONFIG_A=y\nCONFIG_B=y\nCONFIG_D=y\n# CONFIG_C is not set\n"
        self.assertEqual(debugkernel.unmet(wanted, dot),
                         ["CONFIG_B=m", "# CONFIG_D is not set"])

    def test_configs_of_the_tree_parse(self) -> None:
        for v in debugkernel.VARIANTS:
            text = debugkernel.DebugKernel(ROOT, v).config_text()
            self.assertIn("CONFIG_NUMA=y", text)
            # Every line held by a .config made of the lines themselves.
            self.assertEqual(debugkernel.unmet(text, text), [])

    def test_patches_are_in_the_key(self) -> None:
        k = debugkernel.DebugKernel(ROOT)
        names = [os.path.basename(p) for p in k.patches()]
        self.assertIn("0001-perf-export-overflow-for-the-test-PMU.patch",
                      names)
        text = k.patch_text()
        self.assertIn("+EXPORT_SYMBOL_GPL(perf_event_overflow);", text)
        self.assertIn("+EXPORT_SYMBOL_GPL(perf_sample_event_took);", text)

    def test_unknown_variant(self) -> None:
        with self.assertRaisesRegex(debugkernel.BuildError, "no variant x"):
            debugkernel.DebugKernel(ROOT, "x")


if __name__ == "__main__":
    unittest.main()
