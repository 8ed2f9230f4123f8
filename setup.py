"""Build script: compiles every Cython kernel in fastspectral/_ext with OpenMP.

``FASTSPECTRAL_BOUNDSCHECK=1`` builds the kernels with Cython's run-time checks switched on
(``boundscheck``, ``wraparound``, ``initializedcheck``; slower, for testing only):
``tools/check_bounds.sh`` builds that way into a temporary copy and runs the kernel tests.
The kernel sources carry no such directive themselves, so that this switch decides.

After the package is built (``build``: Python files and extensions in the build tree), the
build runs ``python -m fastspectral.cli.warmup`` there: every command once on toy data, which
compiles the Numba kernels into ``fastspectral/_jitcache`` of the build tree, installed with
the package (see ``docs/first-run.md``).  ``FASTSPECTRAL_NO_WARMUP=1`` skips it; editable
installs skip it (their kernels compile on first use, into the source tree).  A failed warm-up
is reported and leaves the kernels to compile on first use.
"""
import glob
import os
import subprocess
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build import build


class build_with_warmup(build):
    """``build``, then the Numba warm-up in the build tree (``FASTSPECTRAL_NO_WARMUP=1`` skips)."""

    def run(self):
        super().run()
        if os.environ.get("FASTSPECTRAL_NO_WARMUP", "") not in ("", "0"):
            print("fastspectral: FASTSPECTRAL_NO_WARMUP set: kernels compile on first use")
            return
        lib = os.path.abspath(self.build_lib)
        if not os.path.isdir(os.path.join(lib, "fastspectral")):
            return
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([lib] + [p for p in [env.get("PYTHONPATH")] if p])
        print("fastspectral: compiling the Numba kernels into the build (a few minutes; "
              "FASTSPECTRAL_NO_WARMUP=1 skips)", flush=True)
        rc = subprocess.call([sys.executable, "-m", "fastspectral.cli.warmup", "-q"], env=env,
                             cwd=lib)
        if rc:
            print("fastspectral: warning: the warm-up failed; kernels compile on first use",
                  flush=True)


def _openmp_flags():
    if sys.platform == "darwin":  # Apple clang needs libomp; build without OpenMP there
        return [], []
    if sys.platform == "win32":
        return ["/openmp"], []
    return ["-fopenmp"], ["-fopenmp"]


compile_omp, link_omp = _openmp_flags()
checks = os.environ.get("FASTSPECTRAL_BOUNDSCHECK", "") not in ("", "0")
extensions = []
for pyx in sorted(glob.glob(os.path.join("fastspectral", "_ext", "*.pyx"))):
    name = pyx[:-4].replace(os.sep, ".")
    extensions.append(
        Extension(
            name,
            [pyx],
            include_dirs=[np.get_include()],
            extra_compile_args=["-O3"] + compile_omp,
            extra_link_args=link_omp,
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        )
    )

setup(
    cmdclass={"build": build_with_warmup},
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={"boundscheck": checks, "wraparound": checks, "cdivision": True,
                             "initializedcheck": checks},
    ),
)
