"""tracemodel from Python: a trace's events and key averages as DataFrames, and HTA's analyses
through tracemodel.hta (the same calls as Holistic Trace Analysis's).

    python3 examples/python/analyse.py TRACE [OUT.pftrace]
"""

import sys

import tracemodel
from tracemodel.hta import TraceAnalysis


def main(path, out=None):
    t = tracemodel.read(path)
    events = t.events()
    print("%s: %d events on %d threads" % (path, len(events), events["thread"].nunique()))
    ka = t.key_averages(sort_by="self").head(5)
    print("\nlongest self time:")
    for row in ka.itertuples():
        print("  %-40s %6d calls %12.3f ms" % (row.name[:40], row.count, row.self_ns / 1e6))
    links = t.links()
    print("\nlinks: %s" % dict(links["kind"].value_counts()))
    if (events["stream"] >= 0).any():
        a = TraceAnalysis(trace_files={0: path})
        b = a.get_temporal_breakdown(visualize=False).iloc[0]
        print("\nHTA's temporal breakdown: idle %.2f%%, compute %.2f%%, non-compute %.2f%%"
              % (b["idle_time_pctg"], b["compute_time_pctg"], b["non_compute_time_pctg"]))
        types, _ = a.get_gpu_kernel_breakdown(visualize=False)
        print(types.to_string(index=False))
    if out:
        t.write(out)
        print("\nwrote " + out)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(*sys.argv[1:3])
