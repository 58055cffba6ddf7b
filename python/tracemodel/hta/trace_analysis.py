"""Holistic Trace Analysis's ``TraceAnalysis``, computed by tracemodel's C++ core: the same
constructor, methods, parameters, defaults and result types (DataFrames with HTA's columns,
index and dtypes; dictionaries keyed by rank), HTA's rules and quirks included
(docs/python.md lists them and the exact answers)."""

import enum
import json
import os
import warnings

import numpy as np
import pandas as pd

from .. import _core
from ._frames import _plain
from ._trace import Trace
from .critical_path import CPGraph
from ._plots import show


class TimeSeriesTypes(enum.Flag):
    """The series ``generate_trace_with_counters`` writes."""

    QUEUE_LENGTH = 1
    MEMCPY_BANDWIDTH = 2


_STATS = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]


def _describe(columns, keys, value):
    """pandas' groupby(keys).describe() of `value` from the core's summary columns."""
    df = _plain(columns)
    if df.empty:
        return None
    out = df.set_index(keys)[_STATS]
    out.columns = pd.MultiIndex.from_product([[value], _STATS])
    return out


class TraceAnalysis:
    """HTA's TraceAnalysis: the ranks of ``trace_dir`` (every .json and .gz file) or of
    ``trace_files`` ({rank: path}) read once; each method analyses them by HTA's rules."""

    def __init__(self, trace_files=None, trace_dir=None, include_last_profiler_step=False,
                 exact=False, client=None, **kwargs):
        """``exact=True``: tracemodel's exact rules instead of HTA's (every event of the trace,
        times from ns with their fraction, none of HTA's mistakes; docs/gpu.md), in the same
        columns and units. ``client`` (a ``dask.distributed.Client``): each rank is read and
        analysed on the cluster's workers, the answers the same (docs/cluster.md)."""
        if trace_files is None and trace_dir is None:
            raise ValueError("TraceAnalysis needs trace_dir or trace_files")
        if kwargs:  # (HTA's parser configuration and the like: tracemodel reads every field)
            warnings.warn("tracemodel.hta.TraceAnalysis ignores %s" % ", ".join(sorted(kwargs)),
                          stacklevel=2)
        self.t = Trace(trace_files=trace_files, trace_dir=trace_dir,
                       include_last_profiler_step=include_last_profiler_step, client=client)
        self._h = self.t._h
        self.exact = bool(exact)
        self._memo = {}

    def _once(self, name, *args):
        """The core's answer to `name(*args)`, computed once (the queues serve the summary and
        the series, the blocked time too)."""
        key = (name,) + tuple(tuple(a) if isinstance(a, list) else a for a in args)
        if key not in self._memo:
            self._memo[key] = getattr(self._h, name)(*args)
        return self._memo[key]

    def _ranks(self, ranks):
        """HTA's default rank list: [0] (the first rank when there is no rank 0)."""
        if ranks is None or len(ranks) == 0:
            known = self.t.get_ranks()
            return [0] if 0 in known or not known else [known[0]]
        return [int(r) for r in ranks]

    # ---- device time ----------------------------------------------------------------------

    def get_temporal_breakdown(self, visualize=True):
        df = _plain(self._h.temporal(None, self.exact))
        if visualize:
            show("temporal", df)
        return df

    def get_comm_comp_overlap(self, visualize=True):
        df = _plain(self._h.overlap(self.exact))
        if visualize:
            show("overlap", df)
        return df

    def get_gpu_kernel_breakdown(self, visualize=True, duration_ratio=0.8, num_kernels=10,
                                 include_memory_kernels=True, image_renderer="notebook"):
        types, kernels = self._h.kernels(int(num_kernels), float(duration_ratio),
                                         bool(include_memory_kernels), self.exact)
        types, kernels = _plain(types), _plain(kernels)
        if not self.exact:
            types["sum"] = types["sum"].astype("int64")
        kernels = kernels.sort_values(["kernel_type", "name", "rank"]).reset_index(drop=True)
        if visualize:
            show("kernels", (types, kernels), image_renderer)
        return types, kernels

    def _annotations(self, on_gpu, visualize, duration_ratio, num_kernels, allowlist_patterns,
                     image_renderer):
        allow = [str(p) for p in allowlist_patterns or []]
        if allow and self.exact:
            raise ValueError("allowlist_patterns is a rule of HTA's, not of the exact breakdown")
        df = _plain(self._h.annotations(on_gpu, int(num_kernels), float(duration_ratio),
                                        self.exact, allow))
        if df.empty:
            return None
        df = df.sort_values(["rank", "name"]).reset_index(drop=True)
        if visualize:
            show("annotations", df, image_renderer)
        return df

    def get_gpu_user_annotation_breakdown(self, use_gpu_annotation=True, visualize=True,
                                          duration_ratio=0.8, num_kernels=1000,
                                          allowlist_patterns=None, image_renderer="notebook"):
        return self._annotations(use_gpu_annotation, visualize, duration_ratio, num_kernels,
                                 allowlist_patterns, image_renderer)

    def get_cpu_user_annotation_breakdown(self, visualize=True, duration_ratio=0.8,
                                          num_kernels=1000, allowlist_patterns=None,
                                          image_renderer="notebook"):
        return self._annotations(False, visualize, duration_ratio, num_kernels,
                                 allowlist_patterns, image_renderer)

    def get_idle_time_breakdown(self, ranks=None, streams=None, visualize=True,
                                visualize_pctg=True, show_idle_interval_stats=False,
                                consecutive_kernel_delay=30):
        df = _plain(self._h.idle(self._ranks(ranks), int(consecutive_kernel_delay), self.exact))
        if streams is not None:
            df = df[df["stream"].isin(list(streams))].reset_index(drop=True)
        idle = df[["rank", "stream", "idle_category", "idle_time", "idle_time_ratio"]].copy()
        stats = None
        if show_idle_interval_stats:
            stats = df[["rank", "stream", "idle_category"] + _STATS].copy()
        if visualize:
            show("idle", idle, visualize_pctg)
        return idle, stats

    def get_cuda_kernel_launch_stats(self, ranks=None, runtime_cutoff=50, launch_delay_cutoff=100,
                                     include_memory_events=True, visualize=True):
        out = {}
        found = self._h.launches(self._ranks(ranks), bool(include_memory_events), self.exact)
        for rank, cols in found.items():
            df = _plain(cols)
            out[rank] = df
            if visualize:
                show("launches", (rank, df, runtime_cutoff, launch_delay_cutoff))
        return out

    # ---- counters ---------------------------------------------------------------------------

    def _series(self, columns):
        df = _plain(columns)
        if not self.exact:  # (HTA's times are whole us)
            df["ts"] = df["ts"].astype("int64")
        return df

    def _device_ids(self, rank):
        """Each stream's (pid, tid) as its GPU rows carry them, and the rank's first device pid
        (HTA's series take theirs from the GPU rows)."""
        f = self.t.get_trace(rank)
        gpu = f[f["stream"] != -1].drop_duplicates("stream")
        by_stream = {s: (p, t) for s, p, t in zip(gpu["stream"], gpu["pid"], gpu["tid"])}
        return by_stream, (int(gpu["pid"].iloc[0]) if len(gpu) else -1)

    def get_queue_length_time_series(self, ranks=None):
        """{rank: ``ts, pid, tid, stream, queue_length``}: each step of each stream's queue."""
        series, _ = self._once("queues", self._ranks(ranks), 1024, self.exact)
        df = self._series(series)
        out = {}
        for r, g in df.groupby("rank", sort=True):
            by_stream, _ = self._device_ids(int(r))
            ids = [by_stream.get(st, (-1, -1)) for st in g["stream"]]
            out[int(r)] = pd.DataFrame({
                "ts": g["ts"].to_numpy(), "pid": [p for p, _ in ids], "tid": [t for _, t in ids],
                "stream": g["stream"].to_numpy(), "queue_length": g["queue_length"].to_numpy()})
        return out

    def get_queue_length_summary(self, ranks=None):
        _, summary = self._once("queues", self._ranks(ranks), 1024, self.exact)
        summary = {k: v for k, v in summary.items() if k != "time_full"}
        return _describe(summary, ["rank", "stream"], "queue_length")

    def get_time_spent_blocked_on_full_queue(self, queue_length_dict=None, max_queue_length=1024):
        ranks = list(queue_length_dict) if queue_length_dict else None
        _, summary = self._once("queues", self._ranks(ranks), int(max_queue_length), self.exact)
        df = _plain(summary)
        df = df[df["time_full"] > 0]
        if not self.exact:  # HTA keeps one result per rank: its last stream's
            df = df.groupby("rank").tail(1)
        if df.empty:
            return None
        spans = {r: _span_of(self.t.get_trace(r)) for r in df["rank"].unique()}
        out = pd.DataFrame({
            "rank": df["rank"].values,
            "stream": df["stream"].values,
            "duration_at_max_queue_length": df["time_full"].astype("float64").values,
        })
        out["relative_duration_at_max_queue_length"] = [
            d / spans[r] if spans[r] else np.nan
            for r, d in zip(out["rank"], out["duration_at_max_queue_length"])]
        return out

    def get_memory_bw_time_series(self, ranks=None):
        """{rank: ``ts, pid, name, memory_bw_gbps``}: each step of each copy kind's bandwidth."""
        series, _ = self._once("bandwidth", self._ranks(ranks), self.exact)
        df = self._series(series)
        out = {}
        for r, g in df.groupby("rank", sort=True):
            _, pid = self._device_ids(int(r))
            out[int(r)] = pd.DataFrame({
                "ts": g["ts"].to_numpy(), "pid": pid, "name": g["name"].to_numpy(),
                "memory_bw_gbps": g["memory_bw_gbps"].to_numpy()})
        return out

    def get_memory_bw_summary(self, ranks=None):
        _, summary = self._once("bandwidth", self._ranks(ranks), self.exact)
        return _describe(summary, ["rank", "name"], "memory_bw_gbps")

    def generate_trace_with_counters(self, time_series=None, ranks=None,
                                     output_suffix="_with_counters"):
        """Writes each rank's trace with its queue lengths and copies' bandwidth as counter
        tracks beside the original (``<name><output_suffix>.json.gz``); returns the paths."""
        kinds = time_series or (TimeSeriesTypes.QUEUE_LENGTH | TimeSeriesTypes.MEMCPY_BANDWIDTH)
        return self._h.with_counters(self._ranks(ranks), output_suffix,
                                     bool(kinds & TimeSeriesTypes.QUEUE_LENGTH),
                                     bool(kinds & TimeSeriesTypes.MEMCPY_BANDWIDTH))

    # ---- steps and ranks --------------------------------------------------------------------

    def get_profiler_steps(self):
        return list(self._h.steps())

    def get_potential_stragglers(self, profiler_steps=None, num_candidates=2, visualize=True,
                                 straggler_identification_impl=None):
        from ._stragglers import potential_stragglers
        return potential_stragglers(self, profiler_steps, num_candidates)

    def get_gpu_kernels_with_user_annotations(self, rank, expand_names=True,
                                              shortern_names=True):
        """The rank's GPU kernels, each with the innermost GPU user annotation of its thread that
        overlaps it (``user_annotation``: its name id, -1 for none); ``expand_names`` adds
        ``s_name``, ``s_cat`` and ``s_user_annotation``, shortened as HTA shortens names with
        ``shortern_names`` (HTA's spelling). None when the trace has no GPU annotations."""
        table = self.t.symbol_table.sym_table
        index = self.t.symbol_table.sym_index
        if "gpu_user_annotation" not in index:
            return None
        df = self.t.get_trace(rank)
        syncs = [index[n] for n in ("Event Sync", "Context Sync") if n in index]
        kernels = df[((df["stream"] >= 0) & (df["correlation"] >= 0))
                     | df["name"].isin(syncs)].copy()
        notes = df[df["cat"] == index["gpu_user_annotation"]]
        notes = notes.sort_values("dur", ascending=False, kind="stable")
        found = np.full(len(kernels), -1, dtype="int64")
        k_pid, k_tid = kernels["pid"].to_numpy(), kernels["tid"].to_numpy()
        k_ts = kernels["ts"].to_numpy()
        k_end = k_ts + kernels["dur"].to_numpy()
        for pid, tid, ts, dur, name in zip(notes["pid"], notes["tid"], notes["ts"], notes["dur"],
                                           notes["name"]):
            hit = (k_pid == pid) & (k_tid == tid) & (k_ts < ts + dur) & (ts < k_end)
            found[hit] = name  # (shorter ones come later: the innermost wins)
        kernels["user_annotation"] = found
        if expand_names:
            def text(i, shorten):
                if i < 0:
                    return ""
                return _core.short_name(table[i]) if shorten else table[i]
            kernels["s_name"] = [text(i, shortern_names) for i in kernels["name"]]
            kernels["s_cat"] = [text(i, False) for i in kernels["cat"]]
            kernels["s_user_annotation"] = [text(i, False) for i in kernels["user_annotation"]]
        return kernels

    # ---- critical path ----------------------------------------------------------------------

    def critical_path_analysis(self, rank, annotation, instance_id, data_load_events=None):
        """HTA's critical path of the ``instance_id``-th window named like ``annotation`` on
        ``rank``: (CPGraph, success); None when no event has that name."""
        if isinstance(instance_id, tuple):
            if instance_id[0] != instance_id[1]:
                raise NotImplementedError("a range of instances is not supported yet")
            instance_id = instance_id[0]
        r = self._h.critical_path(int(rank), annotation or "", int(instance_id or 0))
        if not r["found"]:
            return None
        g = CPGraph(self.t, int(rank), r, annotation or "", int(instance_id or 0))
        return g, bool(r["acyclic"])

    def overlay_critical_path_analysis(self, rank, critical_path_graph, output_dir,
                                       only_show_critical_events=True, show_all_edges=False):
        """Writes ``output_dir/overlaid_critical_path_<file name>``: the rank's trace with the
        path's events marked ``critical = 1`` and its edges between events drawn as flows
        (category ``critical_path``); returns its path. tracemodel keeps every event and draws
        the critical edges (HTA's ``only_show_critical_events`` and ``show_all_edges`` are not
        reproduced)."""
        g = critical_path_graph
        name = os.path.basename(self.t.trace_files[int(rank)])
        out = os.path.join(output_dir, "overlaid_critical_path_" + name)
        self._h.write_critical_path_overlay(int(rank), g.annotation, int(g.instance_id), out)
        return out

    # ---- HTA's analyses that tracemodel does not implement yet --------------------------------

    def _missing(self, name):
        raise NotImplementedError("tracemodel.hta does not implement %s yet (docs/python.md)"
                                  % name)

    def get_frequent_cuda_kernel_sequences(self, operator_name, output_dir, min_pattern_len=3,
                                           rank=0, top_k=5, visualize=False,
                                           compress_other_kernels=True):
        """HTA's frequent kernel sequences of ``rank``: each event whose name contains
        ``operator_name``, at the least depth such an event has, with at least
        ``min_pattern_len`` kernels below it, gives the pattern of its name and its kernels' names
        in start order (joined by ``|``); per pattern the count and the kernels' and the op's
        time (us), most frequent first. With ``output_dir``, the rank's trace is written there
        as ``overlaid_<file name>``, the events of the ``top_k`` patterns marked with an argument
        ``Patterns`` (``{"pattern": count}`` as JSON text)."""
        rows = self._h.kernel_sequences(int(rank), operator_name, int(min_pattern_len))
        cols = ["pattern", "count", "GPU kernel duration (us)", "CPU op duration (us)"]
        found = {}
        for pattern, gpu, cpu, ids, events in rows:
            entry = found.setdefault(pattern, [0, 0, 0, set(), set()])
            entry[0] += 1
            entry[1] += gpu
            entry[2] += cpu
            entry[3].update(ids)
            entry[4].update(events)
        df = pd.DataFrame([(p, e[0], e[1], e[2], sorted(e[3])) for p, e in found.items()],
                          columns=cols + ["pattern_indices"])
        df = df.sort_values(["count", "pattern"], ascending=[False, True], kind="stable")
        df = df.reset_index(drop=True)
        if output_dir:
            marks = []
            for p in df["pattern"][: int(top_k)]:
                text = json.dumps({p: int(found[p][0])})
                marks += [(e, text) for e in sorted(found[p][4])]
            name = os.path.basename(self.t.trace_files[int(rank)])
            self._h.write_marked(int(rank), os.path.join(output_dir, "overlaid_" + name),
                                 "Patterns", marks)
        return df[cols]


    def get_op_kernels_and_delay(self, ranks=None, sort_by=None):
        """Per rank, each ATen op's sequence of kernels: for every kernel launch
        (``cuda*LaunchKernel*``, ``cuLaunchKernel``, ``runFunction*``), the ATen op that holds it
        and starts last (on any thread) and the kernel it launched; per op instance (thread,
        name, start) its kernels' names joined by `` -> ``; per (op name, sequence) the count
        and the means of the first launch's delays (op start to launch, launch to kernel), in
        us, rounded to 3 and sorted descending by ``sort_by`` (default: the count). As HTA
        does, a rank's answer holds the ranks before it too."""
        from ._op_kernels import op_kernels
        sort_by = list(sort_by or ["occurrence_count"])
        out, rows = {}, []
        for rank in self._ranks(ranks):
            rows = rows + op_kernels(self.t.get_trace(rank), self.t.symbol_table.sym_table)
            out[rank] = _summarize_op_kernels(rows, sort_by)
        return out

    def get_aten_op_kernels_and_delay(self, ranks=None, sort_by=None):
        """HTA's older name of ``get_op_kernels_and_delay``."""
        return self.get_op_kernels_and_delay(ranks, sort_by)

    def get_cupti_counter_data_with_operators(self, *args, **kwargs):
        self._missing("get_cupti_counter_data_with_operators")


def _summarize_op_kernels(rows, sort_by):
    cols = ["aten_op_name", "kernel_sequence", "occurrence_count", "avg_aten_op_launch_delay",
            "avg_runtime_delay"]
    if not rows:
        return pd.DataFrame(columns=cols)
    df = pd.DataFrame(rows, columns=["aten_op_name", "kernel_sequence", "aten_op_delay",
                                     "runtime_delay"])
    g = df.groupby(["aten_op_name", "kernel_sequence"])
    out = pd.DataFrame({
        "occurrence_count": g.size(),
        "avg_aten_op_launch_delay": g["aten_op_delay"].mean().round(3),
        "avg_runtime_delay": g["runtime_delay"].mean().round(3),
    }).reset_index()
    return out.sort_values(sort_by, ascending=False, kind="stable").reset_index(drop=True)[cols]


def _span_of(frame):
    if frame.empty:
        return 0
    return float(frame["ts"].max() - frame["ts"].min())
