"""HTA's straggler analysis (``get_potential_stragglers``) on the ranks' frames: the ranks whose
long communication kernels start late most often (docs/python.md). Each rank gives the span of
its rows in the steps and its communication kernels (``rank_rows``: on a cluster's worker, so
that only those rows travel); the metric is taken over all ranks' rows together."""

import pandas as pd

_COLUMNS = ["ts", "dur", "stream", "iteration", "name"]


def rank_rows(frame, table, steps):
    """(first start, last end, communication kernel rows) of one rank's frame in ``steps``;
    None when it has no row there. Rows keep the frame's order."""
    df = frame[frame["iteration"].isin(steps)]
    if df.empty:
        return None
    comm = {i for i, s in enumerate(table) if s.startswith("ncclKernel")}
    rows = df[(df["stream"] > 0) & (df["iteration"] > 0) & df["name"].isin(comm)]
    return (int(df["ts"].min()), int((df["ts"] + df["dur"]).max()),
            {c: rows[c].to_numpy() for c in _COLUMNS})


def _metric(parts, steps):
    """Per (rank, iteration): the normalized start of the communication kernel whose duration
    varies most across ranks. ``parts``: {rank: rank_rows(...)}."""
    parts = {r: p for r, p in parts.items() if p is not None}
    if not parts:
        return None
    t_min = min(p[0] for p in parts.values())
    mean_iter = (max(p[1] for p in parts.values()) - t_min) / len(steps)
    df = pd.concat([pd.DataFrame(p[2]).assign(rank=r) for r, p in parts.items()],
                   ignore_index=True)
    long = df[df["dur"] >= 0.01 * mean_iter]
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
    rows = getattr(t._h, "straggler_rows", None)
    if rows is not None:  # (a cluster's: each rank's rows made on its worker)
        parts = rows(steps)
    else:
        parts = {r: rank_rows(t.get_trace(r), t.symbol_table.sym_table, steps)
                 for r in t.get_ranks()}
    metric = _metric(parts, steps)
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

