# Builds tracemodel._core from the C++ headers beside this folder (../include); the rest of the
# package is pure Python. `pip install --no-build-isolation ./python` uses the setuptools,
# pybind11, NumPy and pandas already installed (Debian's: python3-setuptools, pybind11-dev,
# python3-pybind11, python3-numpy, python3-pandas), and simdjson and zlib to link.
import os

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension
from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
include = os.path.normpath(os.path.join(here, "..", "include"))
if not os.path.isdir(os.path.join(include, "tracemodel")):
    raise SystemExit("tracemodel's headers are not at " + include + ": build from the repository")

ParallelCompile("TRACEMODEL_BUILD_JOBS", default=0).install()
# TRACEMODEL_PY_OPT=-O0: an unoptimized build that compiles in less time (the test suite's
# install, which checks the packaging, not the speed).
opt = os.environ.get("TRACEMODEL_PY_OPT", "-O2")
with open(os.path.join(here, "src", "sources.txt")) as f:  # (CMakeLists.txt reads it too)
    sources = [os.path.join("src", s) for s in f.read().split("\n") if s and s[0] != "#"]
core = Pybind11Extension(
    "tracemodel._core",
    sources,
    include_dirs=[include],
    libraries=["simdjson", "fmt", "z"],
    cxx_std=20,
    extra_compile_args=[opt, "-g0"],
)
setup(ext_modules=[core])
