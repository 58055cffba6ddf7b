"""HTA's straggler analysis (``get_potential_stragglers``) on the ranks' frames: the ranks whose
long communication kernels start late most often (docs/python.md)."""

import pandas as pd


def _metric(frames, table, steps):
    """Per (rank, iteration): the normalized start of the communication kernel whose duration
    varies most across ranks."""
    comm = {i for i, s in enumerate(table) if s.startswith("ncclKernel")}
    df = pd.concat([f.assign(rank=r) for r, f in frames.items()], ignore_index=True)
    df = df[df["iteration"].isin(steps)]
    if df.empty:
        return None
    t_min = df["ts"].min()
    mean_iter = ((df["ts"] + df["dur"]).max() - t_min) / len(steps)
    long = df[(df["stream"] > 0) & (df["iteration"] > 0) & (df["dur"] >= 0.01 * mean_iter)
              & df["name"].isin(comm)]
    if long.empty:
        return None
    last = long.groupby(["rank", "stream", "iteration", "name"]).last().reset_index()
    last["normalized_start_time"] = (last["ts"] - t_min) / mean_iter
    last["duration"] = last["dur"] / mean_iter
    spread = last.groupby(["stream", "iteration", "name"])["duration"].std()
    stream, name = spread.groupby(["stream", "name"]).mean().idxmax()
    chosen = last[(last["stream"] == stream) & (last["name"] == name)]
    return chosen[["rank", "iteration", "normalized_start_time"]]


def potential_stragglers(analysis, profiler_steps, num_candidates):
    steps = list(profiler_steps) if profiler_steps else analysis.get_profiler_steps()
    num_candidates = max(1, int(num_candidates))
    t = analysis.t
    metric = _metric({r: t.get_trace(r) for r in t.get_ranks()}, t.symbol_table.sym_table, steps)
    if metric is None:
        return []
    counts = {}
    for _, g in metric.groupby("iteration"):
        values = g["normalized_start_time"].sort_values(ascending=False)
        threshold = values.iloc[min(num_candidates, len(values)) - 1]
        for r in g[g["normalized_start_time"] >= threshold]["rank"]:
            counts[int(r)] = counts.get(int(r), 0) + 1
    ranked = pd.Series(counts).sort_values(ascending=False)
    return [int(r) for r in ranked.index[:num_candidates]]
