"""tracemodel's Python package timed: TraceAnalysis with every breakdown on a generated trace of
the shape of HTA's 53 MB `df_index_resolver` test trace, and tracemodel.read(...).events()
against the C++ read alone (medians of repetitions, in one process with pandas imported).

    python3 bench/python/hta_speed.py [TRACE] [--repeat N]

Without TRACE, a trace of 105,000 launches (about 53 MB, as bench/gpu.cpp writes it) is made in
a temporary folder. HTA itself is not a Debian package: its figures (2.5 s and 328 MB for its
load and these analyses, measured beside tracemodel when HTA was at hand) are the issue's."""

import argparse
import gc
import os
import resource
import statistics
import sys
import tempfile
import time

__import__("pandas")  # (imported first: the memory figures are above it)

import tracemodel
from tracemodel import _core
from tracemodel.hta import TraceAnalysis

HTA_SECONDS = 2.5  # HTA's load and the analyses below on the 53 MB trace (issue 67)
HTA_MB = 328.0


def write_trace(path, launches=105_000):
    """The shape of bench/gpu.cpp's trace: a step, ops launching kernels on four streams,
    copies with their bandwidth, fractional times."""
    with open(path, "w") as f:
        f.write('{"traceEvents":[\n')
        f.write('{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,'
                '"ts":0,"dur":%d}' % (launches * 12 + 10000))
        ts = 1000
        for k in range(launches):
            corr = 1000 + k
            stream = 7 + (k % 4)
            copy = k % 10 == 0
            name = "Memcpy HtoD (Pageable -> Device)" if copy else "void kernel_%d(float*)" % (k % 50)
            f.write(',\n{"ph":"X","cat":"cpu_op","name":"aten::op_%d","pid":1,"tid":1,'
                    '"ts":%d.%03d,"dur":6.%03d,"args":{"External id":%d}}'
                    % (k % 40, ts // 1000, ts % 1000, k % 1000, corr))
            f.write(',\n{"ph":"X","cat":"cuda_runtime","name":"%s","pid":1,"tid":1,'
                    '"ts":%d.%03d,"dur":3.%03d,"args":{"External id":%d,"correlation":%d}}'
                    % ("cudaMemcpyAsync" if copy else "cudaLaunchKernel", (ts + 1000) // 1000,
                       (ts + 1000) % 1000, (k * 7) % 1000, corr, corr))
            start = ts + 8000 + (k % 7) * 900
            f.write(',\n{"ph":"X","cat":"%s","name":"%s","pid":0,"tid":%d,"ts":%d.%03d,'
                    '"dur":%d.%03d,"args":{"External id":%d,"device":0,"stream":%d,'
                    '"correlation":%d%s}}'
                    % ("gpu_memcpy" if copy else "kernel", name, stream, start // 1000,
                       start % 1000, 3 + k % 11, (k * 37) % 1000, corr, stream, corr,
                       ',"bytes":1048576,"memory bandwidth (GB/s)":120.5' if copy else ""))
            ts += 12000
        f.write("\n]}\n")


def analyses(path):
    a = TraceAnalysis(trace_files={0: path})
    a.get_temporal_breakdown(visualize=False)
    a.get_idle_time_breakdown(visualize=False, show_idle_interval_stats=True)
    a.get_gpu_kernel_breakdown(visualize=False)
    a.get_comm_comp_overlap(visualize=False)
    a.get_cuda_kernel_launch_stats(visualize=False)
    a.get_queue_length_summary()
    a.get_queue_length_time_series()
    a.get_memory_bw_summary()
    a.get_memory_bw_time_series()
    a.get_gpu_user_annotation_breakdown(visualize=False)
    a.get_cpu_user_annotation_breakdown(visualize=False)
    a.get_profiler_steps()


def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        gc.collect()  # (what the last run left is given back before this one)
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), max(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trace", nargs="?")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    path = args.trace
    if path is None:
        path = os.path.join(tempfile.gettempdir(), "tracemodel_bench_53mb.json")
        if not os.path.exists(path):
            write_trace(path)
    size = os.path.getsize(path) / 1e6
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    analyses(path)  # (first run: the memory it adds)
    added = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0 - base
    hta = median_time(lambda: analyses(path), args.repeat)
    cxx, py = [], []
    for _ in range(args.repeat):  # (the two alternate: the machine's drift hits both)
        cxx.append(median_time(lambda: _core.Trace(path), 1)[0])
        py.append(median_time(lambda: tracemodel.read(path).events(), 1)[0])
    cxx = statistics.median(cxx), min(cxx), max(cxx)
    py = statistics.median(py), min(py), max(py)
    print("trace: %s (%.1f MB)" % (path, size))
    print("python/hta_all_analyses: median %.3f s (%.3f-%.3f), %.1fx HTA's %.1f s; memory "
          "added %.0f MB (%.2f of HTA's %.0f MB)" % (hta[0], hta[1], hta[2], HTA_SECONDS / hta[0],
                                                    HTA_SECONDS, added, added / HTA_MB, HTA_MB))
    print("python/read_events: median %.3f s (%.3f-%.3f) against the C++ read and analysis "
          "%.3f s (%.3f-%.3f): %.2fx" % (py[0], py[1], py[2], cxx[0], cxx[1], cxx[2],
                                         py[0] / cxx[0]))


if __name__ == "__main__":
    sys.exit(main())
