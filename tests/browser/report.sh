#!/usr/bin/env bash
# The report's browser test: `tracemodel report` on the two rank traces (or, with `diff`,
# `tracemodel diff -o` on the two compared runs), opened in headless Chromium (report.mjs). npm
# packages go to WORK_DIR, never to the source tree.
#   report.sh TRACEMODEL DATA_DIR WORK_DIR [diff]
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
if [ "${4:-}" = diff ]; then  # `tracemodel diff -o`'s page
  "$program" diff --iteration 1010 "$data/kineto/trace_compare_base_base.json.gz" \
    "$data/kineto/trace_compare_test_test.json.gz" -o "$work/diff.html" >/dev/null
  node "$work/report.mjs" "$work/diff.html" "$work/diff.png"
else
  "$program" report "$data/kineto/trace_filter_sampled_rank-0.json.gz" \
    "$data/kineto/trace_filter_sampled_rank-1.json.gz" -o "$work/report.html" >/dev/null
  node "$work/report.mjs" "$work/report.html" "$work/report.png"
fi
