#!/usr/bin/env bash
# The report's browser test: `tracemodel report` on the two rank traces (or, with `diff`,
# `tracemodel diff -o` on the two compared runs, or with `memory`, `tracemodel memory -o` on a
# trace and on the main job's memory timeline file and `tracemodel report` on a trace with
# allocations), opened in headless Chromium (report.mjs).
# npm packages go to WORK_DIR, never to the source tree.
#   report.sh TRACEMODEL DATA_DIR WORK_DIR [diff | memory MINI_RUNTIME]
# Exit status 77 (skipped) when the npm packages cannot be installed (no registry).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
program=$1
data=$2
work=$3
mkdir -p "$work"
cp "$here/package.json" "$here/report.mjs" "$work/"
if [ ! -d "$work/node_modules/playwright-core" ]; then
  if ! (cd "$work" && npm install --no-audit --no-fund --loglevel=error >/dev/null 2>&1); then
    echo "npm install failed (no registry?): skipped"
    exit 77
  fi
fi
if [ "${4:-}" = memory ]; then  # `tracemodel memory -o`'s pages: a trace's, a timeline file's
  "$program" memory "$data/pytorch-1.13-kineto/memory_profile.kineto.json" \
    -o "$work/memory.html" >/dev/null
  node "$work/report.mjs" "$work/memory.html" "$work/memory.png"
  "$5" --out "$work/mini_runtime" >/dev/null  # the main job's PyTorch memory timeline file
  "$program" memory "$work/mini_runtime/memory.raw.json.gz" -o "$work/memory_file.html" >/dev/null
  node "$work/report.mjs" "$work/memory_file.html" "$work/memory_file.png"
  # `tracemodel report` with a memory section
  "$program" report "$data/pytorch-1.13-kineto/memory_profile.kineto.json" \
    -o "$work/report_memory.html" >/dev/null
  node "$work/report.mjs" "$work/report_memory.html" "$work/report_memory.png"
elif [ "${4:-}" = diff ]; then  # `tracemodel diff -o`'s page
  "$program" diff --iteration 1010 "$data/kineto/trace_compare_base_base.json.gz" \
    "$data/kineto/trace_compare_test_test.json.gz" -o "$work/diff.html" >/dev/null
  node "$work/report.mjs" "$work/diff.html" "$work/diff.png"
else
  "$program" report "$data/kineto/trace_filter_sampled_rank-0.json.gz" \
    "$data/kineto/trace_filter_sampled_rank-1.json.gz" -o "$work/report.html" >/dev/null
  node "$work/report.mjs" "$work/report.html" "$work/report.png"
fi
