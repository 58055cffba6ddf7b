#!/usr/bin/env python3
"""Prints the ratios the issues ask for from one Google Benchmark JSON run.

Usage: bench_X --benchmark_repetitions=15 --benchmark_format=json > run.json
       bench/ratios.py run.json
Medians of repetitions; every ratio compares benchmarks of the same run.
"""
import json
import re
import sys

RATIOS = [
    ("record/op", "record/floor", 1.1),
    ("record/op_prefaulted", "record/floor", 1.1),
    ("record/op_fresh", "record/floor_fresh", 1.1),
    ("record/op_3_inputs", "record/op", 2.0),
    ("record/op_crashfile", "record/floor", 1.1),
    ("record/op_crashfile_inputs", "record/op_3_inputs", 1.15),
    ("postprocess/baseline/10M", "postprocess/tracemodel/10M", 8.0),  # speed-up, >=
    ("postprocess/baseline/1M", "postprocess/tracemodel/1M", None),
    ("patterns/per_pattern", "patterns/one_pass", None),
]


def medians(path):
    data = json.load(open(path))
    out = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = re.sub(r"/(iterations|repeats|real_time|min_time):[^/]*", "", b["run_name"])
        out[name] = b
    return out


def main():
    m = medians(sys.argv[1])
    for name, b in sorted(m.items()):
        extra = {k: v for k, v in b.items() if k not in (
            "name", "run_name", "run_type", "repetitions", "repetition_index", "threads",
            "aggregate_name", "aggregate_unit", "iterations", "real_time", "cpu_time",
            "time_unit", "family_index", "per_family_instance_index")}
        print(f"{name:40s} {b['real_time']:12.4g} {b['time_unit']}  {extra if extra else ''}")
    print()
    for a, b, target in RATIOS:
        if a in m and b in m:
            r = m[a]["real_time"] / m[b]["real_time"]
            t = "" if target is None else f"  (target {'>=' if 'baseline' in a else '<='} {target})"
            print(f"{a} / {b} = {r:.3f}{t}")


if __name__ == "__main__":
    main()
