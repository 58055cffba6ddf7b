#!/usr/bin/env bash
# The main job: builds the example runtime (examples/mini_runtime) and the tracemodel program,
# trains a small MLP under the profiler, and writes the trace, the report, a flame chart and the
# memory timeline's page.
# Usage: scripts/main.sh [--out DIR]   (default: build/release/examples/mini_runtime_out)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
out=build/release/examples/mini_runtime_out
if [ "${1:-}" = "--out" ] && [ -n "${2:-}" ]; then out=$2; fi
cmake --preset release -DTRACEMODEL_BUILD_EXAMPLES=ON >/dev/null
cmake --build --preset release --target mini_runtime tracemodel_cli
./build/release/examples/mini_runtime --out "$out"
./build/release/tools/tracemodel flame "$out/trace.json" -o "$out/flame.svg"
./build/release/tools/tracemodel memory "$out/memory.raw.json.gz" -o "$out/memory.html" >/dev/null
echo
echo "wrote $out/trace.json and $out/trace.pftrace (open either in https://ui.perfetto.dev),"
echo "      $out/report.txt, $out/flame.svg,"
echo "      $out/memory.raw.json.gz (PyTorch's memory timeline file) and $out/memory.html"
