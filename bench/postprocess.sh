#!/usr/bin/env bash
# Runs bench_postprocess the way its figures are reported: each benchmark once in a fresh
# process for its peak memory (allocators keep freed memory within a process), then with
# repetitions for its time (median). Usage: bench/postprocess.sh [build dir] [repetitions]
set -euo pipefail
build=${1:-build/release}
reps=${2:-5}
bin=$build/bench/bench_postprocess
summary='
import json, sys
peak = sys.argv[1]
for b in json.load(sys.stdin)["benchmarks"]:
    if b.get("aggregate_name") == "median":
        name = b["run_name"].split("/iterations")[0]
        # ns per event from the wall-clock median (analyze runs two threads at once).
        print("%-30s %9.1f ms %7.1f ns/event  peak %s B/event (first run)"
              % (name, b["real_time"], b["real_time"] * 1e6 / b["events"], peak))
'
for name in postprocess/materialize/1M postprocess/materialize/10M postprocess/tracemodel/1M \
            postprocess/tracemodel/10M postprocess/baseline/1M postprocess/baseline/10M; do
  peak=$("$bin" --benchmark_filter="^$name/" --benchmark_format=json 2>/dev/null |
         python3 -c 'import json,sys; b=json.load(sys.stdin)["benchmarks"][0]; print(round(b.get("peak_bytes_per_event",0)))')
  "$bin" --benchmark_filter="^$name/" --benchmark_repetitions="$reps" \
         --benchmark_report_aggregates_only=true --benchmark_format=json 2>/dev/null |
    python3 -c "$summary" "$peak"
done
# The pattern benchmarks share one process (the analysed table is made once); no peak.
"$bin" --benchmark_filter="^patterns/" --benchmark_repetitions="$reps" \
       --benchmark_report_aggregates_only=true --benchmark_format=json 2>/dev/null |
  python3 -c "$summary" "-"
