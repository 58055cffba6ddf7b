#!/usr/bin/env bash
# The Python package as users install it: `pip install --no-build-isolation` of a copy of the
# repository's python/ (and include/, which it compiles) into a virtual environment that sees
# Debian's packages (NumPy, pandas, pybind11, setuptools), offline (--no-index).
#   venv.sh SOURCE_DIR WORK_DIR      (the environment: WORK_DIR/venv)
set -euo pipefail
src=$1 work=$2
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3  # (Debian's, with its NumPy and pandas)
rm -rf "$work"
mkdir -p "$work/src"
cp -r "$src/python" "$src/include" "$work/src/"
rm -rf "$work/src/python/build" "$work/src/python/"*.egg-info "$work/src/python/tracemodel/"_core*.so
find "$work/src/python" -name __pycache__ -prune -exec rm -rf {} +
"$py" -m venv --system-site-packages "$work/venv"
# (unoptimized: this checks the packaging; the speed is the benchmarks' business; by clang 14
# when present, in about 60% of g++'s time, with the project's warnings as errors)
if command -v clang++ >/dev/null; then
  export CC=clang++ CXX=clang++
  export CFLAGS="-Wall -Wextra -Wpedantic -Wconversion -Wshadow -Werror"
fi
TRACEMODEL_PY_OPT=-O0 "$work/venv/bin/python" -m pip install --no-build-isolation --no-index \
  --quiet "$work/src/python"
cd "$work"  # (not beside the sources: the installed package is the one imported)
"$work/venv/bin/python" -c 'import tracemodel, tracemodel.hta; print("installed", tracemodel.__version__, "in", tracemodel.__file__)'
