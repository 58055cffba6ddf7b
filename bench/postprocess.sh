#!/usr/bin/env bash
# Runs bench_postprocess the way its figures are reported: tracemodel and the baseline once
# each in a fresh process for their peak memory (allocators keep freed memory within a
# process; materialization and the patterns report none), then every benchmark with
# repetitions for its time (median). tracemodel and the baseline of one size share a process
# and their repetitions are interleaved in random order, so that both meet the same spells of
# a drifting machine and their ratio compares like with like. `postprocess/tracemodel_cold` and
# the baseline then do the same, the analysis given fresh memory before every run (see
# bench/postprocess.cpp).
# Usage: bench/postprocess.sh [build dir] [repetitions]
set -euo pipefail
build=${1:-build/release}
reps=${2:-5}
bin=$build/bench/bench_postprocess
summary='
import json, sys
peaks = dict(a.split("=", 1) for a in sys.argv[1:])
medians = {}
for b in json.load(sys.stdin)["benchmarks"]:
    if b.get("aggregate_name") == "median":
        name = b["run_name"].split("/iterations")[0]
        medians[name] = b["real_time"]
        # ns per event from the wall-clock median (analyze runs two threads at once).
        faults = ("  %6d page faults" % b["page_faults"]) if "page_faults" in b else ""
        print("%-32s %9.1f ms %7.1f ns/event  peak %s B/event (first run)%s"
              % (name, b["real_time"], b["real_time"] * 1e6 / b["events"], peaks.get(name, "-"), faults))
for size in ("1M", "10M"):
    for memory in ("", "_cold"):
        t = medians.get("postprocess/tracemodel%s/%s" % (memory, size))
        base = medians.get("postprocess/baseline/" + size)
        if t and base:
            print("%-32s %9.2f x (medians of interleaved repetitions)"
                  % ("baseline/tracemodel%s %s" % (memory, size), base / t))
'
peak_of() {
  "$bin" --benchmark_filter="^$1/" --benchmark_format=json 2>/dev/null |
    python3 -c 'import json,sys; b=json.load(sys.stdin)["benchmarks"][0]; print(round(b.get("peak_bytes_per_event",0)))'
}
timed() {
  "$bin" --benchmark_filter="$1" --benchmark_repetitions="$reps" \
         --benchmark_enable_random_interleaving=true \
         --benchmark_report_aggregates_only=true --benchmark_format=json 2>/dev/null
}
# Materialization reports no peak (the recording's memory is part of it): time only.
timed "^postprocess/materialize/" | python3 -c "$summary"
for size in 1M 10M; do
  peaks=()
  for name in postprocess/tracemodel/$size postprocess/baseline/$size; do
    peaks+=("$name=$(peak_of "$name")")
  done
  timed "^postprocess/(tracemodel|baseline)/$size/" | python3 -c "$summary" "${peaks[@]}"
  # The analysis given fresh memory before every run, in a process of its own (a kept run
  # after it would find nothing kept); no peak.
  timed "^postprocess/(tracemodel_cold|baseline)/$size/" | python3 -c "$summary"
done
# The plain algorithms (`analyze` fuses them), kept memory; no peak, no ratio.
timed "^postprocess/plain/" | python3 -c "$summary"
# The pattern benchmarks share one process (the analysed table is made once); no peak.
timed "^patterns/" | python3 -c "$summary"
