#!/usr/bin/env bash
# The whole test suite: the project's checks in an unsanitized build (the documentation's
# examples, every header on its own, every documented call through the umbrella header,
# compile-fail programs, format and clang-tidy, the include graph, the installed package, the
# browser, resident memory, the libtorch adapter against PyTorch's own profiler, the Python
# package installed by pip and its pytest suite), the other test groups and the libtorch
# adapter's again (compiled by clang 14) under AddressSanitizer + UBSan, and the concurrency
# tests under ThreadSanitizer. Prints each phase's time at the end.
# (`ctest --preset dev` runs all of it unsanitized, in one build.)
set -euo pipefail
cd "$(dirname "$0")/.."
# The browser test (speedscope in headless Chromium) needs Chromium and Node.js with npm.
extra=()
command -v chromium >/dev/null || extra+=(chromium)
command -v node >/dev/null || extra+=(nodejs)
command -v npm >/dev/null || extra+=(npm)
# The libtorch adapter's test and example need libtorch (Debian's libtorch-dev); the Perfetto
# tests encode and decode traces with protoc (protobuf-compiler).
extra+=(libtorch-dev protobuf-compiler)
# The Python package (python/): built with pybind11 against Debian's NumPy and pandas, installed
# by pip into a virtual environment, tested with pytest; plotly draws HTA's figures; the cluster's
# tests start a Dask scheduler and workers (python3-distributed).
extra+=(pybind11-dev python3-pybind11 python3-dev python3-numpy python3-pandas python3-pytest
        python3-setuptools python3-wheel python3-pip python3-venv python3-plotly pyflakes3
        python3-distributed)
scripts/deps.sh "${extra[@]}"
jobs=$(nproc)
times=()
phase() {  # phase NAME COMMAND...: runs it and keeps its time
  local name=$1 start=$SECONDS
  shift
  "$@"
  times+=("$(printf '%-14s %4d s' "$name" $((SECONDS - start)))")
}
report() {  # each phase's time, also when one fails
  printf '%s\n' "${times[@]}"
  echo "total          ${SECONDS} s"
}
trap report EXIT
for preset in checks asan tsan; do
  echo "== $preset"
  phase "$preset config" cmake --preset "$preset" >/dev/null
  phase "$preset build" cmake --build --preset "$preset" -j "$jobs"
  phase "$preset tests" ctest --preset "$preset" -j "$jobs"
done
echo "all test suites passed"
