#!/usr/bin/env bash
# The whole test suite: the dev suite (Debug, warnings as errors), the same suite under
# AddressSanitizer + UBSan, and the concurrency tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
for preset in dev asan tsan; do
  echo "== $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
echo "all test suites passed"
