#!/usr/bin/env bash
# The report's browser test: `tracemodel report` on the two rank traces, opened in headless
# Chromium (report.mjs). npm packages go to WORK_DIR, never to the source tree.
#   report.sh TRACEMODEL DATA_DIR WORK_DIR
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
"$program" report "$data/kineto/trace_filter_sampled_rank-0.json.gz" \
  "$data/kineto/trace_filter_sampled_rank-1.json.gz" -o "$work/report.html" >/dev/null
node "$work/report.mjs" "$work/report.html" "$work/report.png"
