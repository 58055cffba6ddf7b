"""tracemodel.hta's classes as HTA's users call them: constructors, defaults, result types, the
trace object, the trace diff (HTA's own test values), counters and the critical path."""

import gzip
import inspect
import json
import os
import shutil
import warnings

import pandas as pd
import pytest

import tracemodel

from conftest import data
from tracemodel.hta import LabeledTrace, TraceAnalysis, TraceDiff
from tracemodel.hta.trace_diff import DeviceType


def folder(tmp_path, name, *files):
    d = tmp_path / name
    d.mkdir()
    for f in files:
        shutil.copy(data("kineto", f), d / f)
    return str(d)


def test_signatures_and_defaults_are_htas():
    sig = inspect.signature
    assert list(sig(TraceAnalysis).parameters)[:3] == ["trace_files", "trace_dir",
                                                       "include_last_profiler_step"]
    p = sig(TraceAnalysis.get_gpu_kernel_breakdown).parameters
    assert (p["visualize"].default, p["duration_ratio"].default, p["num_kernels"].default,
            p["include_memory_kernels"].default) == (True, 0.8, 10, True)
    p = sig(TraceAnalysis.get_idle_time_breakdown).parameters
    assert (p["ranks"].default, p["streams"].default, p["show_idle_interval_stats"].default,
            p["consecutive_kernel_delay"].default) == (None, None, False, 30)
    p = sig(TraceAnalysis.get_cuda_kernel_launch_stats).parameters
    assert (p["runtime_cutoff"].default, p["launch_delay_cutoff"].default,
            p["include_memory_events"].default) == (50, 100, True)
    p = sig(TraceAnalysis.get_gpu_user_annotation_breakdown).parameters
    assert (p["use_gpu_annotation"].default, p["num_kernels"].default) == (True, 1000)
    p = sig(TraceAnalysis.get_potential_stragglers).parameters
    assert (p["profiler_steps"].default, p["num_candidates"].default) == (None, 2)
    for m in ["get_temporal_breakdown", "get_idle_time_breakdown", "get_gpu_kernel_breakdown",
              "get_comm_comp_overlap", "get_cuda_kernel_launch_stats",
              "get_queue_length_summary", "get_queue_length_time_series",
              "get_memory_bw_summary", "get_memory_bw_time_series",
              "get_gpu_user_annotation_breakdown", "get_cpu_user_annotation_breakdown",
              "get_potential_stragglers", "get_profiler_steps", "critical_path_analysis",
              "generate_trace_with_counters"]:
        assert callable(getattr(TraceAnalysis, m)), m


@pytest.fixture(scope="module")
def negative_queue():
    return TraceAnalysis(trace_files={0: data("kineto",
                                              "negative_queue_length_values_check_rank0.json.gz")})


def test_trace_object(negative_queue):
    t = negative_queue.t
    assert t.get_ranks() == [0]
    df = t.get_trace(0)
    for c in ["ts", "dur", "name", "cat", "pid", "tid", "stream", "correlation",
              "index_correlation", "iteration"]:
        assert c in df.columns, c
    names = t.symbol_table.sym_table
    assert all(t.symbol_table.sym_index[names[i]] == i for i in range(len(names)))
    assert df["ts"].min() == 0  # HTA's alignment
    # HTA drops the last step: ProfilerStep#550..553 stay of 550..554
    steps = sorted(names[i] for i in df["name"].unique() if names[i].startswith("ProfilerStep"))
    assert steps == ["ProfilerStep#550", "ProfilerStep#551", "ProfilerStep#552",
                     "ProfilerStep#553"]
    assert negative_queue.get_profiler_steps() == [550, 551, 552, 553]
    assert set(t.get_all_traces()) == {0}
    raw = t.get_raw_trace_for_one_rank(0)
    assert len(raw["traceEvents"]) > len(df)  # (the file's records, metadata and flows too)


def test_include_last_profiler_step():
    a = TraceAnalysis(trace_files={0: data("kineto",
                                           "negative_queue_length_values_check_rank0.json.gz")},
                      include_last_profiler_step=True)
    assert a.get_profiler_steps() == [550, 551, 552, 553, 554]


def test_counters_and_series(negative_queue, tmp_path):
    q = negative_queue.get_queue_length_summary()
    assert list(q.columns.get_level_values(1)) == ["count", "mean", "std", "min", "25%", "50%",
                                                   "75%", "max"]
    assert q.index.names == ["rank", "stream"] and len(q) == 6
    bw = negative_queue.get_memory_bw_summary()
    assert bw.index.names == ["rank", "name"] and len(bw) == 4
    series = negative_queue.get_queue_length_time_series()
    assert list(series[0].columns) == ["ts", "pid", "tid", "stream", "queue_length"]
    assert (series[0]["queue_length"] >= 0).all()
    trace = negative_queue.t.get_trace(0)
    for stream, g in series[0].groupby("stream"):  # each stream's ids are its kernels'
        rows = trace[trace["stream"] == stream]
        assert set(zip(g["pid"], g["tid"])) == {(rows["pid"].iloc[0], rows["tid"].iloc[0])}
    mb = negative_queue.get_memory_bw_time_series()
    assert list(mb[0].columns) == ["ts", "pid", "name", "memory_bw_gbps"]
    assert set(mb[0]["name"]) == set(bw.index.get_level_values("name"))
    src = tmp_path / "rank0.json.gz"
    shutil.copy(data("kineto", "negative_queue_length_values_check_rank0.json.gz"), src)
    a = TraceAnalysis(trace_files={0: str(src)})
    out = a.generate_trace_with_counters()
    assert out == [str(tmp_path / "rank0_with_counters.json.gz")]
    with gzip.open(out[0], "rt") as f:
        events = json.load(f)["traceEvents"]
    counters = [e for e in events if e.get("ph") == "C"]
    assert len(counters) >= 12000
    assert all(v >= 0 for e in counters for v in e["args"].values())
    # HTA's names (its test's set), a queue's stream as the counter's id
    assert {e["name"] for e in counters} == {"Queue Length", "Memcpy DtoH", "Memcpy HtoD",
                                            "Memcpy DtoD", "Memset"}
    assert {e["id"] for e in counters if e["name"] == "Queue Length"} == {7, 25, 27, 84, 285, 363}


def test_critical_path_breakdown():
    a = TraceAnalysis(trace_files={0: data(
        "kineto", "critical_path_cuda_event_sync_event_sync_trace.json.gz")})
    g, ok = a.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=0)
    assert ok
    b = g.get_critical_path_breakdown()
    assert len(b) == len(g.critical_path_edges_set)
    assert not b["bound_by"].isnull().any()
    assert any(t == "SYNC_DEPENDENCY" for _, _, t in g.critical_path_edges_set)
    assert abs(g.summary().sum() - 100.0) < 1e-9
    assert a.critical_path_analysis(0, "no such annotation anywhere", 0) is None


def test_trace_diff_reproduces_htas_test(tmp_path):
    control = LabeledTrace("control", trace_dir=folder(tmp_path, "base",
                                                       "trace_compare_base_base.json.gz"))
    test = LabeledTrace("test", trace_dir=folder(tmp_path, "test",
                                                 "trace_compare_test_test.json.gz"))
    assert control.ranks() == [1]
    assert control.iterations() == [1009, 1010]
    assert len(control.extract_ops(1, 1010, DeviceType.CPU)) == 6
    assert len(control.extract_ops(1, 1010, DeviceType.GPU)) == 1
    s = control.get_ops_summary(control.extract_ops(1, 1010, DeviceType.CPU))
    assert list(s.columns) == ["cat", "name", "short_name", "counts", "total_duration", "cat_id",
                               "name_id"]
    s = s.sort_values(by="name")[["name", "counts", "total_duration"]].set_index("name")
    assert s.to_dict() == {
        "counts": {"ProfilerStep#1010": 1, "aten::as_strided": 1, "aten::empty": 1,
                   "cudaEventQuery": 1, "cudaLaunchKernel": 1, "nccl:all_reduce": 1},
        "total_duration": {"ProfilerStep#1010": 122149, "aten::as_strided": 0, "aten::empty": 0,
                           "cudaEventQuery": 4, "cudaLaunchKernel": 4, "nccl:all_reduce": 67}}
    assert LabeledTrace(trace_dir=folder(tmp_path, "unlabeled",
                                         "trace_compare_base_base.json.gz")).label.startswith("t")
    cpu = TraceDiff.compare_traces(control, test, 1, 1, 1010, 1010, DeviceType.CPU,
                                   use_short_name=True)
    assert list(cpu.columns) == ["control_counts", "control_total_duration", "test_counts",
                                 "test_total_duration", "diff_counts", "diff_duration",
                                 "counts_change_categories"]
    assert cpu["counts_change_categories"].value_counts().to_dict() == {"=": 5, "+": 3, "-": 1}
    gpu = TraceDiff.compare_traces(control, test, 1, 1, 1010, 1010, DeviceType.GPU)
    assert gpu["counts_change_categories"].value_counts().to_dict() == {"-": 1}
    d = TraceDiff.ops_diff(control, test, 1, 1, 1010, 1010, DeviceType.CPU)
    assert d["added"] == ["AddmmBackward0", "All2All_Pooled_Req", "CatBackward0"]
    assert d["deleted"] == ["nccl:all_reduce"]
    assert d["unchanged"] == ["ProfilerStep#1010", "aten::as_strided", "aten::empty",
                              "cudaEventQuery", "cudaLaunchKernel"]
    assert d["increased"] == [] and d["decreased"] == []
    assert TraceDiff.visualize_counts_diff(cpu, show_image=False) is None
    assert TraceDiff.visualize_duration_diff(cpu, show_image=False) is None


def test_trace_dir_ranks_and_stragglers(tmp_path):
    d = folder(tmp_path, "two", "trace_filter_sampled_rank-0.json.gz",
               "trace_filter_sampled_rank-1.json.gz")
    a = TraceAnalysis(trace_dir=d)
    assert a.t.get_ranks() == [0, 1]
    assert sorted(os.path.basename(p) for p in a.t.trace_files.values()) == [
        "trace_filter_sampled_rank-0.json.gz", "trace_filter_sampled_rank-1.json.gz"]
    # HTA's answers: one step of two ranks flags rank 1 (both with two candidates)
    assert a.get_potential_stragglers(visualize=False, num_candidates=1) == [1]
    assert sorted(a.get_potential_stragglers(visualize=False)) == [0, 1]
    df = a.get_temporal_breakdown(visualize=True)  # (outside a notebook nothing is drawn)
    assert list(df["rank"]) == [0, 1]


def test_figures_with_plotly():
    pytest.importorskip("plotly")
    from tracemodel.hta import _plots
    a = TraceAnalysis(trace_files={0: data("kineto", "nccl_parser_config_nccl_data.json.gz")})
    fig = _plots.figure("temporal", a.get_temporal_breakdown(visualize=False))
    assert fig is not None and len(fig.data) == 3
    fig = _plots.figure("kernels", a.get_gpu_kernel_breakdown(visualize=False))
    assert list(fig.data[0].labels)[:2] == ["COMPUTATION", "COMMUNICATION"]


def test_empty_and_cpu_only_traces_answer():
    a = TraceAnalysis(trace_files={34: data(
        "kineto", "cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")})
    df = a.get_temporal_breakdown(visualize=False)
    assert list(df["rank"]) == [34] and pd.isna(df["idle_time_pctg"][0])
    assert a.get_queue_length_summary() is None
    assert a.get_memory_bw_summary() is None
    assert a.get_cuda_kernel_launch_stats(visualize=False)[34].empty


def test_exact_answers_are_one_argument_away(tmp_path):
    """A kernel shorter than a microsecond: HTA's rounding makes it end before it starts, the
    exact rules keep its 0.5 us; communication behind computation the same both ways."""
    trace = {"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 5.0, "dur": 2.0, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10.4,
         "dur": 0.5, "args": {"stream": 7, "correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 20.0, "dur": 2.0, "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 8,
         "ts": 30.0, "dur": 10.25, "args": {"stream": 8, "correlation": 2}},
    ]}
    p = tmp_path / "short.json"
    p.write_text(json.dumps(trace))
    hta_rules = TraceAnalysis(trace_files={0: str(p)})
    exact = TraceAnalysis(trace_files={0: str(p)}, exact=True)
    h = hta_rules.get_temporal_breakdown(visualize=False).iloc[0]
    e = exact.get_temporal_breakdown(visualize=False).iloc[0]
    assert h["kernel_time(us)"] == 40 - 11  # [ceil 10.4, floor 40.25)
    assert e["kernel_time(us)"] == pytest.approx(40.25 - 10.4)
    assert e["compute_time(us)"] == pytest.approx(0.5)
    assert h["compute_time(us)"] == -1  # HTA's kernel that ends before it starts
    _, hk = hta_rules.get_gpu_kernel_breakdown(visualize=False)
    _, ek = exact.get_gpu_kernel_breakdown(visualize=False)
    assert list(ek.columns) == list(hk.columns)
    assert ek[ek["name"] == "gemm"]["sum (us)"].iloc[0] == pytest.approx(0.5)
    assert hk[hk["name"] == "gemm"]["sum (us)"].iloc[0] == -1
    launches = exact.get_cuda_kernel_launch_stats(visualize=False)[0]
    assert list(launches["launch_delay"]) == pytest.approx([3.4, 8.0])


def test_time_blocked_on_a_full_queue_as_hta(negative_queue):
    """HTA's answer on this trace with a limit of 8: one row (its result is kept per rank, the
    last stream's), stream 27, 575533 us, 0.5643 of the rank's span."""
    df = negative_queue.get_time_spent_blocked_on_full_queue(
        negative_queue.get_queue_length_time_series(), max_queue_length=8)
    assert len(df) == 1
    row = df.iloc[0]
    assert (row["rank"], row["stream"]) == (0, 27)
    assert row["duration_at_max_queue_length"] == 575533.0
    assert round(row["relative_duration_at_max_queue_length"], 4) == 0.5643


def test_annotations_allowlist_and_kernels_with_annotations(tmp_path):
    """A generated rank: ten GPU annotations, two of them Optimizer steps past the top 3;
    kernels under nested annotations get the innermost."""
    events = []
    for k in range(10):
        name = "Optimizer.step#SGD.step" if k in (8, 9) else "anno%d" % k
        events.append({"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": 0,
                       "tid": 7, "ts": 1000 * k, "dur": 20 if k in (8, 9) else 900 - 10 * k})
    events.append({"ph": "X", "cat": "gpu_user_annotation", "name": "inner", "pid": 0,
                   "tid": 7, "ts": 100, "dur": 50})
    for k, ts in enumerate([120, 500, 5000, 9005]):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                       "tid": 1, "ts": ts - 50, "dur": 5, "args": {"correlation": k + 1}})
        events.append({"ph": "X", "cat": "kernel", "name": "void k%d<float>(float*)" % k,
                       "pid": 0, "tid": 7, "ts": ts, "dur": 10,
                       "args": {"stream": 7, "correlation": k + 1}})
    p = tmp_path / "annotated.json"
    p.write_text(json.dumps({"traceEvents": events}))
    a = TraceAnalysis(trace_files={0: str(p)})
    plain = a.get_gpu_user_annotation_breakdown(visualize=False, num_kernels=3)
    allowed = a.get_gpu_user_annotation_breakdown(visualize=False, num_kernels=3,
                                                  allowlist_patterns=["Optimizer"])
    assert "Optimizer.step#SGD.step" not in set(plain["name"])
    assert "Optimizer.step#SGD.step" in set(allowed["name"])
    assert len(allowed) == len(plain) + 1
    k = a.get_gpu_kernels_with_user_annotations(rank=0)
    assert list(k["s_user_annotation"]) == ["inner", "anno0", "anno5", "Optimizer.step#SGD.step"]
    assert list(k["s_name"]) == ["k0", "k1", "k2", "k3"]
    assert "gpu_user_annotation" in a.t.symbol_table.sym_index  # (before any get_trace)


def test_event_ids_are_htas_positions_in_the_file():
    """HTA numbers events by their place in the file's traceEvents array (its own test names
    these four of this trace), and the critical path speaks the same ids."""
    a = TraceAnalysis(trace_files={0: data(
        "kineto", "critical_path_cuda_event_sync_event_sync_trace.json.gz")})
    df = a.t.get_trace(0)
    names = a.t.symbol_table.get_sym_table()
    assert {i: names[int(df.loc[i, "name"])] for i in (33, 41, 45, 51)} == {
        33: "at::cuda::(anonymous namespace)::spin_kernel(long)", 41: "cudaEventSynchronize",
        45: "cudaEventQuery", 51: "cudaDeviceSynchronize"}
    kernel = df.loc[33]
    assert df.loc[kernel["index_correlation"], "correlation"] == kernel["correlation"]
    g, ok = a.critical_path_analysis(0, "ProfilerStep", 0)
    assert g.critical_path_events_set <= set(df.index)


def test_stragglers_over_several_steps_as_hta():
    """One rank's file loaded as ranks 0 and 1 (HTA's answers: [0] with one candidate, both
    with two; fewer than one candidate counts as one)."""
    f = data("kineto", "negative_queue_length_values_check_rank0.json.gz")
    a = TraceAnalysis(trace_files={0: f, 1: f})
    assert a.get_profiler_steps() == [550, 551, 552, 553]
    assert a.get_potential_stragglers(num_candidates=1, visualize=False) == [0]
    assert a.get_potential_stragglers(num_candidates=-1, visualize=False) == [0]
    assert sorted(a.get_potential_stragglers(num_candidates=2, visualize=False)) == [0, 1]


def test_op_kernels_and_delay(tmp_path):
    """Three aten::mm calls (two launch gemm then bias, one launches gemm alone) and an
    aten::add launching from a nested aten::copy_ (the innermost op that holds the launch
    counts): each sequence counted, its first launch's delays averaged."""
    events, corr = [], 0

    def op(name, ts, dur, tid=1):
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid,
                       "ts": ts, "dur": dur})

    def launch(ts, kernel, kernel_ts, tid=1):
        nonlocal corr
        corr += 1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                       "tid": tid, "ts": ts, "dur": 2, "args": {"correlation": corr}})
        events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7,
                       "ts": kernel_ts, "dur": 3, "args": {"stream": 7, "correlation": corr}})

    op("aten::mm", 100, 20); launch(104, "gemm", 130); launch(110, "bias", 140)
    op("aten::mm", 200, 20); launch(202, "gemm", 220); launch(210, "bias", 230)
    op("aten::mm", 300, 20); launch(306, "gemm", 320)
    op("aten::add", 400, 30); op("aten::copy_", 405, 10); launch(407, "copy_kernel", 450)
    p = tmp_path / "ops.json"
    p.write_text(json.dumps({"traceEvents": events}))
    a = TraceAnalysis(trace_files={0: str(p)})
    df = a.get_op_kernels_and_delay()[0]
    assert list(df.columns) == ["aten_op_name", "kernel_sequence", "occurrence_count",
                                "avg_aten_op_launch_delay", "avg_runtime_delay"]
    rows = {(r.aten_op_name, r.kernel_sequence): (r.occurrence_count, r.avg_aten_op_launch_delay,
                                                  r.avg_runtime_delay)
            for r in df.itertuples()}
    assert rows == {("aten::mm", "gemm -> bias"): (2, 3.0, 22.0),
                    ("aten::mm", "gemm"): (1, 6.0, 14.0),
                    ("aten::copy_", "copy_kernel"): (1, 2.0, 43.0)}
    assert df.iloc[0]["occurrence_count"] == 2  # sorted by the count, most first
    assert a.get_aten_op_kernels_and_delay()[0].equals(df)


def test_unknown_arguments_are_said_not_swallowed():
    with pytest.warns(UserWarning, match="ignores parser_config"):
        TraceAnalysis(trace_files={0: data("kineto", "trace_filter_sampled_rank-0.json.gz")},
                      parser_config=object())


def test_a_folders_files_are_matched_to_their_ranks(tmp_path):
    """Files listed out of rank order: each rank keeps its own file (and its event ids)."""
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(data("kineto", "trace_filter_sampled_rank-1.json.gz"), d / "a.json.gz")
    shutil.copy(data("kineto", "trace_filter_sampled_rank-0.json.gz"), d / "b.json.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # (no "cannot be matched" warning)
        warnings.simplefilter("ignore", tracemodel.RepairWarning)
        a = TraceAnalysis(trace_dir=str(d))
        assert {r: os.path.basename(p) for r, p in a.t.trace_files.items()} == {
            0: "b.json.gz", 1: "a.json.gz"}
        a.t.get_trace(0)
        a.t.get_trace(1)
    assert list(a.get_comm_comp_overlap(visualize=False)["comp_comm_overlap_pctg"]) == [11.81,
                                                                                       20.05]
    shutil.copy(d / "b.json.gz", d / "c.json.gz")
    with pytest.raises(tracemodel.TraceError, match="two files of rank 0"):
        TraceAnalysis(trace_dir=str(d))


def test_frequent_kernel_sequences(tmp_path):
    """Three aten::linear calls at the top of a thread: two launch gemm, bias, relu through
    aten::addmm, one launches gemm alone; a deeper aten::linear does not count (HTA keeps the
    least depth); with min_pattern_len 2 the short one is left out."""
    events, corr = [], 0

    def op(name, ts, dur):
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1,
                       "ts": ts, "dur": dur})

    def launch(ts, kernel, kernel_ts, dur=4):
        nonlocal corr
        corr += 1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                       "tid": 1, "ts": ts, "dur": 1, "args": {"correlation": corr}})
        events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7,
                       "ts": kernel_ts, "dur": dur, "args": {"stream": 7, "correlation": corr}})

    for start in (100, 200):
        op("aten::linear", start, 40)
        op("aten::addmm", start + 2, 30)
        launch(start + 4, "gemm", start + 50)
        launch(start + 10, "bias", start + 60)
        launch(start + 20, "relu", start + 70)
    op("aten::linear", 300, 20)
    launch(305, "gemm", 330)
    op("outer", 400, 50)
    op("aten::linear", 405, 30)  # (one deeper: not a root)
    launch(410, "gemm", 460)
    launch(415, "bias", 470)
    p = tmp_path / "rank-0.json"
    p.write_text(json.dumps({"traceEvents": events}))
    a = TraceAnalysis(trace_files={0: str(p)})
    out = tmp_path / "out"
    out.mkdir()
    df = a.get_frequent_cuda_kernel_sequences("aten::linear", str(out), min_pattern_len=1)
    assert list(df.columns) == ["pattern", "count", "GPU kernel duration (us)",
                                "CPU op duration (us)"]
    assert df.values.tolist() == [["aten::linear|gemm|bias|relu", 2, 24, 80],
                                  ["aten::linear|gemm", 1, 4, 20]]
    df = a.get_frequent_cuda_kernel_sequences("aten::linear", "", min_pattern_len=2)
    assert list(df["pattern"]) == ["aten::linear|gemm|bias|relu"]
    with open(out / "overlaid_rank-0.json") as f:
        marked = [e for e in json.load(f)["traceEvents"] if "Patterns" in e.get("args", {})]
    assert len(marked) == 2 * 8 + 3  # each pattern's ops, launches and kernels
    assert json.loads(marked[0]["args"]["Patterns"]) in (
        {"aten::linear|gemm|bias|relu": 2}, {"aten::linear|gemm": 1})


def test_critical_path_overlay(tmp_path):
    a = TraceAnalysis(trace_files={0: data(
        "kineto", "critical_path_cuda_event_sync_event_sync_trace.json.gz")})
    g, ok = a.critical_path_analysis(0, "ProfilerStep", 0)
    out = a.overlay_critical_path_analysis(0, g, str(tmp_path))
    assert os.path.basename(out) == ("overlaid_critical_path_"
                                     "critical_path_cuda_event_sync_event_sync_trace.json.gz")
    with gzip.open(out, "rt") as f:
        events = json.load(f)["traceEvents"]
    critical = [e for e in events if e.get("args", {}).get("critical") == 1]
    assert len(critical) == len(g.critical_path_events_set)
    flows = [e for e in events if e.get("cat") == "critical_path"]
    assert flows and len(flows) % 2 == 0
