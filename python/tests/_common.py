"""Shared set-up of the binding's tests: find the package and the library, and numpy.

The tests import graphdirect from python/ of this source tree and load the library named by
$GRAPHDIRECT_LIB (ctest passes the one it built). Without numpy they skip (exit 77), except
under CI, where numpy is part of the project's own setup (scripts/install-deps.sh).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

try:
    import numpy as np  # noqa: F401
except ImportError:
    if os.environ.get("CI"):
        print("numpy missing: run scripts/install-deps.sh", file=sys.stderr)
        sys.exit(1)
    print("numpy missing: skipping", file=sys.stderr)
    sys.exit(77)

import graphdirect  # noqa: E402,F401


def run_unittest():
    """unittest.main with exit codes ctest reads: 0 pass, 1 fail, 77 every test skipped."""
    import unittest
    prog = unittest.main(exit=False, verbosity=2)
    r = prog.result
    if not r.wasSuccessful():
        sys.exit(1)
    if r.testsRun and len(r.skipped) == r.testsRun:
        sys.exit(77)
    sys.exit(0)
