#!/usr/bin/env bash
# The whole test suite: the project's checks in an unsanitized build (the documentation's
# examples, every header on its own, every documented call through the umbrella header,
# compile-fail programs, format and clang-tidy, the include graph, the installed package, the
# browser, resident memory, the libtorch adapter against PyTorch's own profiler, the Python
# package installed by pip and its pytest suite), the other test groups and the libtorch
# adapter's again (compiled by clang 14) under AddressSanitizer + UBSan, and the concurrency
# tests under ThreadSanitizer. Prints each phase's time at the end (a preset's tests run beside the
# next preset's build, their output printed when they end).
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
pending=()  # the test phases running in the background: "PID NAME LOG START"
phase() {  # phase NAME COMMAND...: runs it and keeps its time
  local name=$1 start=$SECONDS
  shift
  "$@"
  times+=("$(printf '%-14s %4d s' "$name" $((SECONDS - start)))")
}
tests_begin() {  # tests_begin PRESET: its tests, in the background, their output in a log
  local log=build/$1/tests.log
  setsid -w ctest --preset "$1" -j "$jobs" >"$log" 2>&1 &  # (a group of its own: stopped whole)
  pending+=("$! $1 $log $SECONDS")
}
tests_end() {  # tests_end: waits for the oldest test phase, prints its output, fails with it
  local pid name log start status=0
  read -r pid name log start <<<"${pending[0]}"
  pending=("${pending[@]:1}")
  wait "$pid" || status=$?
  echo "== $name tests"
  cat "$log"
  times+=("$(printf '%-14s %4d s (from %d s)' "$name tests" $((SECONDS - start)) "$start")")
  return "$status"
}
report() {  # each phase's time, also when one fails (test phases still running are stopped)
  local entry
  for entry in "${pending[@]}"; do
    kill -- "-${entry%% *}" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  printf '%s\n' "${times[@]}"
  echo "total          ${SECONDS} s"
}
trap report EXIT
# Each preset's tests run while the next preset builds: a test phase alone leaves a core idle at
# times (a test waiting on its child processes, the last long test), which the next build fills.
for preset in checks asan tsan; do
  # (at most one test phase beside a build: two would crowd the build out)
  ((${#pending[@]} < 2)) || tests_end
  echo "== $preset"
  phase "$preset config" cmake --preset "$preset" >/dev/null
  phase "$preset build" cmake --build --preset "$preset" -j "$jobs"
  tests_begin "$preset"  # (beside the previous preset's tests when they still run)
done
while ((${#pending[@]} > 0)); do tests_end; done
echo "all test suites passed"
