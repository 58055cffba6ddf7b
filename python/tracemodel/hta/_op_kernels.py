"""The rows of HTA's ``get_op_kernels_and_delay`` for one rank's frame (see trace_analysis)."""

import re

import numpy as np

_LAUNCH = re.compile(r"(cuda.*LaunchKernel)|(cuLaunchKernel)|(runFunction)")


def op_kernels(frame, table):
    """[(op name, kernel sequence, first launch's op delay, first launch's runtime delay)], one
    per op instance whose launches found their kernels."""
    names = np.asarray(table, dtype=object)
    name = names[frame["name"].to_numpy()]
    ts = frame["ts"].to_numpy()
    end = ts + frame["dur"].to_numpy()
    tid = frame["tid"].to_numpy()
    stream = frame["stream"].to_numpy()
    index = frame.index.to_numpy()
    aten = np.array([n.startswith("aten::") for n in name], dtype=bool)
    launch = np.array([_LAUNCH.match(n) is not None for n in name], dtype=bool)
    # the ATen ops by start (the frame's order among equal starts)
    ops = np.flatnonzero(aten)
    ops = ops[np.argsort(ts[ops], kind="stable")]
    op_ts, op_end = ts[ops], end[ops]
    # kernels by the row they were launched from
    kernel_of = {}
    correlated = frame["index_correlation"].to_numpy()
    for k in np.flatnonzero(stream != -1):
        kernel_of.setdefault(correlated[k], k)
    instances = {}  # (tid, op name, op start) -> [kernel names, op delay, runtime delay]
    for r in np.flatnonzero(launch):
        kernel = kernel_of.get(index[r])
        if kernel is None:
            continue
        # the op that holds the launch and starts last
        j = int(np.searchsorted(op_ts, ts[r], side="right")) - 1
        found = -1
        while j >= 0:
            if op_end[j] >= end[r]:
                found = j
                break
            j -= 1
        if found < 0:
            continue
        while found > 0 and op_ts[found - 1] == op_ts[found] and op_end[found - 1] >= end[r]:
            found -= 1  # (equal starts: the first in the frame)
        op = ops[found]
        key = (tid[r], name[op], ts[op])
        entry = instances.get(key)
        if entry is None:
            instances[key] = [[name[kernel]], float(ts[r] - ts[op]), float(ts[kernel] - ts[r])]
        else:
            entry[0].append(name[kernel])
    return [(k[1], " -> ".join(v[0]), v[1], v[2]) for k, v in instances.items()]
