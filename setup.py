"""Build script: compiles every Cython kernel in fastspectral/_ext with OpenMP.

``FASTSPECTRAL_BOUNDSCHECK=1`` builds the kernels with Cython's run-time checks switched on
(``boundscheck``, ``wraparound``, ``initializedcheck``; slower, for testing only):
``tools/check_bounds.sh`` builds that way into a temporary copy and runs the kernel tests.
The kernel sources carry no such directive themselves, so that this switch decides.
"""
import glob
import os
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup


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
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={"boundscheck": checks, "wraparound": checks, "cdivision": True,
                             "initializedcheck": checks},
    ),
)
