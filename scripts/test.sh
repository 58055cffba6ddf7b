#!/usr/bin/env bash
# The whole test suite: the project's checks in an unsanitized build (the documentation's
# examples, every header on its own, every documented call through the umbrella header,
# compile-fail programs, format and clang-tidy, the include graph, the installed package, the
# browser, resident memory), every other test group under AddressSanitizer + UBSan, and the
# concurrency tests under ThreadSanitizer. Prints each phase's time at the end. (`ctest --preset
# dev` runs all of it unsanitized, in one build.)
set -euo pipefail
cd "$(dirname "$0")/.."
# The browser test (speedscope in headless Chromium) needs Chromium and Node.js with npm.
extra=()
command -v chromium >/dev/null || extra+=(chromium)
command -v node >/dev/null || extra+=(nodejs)
command -v npm >/dev/null || extra+=(npm)
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
echo "== checks"
phase "checks config" cmake --preset checks >/dev/null
phase "checks build" cmake --build --preset checks -j "$jobs"
# The checks' tests wait on much (npm, the browser, the consumer project's configure): they run
# beside the sanitizer build, their output kept and shown once they end.
checks_log=build/checks/tests.log
checks_start=$SECONDS
ctest --preset checks -j "$jobs" >"$checks_log" 2>&1 &
checks_pid=$!
echo "== asan"
phase "asan config" cmake --preset asan >/dev/null
phase "asan build" cmake --build --preset asan -j "$jobs"
checks_status=0
wait "$checks_pid" || checks_status=$?
echo "== checks tests"
cat "$checks_log"
times+=("$(printf '%-14s %4d s (beside the asan build)' "checks tests" $((SECONDS - checks_start)))")
[ "$checks_status" -eq 0 ] || exit "$checks_status"
phase "asan tests" ctest --preset asan -j "$jobs"
echo "== tsan"
phase "tsan config" cmake --preset tsan >/dev/null
phase "tsan build" cmake --build --preset tsan -j "$jobs"
phase "tsan tests" ctest --preset tsan -j "$jobs"
echo "all test suites passed"
