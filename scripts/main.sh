#!/usr/bin/env bash
# The main job: builds the example runtime and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release -DTRACEMODEL_BUILD_EXAMPLES=ON >/dev/null
cmake --build --preset release --target two_threads
./build/release/examples/two_threads
