#!/usr/bin/env bash
# The whole test suite: the dev suite (Debug, warnings as errors), the same suite under
# AddressSanitizer + UBSan (the browser test runs once, in the dev suite), and the concurrency
# tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
# The browser test (speedscope in headless Chromium) needs Chromium and Node.js with npm.
extra=()
command -v chromium >/dev/null || extra+=(chromium)
command -v node >/dev/null || extra+=(nodejs)
command -v npm >/dev/null || extra+=(npm)
scripts/deps.sh "${extra[@]}"
jobs=$(nproc)
for preset in dev asan tsan; do
  echo "== $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
echo "all test suites passed"
