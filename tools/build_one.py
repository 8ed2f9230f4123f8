"""Build one or more Cython kernels in place (development helper; `pip install .` builds them all).

    python tools/build_one.py fastspectral/_ext/cky.pyx [more.pyx ...]

Each extension gets its own build directory, so several kernels can be built at the same time.
"""
import os
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# FASTSPECTRAL_BOUNDSCHECK=1: Cython's run-time checks on, as in setup.py
checks = os.environ.get("FASTSPECTRAL_BOUNDSCHECK", "") not in ("", "0")
os.chdir(HERE)
for pyx in sys.argv[1:]:
    pyx = os.path.relpath(os.path.abspath(pyx), HERE)
    name = pyx[:-4].replace(os.sep, ".")
    ext = Extension(name, [pyx], include_dirs=[np.get_include()],
                    extra_compile_args=["-O3", "-fopenmp"], extra_link_args=["-fopenmp"],
                    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")])
    setup(name="fastspectral-dev", script_args=["build_ext", "--inplace", "--build-temp",
                                                 os.path.join("build", "tmp-" + name)],
          ext_modules=cythonize([ext], language_level=3, quiet=True,
                                compiler_directives={"boundscheck": checks, "wraparound": checks,
                                                     "cdivision": True, "initializedcheck": checks}))
