#!/usr/bin/env bash
# Runs bench_io the way its figures are reported: io/read once in a fresh process for its peak
# memory, then all three benchmarks in one run with repetitions (medians), throughput in MB/s
# (10^6 bytes) and io/read as a ratio of io/read_floor. The generated trace
# (build/bench/io_trace.json, about 200 MB) is made on the first run and reused.
# Usage: bench/io.sh [build dir] [repetitions]
set -euo pipefail
build=${1:-build/release}
reps=${2:-9}  # the first two reads of a process are cold (fresh memory): 9 keeps them off the median
bin=$build/bench/bench_io
"$bin" --benchmark_filter='^io/write' --benchmark_min_time=0.01 >/dev/null 2>&1  # makes the trace
peak=$("$bin" --benchmark_filter='^io/read/' --benchmark_format=json 2>/dev/null |
       python3 -c 'import json,sys; b=json.load(sys.stdin)["benchmarks"][0]; print("%.0f %d" % (b["peak_bytes_per_event_beyond_file"], b["events"]))')
"$bin" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
       --benchmark_format=json 2>/dev/null | python3 -c '
import json, sys
peak, events = sys.argv[1].split()
rows = {}
for b in json.load(sys.stdin)["benchmarks"]:
    if b.get("aggregate_name") == "median":
        rows[b["run_name"].split("/real_time")[0]] = b
floor = rows["io/read_floor"]["bytes_per_second"]
for name, b in rows.items():
    mbs = b["bytes_per_second"] / 1e6
    extra = ""
    if name == "io/read":
        extra = "  %.2f x floor, peak %s B/event beyond the file (%s events)" % (
            b["bytes_per_second"] / floor, peak, events)
    elif name == "io/read_serial":
        extra = "  %.2f x floor" % (b["bytes_per_second"] / floor)
    print("%-14s %8.1f ms %8.1f MB/s%s" % (name, b["real_time"], mbs, extra))
' "$peak"
