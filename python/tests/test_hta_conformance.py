"""tracemodel.hta against Holistic Trace Analysis's own answers on every shared trace that has
them (tests/data/kineto/hta/*.hta.json): every row of every analysis HTA answered."""

import json
import math

import pytest

from conftest import data
from tracemodel.hta import TraceAnalysis

CASES = {
    "alexnet": ["critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz"],
    "amd": ["amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"],
    "cpu_only": ["cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"],
    "cuda_event_sync": ["critical_path_cuda_event_sync_event_sync_trace.json.gz"],
    "nccl_parser_config": ["nccl_parser_config_nccl_data.json.gz"],
    "negative_queue_length": ["negative_queue_length_values_check_rank0.json.gz"],
    "simple_add_et_trace": ["execution_trace_benchmark_simple_add_trace.json.gz"],
    "trace_compare_base": ["trace_compare_base_base.json.gz"],
    "trace_compare_test": ["trace_compare_test_test.json.gz"],
    "trace_diff_control": ["trace_diff_control_control.json.gz"],
    "trace_filter_2ranks": ["trace_filter_sampled_rank-0.json.gz",
                            "trace_filter_sampled_rank-1.json.gz"],
    "triton": ["triton_example_triton_example.json.gz"],
}


def same(a, b):
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return a is None or (isinstance(a, float) and math.isnan(a))
    if a is None:
        return b is None or (isinstance(b, float) and math.isnan(b))
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return float(a) == pytest.approx(float(b), rel=1e-9, abs=1e-9)


def rows_of(df):
    return [dict(zip(df.columns, r)) for r in df.itertuples(index=False)]


def check_rows(got, want, keys, columns):
    index = {tuple(r[k] for k in keys): r for r in got}
    assert len(index) == len(want)
    for w in want:
        g = index[tuple(w[k] for k in keys)]
        for c in columns:
            assert same(g[c], w[c]), (keys, w, c, g[c])


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    name = request.param
    with open(data("kineto", "hta", name + ".hta.json")) as f:
        answers = json.load(f)
    files = {}
    for k, f in enumerate(CASES[name]):
        files[int(answers["ranks"][k])] = data("kineto", f)
    return answers, TraceAnalysis(trace_files=files)


def answered(answers, what):
    return what in answers and what not in answers.get("errors", {})


def test_temporal_breakdown(case):
    answers, a = case
    if not answered(answers, "temporal_breakdown"):
        pytest.skip("HTA failed on it")
    df = a.get_temporal_breakdown(visualize=False)
    assert list(df.columns) == ["rank", "idle_time(us)", "compute_time(us)",
                                "non_compute_time(us)", "kernel_time(us)", "idle_time_pctg",
                                "compute_time_pctg", "non_compute_time_pctg"]
    assert str(df["idle_time(us)"].dtype) == "float64"
    want = answers["temporal_breakdown"]
    check_rows(rows_of(df), want, ["rank"], [c for c in want[0] if c not in ("index",)])


def test_kernel_breakdowns(case):
    answers, a = case
    types, kernels = a.get_gpu_kernel_breakdown(visualize=False)
    if answered(answers, "kernel_type_breakdown"):
        want = [r for r in answers["kernel_type_breakdown"] if r["sum"] != 0]
        got = [r for r in rows_of(types) if r["sum"] != 0]
        check_rows(got, want, ["kernel_type"], ["sum", "percentage"])
    if answered(answers, "kernel_breakdown"):
        assert list(kernels.columns) == ["name", "sum (us)", "max (us)", "min (us)", "stddev",
                                         "mean (us)", "kernel_type", "rank"]
        want = answers["kernel_breakdown"]
        check_rows(rows_of(kernels), want, ["rank", "kernel_type", "name"],
                   ["sum (us)", "max (us)", "min (us)", "stddev", "mean (us)"])
        # HTA's order: by kernel type, name and rank
        assert [r["name"] for r in rows_of(kernels)] == [r["name"] for r in want]


def test_idle_time_breakdown(case):
    answers, a = case
    if not answered(answers, "idle_time_breakdown"):
        pytest.skip("HTA failed on it")
    idle, stats = a.get_idle_time_breakdown(ranks=answers["ranks"], visualize=False,
                                            show_idle_interval_stats=True)
    keys = ["rank", "stream", "idle_category"]
    check_rows(rows_of(idle), answers["idle_time_breakdown"], keys,
               ["idle_time", "idle_time_ratio"])
    check_rows(rows_of(stats), answers["idle_interval_stats"], keys,
               ["count", "mean", "std", "min", "25%", "50%", "75%", "max"])


def test_comm_comp_overlap(case):
    answers, a = case
    if not answered(answers, "comm_comp_overlap"):
        pytest.skip("HTA failed on it")
    check_rows(rows_of(a.get_comm_comp_overlap(visualize=False)), answers["comm_comp_overlap"],
               ["rank"], ["comp_comm_overlap_pctg"])


def test_launch_stats(case):
    answers, a = case
    if not answered(answers, "launch_stats"):
        pytest.skip("HTA failed on it")
    got = a.get_cuda_kernel_launch_stats(ranks=answers["ranks"], visualize=False)
    for rank, want in answers["launch_stats"].items():
        df = got.get(int(rank))
        rows = [] if df is None else rows_of(df)
        assert len(rows) == len(want)
        for g, w in zip(rows, want):
            for c in ["correlation", "cpu_duration", "gpu_duration", "launch_delay"]:
                assert same(g[c], w[c]), (rank, w, c)


def summary_rows(df, keys, value):
    if df is None:
        return []
    flat = df.copy()
    flat.columns = [value + "/" + c for _, c in df.columns]
    return rows_of(flat.reset_index())


def test_queue_length_summary(case):
    answers, a = case
    if not answered(answers, "queue_length_summary"):
        pytest.skip("HTA failed on it")
    got = summary_rows(a.get_queue_length_summary(ranks=answers["ranks"]), ["rank", "stream"],
                       "queue_length")
    want = answers["queue_length_summary"] or []
    check_rows(got, want, ["rank", "stream"],
               ["queue_length/" + s for s in ["count", "mean", "std", "min", "25%", "50%",
                                              "75%", "max"]])


def test_memory_bw_summary(case):
    answers, a = case
    if not answered(answers, "memory_bw_summary"):
        pytest.skip("HTA failed on it")
    got = summary_rows(a.get_memory_bw_summary(ranks=answers["ranks"]), ["rank", "name"],
                       "memory_bw_gbps")
    want = answers["memory_bw_summary"] or []
    check_rows(got, want, ["rank", "name"],
               ["memory_bw_gbps/" + s for s in ["count", "mean", "min", "max"]])


def test_critical_path(case):
    answers, a = case
    if not answered(answers, "critical_path"):
        pytest.skip("no critical path answer")
    want = answers["critical_path"]
    g, ok = a.critical_path_analysis(answers["ranks"][0], want["annotation"],
                                     want["instance_id"])
    assert ok
    assert g.node_count == want["nodes"]
    assert len(g.edges) == want["edges"]
    assert len(g.critical_path_events_set) == want["critical_path_events"]
    assert round(g.length) == want["critical_path_length_us"]
    b = g.get_critical_path_breakdown()
    for cause, us in want["bound_by_us"].items():
        assert b[b["bound_by"] == cause]["duration"].sum() == us, cause
