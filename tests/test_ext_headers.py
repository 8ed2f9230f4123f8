"""The shared C header of the compiled kernels compiles on every target the package supports:
with the x86-64 ``target_clones`` (this machine) and without them (other CPUs and toolchains,
simulated with ``FASTSPECTRAL_NO_CLONES``) — each function defined once."""
import os
import shutil
import subprocess

import pytest

HEADER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "fastspectral", "_ext", "small_dense.h")


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc on this machine")
@pytest.mark.parametrize("defines", [[], ["-DFASTSPECTRAL_NO_CLONES"]], ids=["clones", "plain"])
def test_small_dense_header_compiles(defines):
    r = subprocess.run(["gcc", "-fsyntax-only", "-Wall", "-Werror", "-fopenmp", "-x", "c",
                        *defines, HEADER], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
