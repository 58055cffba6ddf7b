#!/usr/bin/env bash
# The browser test: runs the main job's runtime, then opens its trace in speedscope in headless
# Chromium (speedscope.mjs). npm packages go to WORK_DIR, never to the source tree.
#   run.sh MINI_RUNTIME WORK_DIR
# Exit status 77 (skipped) when the npm packages cannot be installed (no registry).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
runtime=$1
work=$2
mkdir -p "$work"
cp "$here/package.json" "$here/speedscope.mjs" "$work/"
if [ ! -d "$work/node_modules/speedscope" ] || [ ! -d "$work/node_modules/playwright-core" ]; then
  if ! (cd "$work" && npm install --no-audit --no-fund --loglevel=error >/dev/null 2>&1); then
    echo "npm install failed (no registry?): skipped"
    exit 77
  fi
fi
"$runtime" --out "$work/out" >/dev/null
node "$work/speedscope.mjs" "$work/out/trace.json" "$work/speedscope.png" 2
