#!/usr/bin/env bash
# `tracemodel gpu --hta --json` as a whole process on the generated 53 MB trace of bench/gpu.cpp
# (run bench_gpu once first to make it): the median wall time of N runs and the peak resident
# memory. Usage: bench/gpu.sh BUILD_DIR [N]
set -euo pipefail
build=${1:?usage: bench/gpu.sh BUILD_DIR [N]}
n=${2:-5}
trace="$build/bench/gpu_trace_53mb.json"
[ -f "$trace" ] || "$build/bench/bench_gpu" --benchmark_filter=gpu/read/53MB >/dev/null
for policy in --hta ""; do
  times=()
  peak=0
  for _ in $(seq "$n"); do
    out=$( { /usr/bin/time -f "%e %M" "$build/tools/tracemodel" gpu $policy --json "$trace" >/dev/null; } 2>&1 | tail -1)
    times+=("${out% *}")
    kb=${out#* }
    [ "$kb" -gt "$peak" ] && peak=$kb
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (n + 1) / 2 ))p")
  echo "tracemodel gpu ${policy:-(exact)} --json: median ${median} s of $n runs (${times[*]}), peak $((peak / 1024)) MB"
done
