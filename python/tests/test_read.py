"""tracemodel.read: the events as a DataFrame, the tree, the links, the analyses and write."""

import json
import random

import pandas as pd
import pytest

import tracemodel
from conftest import data

SMALL = {"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 7,
     "ts": 100, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 7, "ts": 110, "dur": 20,
     "args": {"External id": 3, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 7,
     "ts": 115, "dur": 5, "args": {"correlation": 11, "External id": 3}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 9, "ts": 140, "dur": 30,
     "args": {"stream": 9, "device": 0, "correlation": 11, "External id": 3}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "main"}},
]}


@pytest.fixture
def small(tmp_path):
    p = tmp_path / "small.json"
    p.write_text(json.dumps(SMALL))
    return tracemodel.read(p)


def test_events_columns_and_dtypes(small):
    e = small.events()
    assert list(e.columns) == ["name", "category", "kind", "thread", "pid", "tid", "ts", "dur",
                               "parent", "correlation", "external_id", "stream", "device",
                               "input_shapes"]
    for c in ["name", "category", "kind", "thread", "input_shapes"]:
        assert str(e[c].dtype) == "category"
    assert list(e["name"]) == ["ProfilerStep#1", "aten::mm", "cudaLaunchKernel", "gemm"]
    assert list(e["category"]) == ["user_annotation", "cpu_op", "cuda_runtime", "kernel"]
    assert list(e["dur"]) == [50000, 20000, 5000, 30000]
    assert list(e["ts"] - e["ts"][0]) == [0, 10000, 15000, 40000]
    assert list(e["parent"]) == [-1, 0, 1, 2]  # the kernel under its launch
    assert list(e["thread"])[:3] == ["main"] * 3
    assert list(e["stream"]) == [-1, -1, -1, 9]
    assert list(e["device"]) == [-1, -1, -1, 0]
    assert list(e["correlation"]) == [-1, 3, 11, 11]
    assert e["input_shapes"][1] == "[[2, 3], [3, 4]]"
    assert pd.isna(e["input_shapes"][0])


def test_tree_links_and_key_averages(small):
    tree = small.tree()
    assert list(tree.index) == [0, 1, 2, 3]
    assert list(tree["depth"]) == [0, 1, 2, 3]
    links = small.links()
    assert [(s, t) for s, t in zip(links["source"], links["target"])] == [(2, 3)]
    ka = small.key_averages()
    mm = ka[ka["name"] == "aten::mm"].iloc[0]
    assert mm["count"] == 1 and mm["total_ns"] == 20000 and mm["self_ns"] == 15000
    assert mm["device_total_ns"] == 30000
    shapes = small.key_averages(group_by="shapes")
    assert "[[2, 3], [3, 4]]" in set(shapes["input_shapes"])
    with pytest.raises(ValueError):
        small.key_averages(group_by="colour")


@pytest.mark.parametrize("suffix", [".json", ".json.gz", ".pftrace"])
def test_write_and_read_back(small, tmp_path, suffix):
    out = tmp_path / ("again" + suffix)
    small.write(out)
    again = tracemodel.read(out).events()
    first = small.events()
    for c in ["name", "ts", "dur", "parent", "stream", "correlation"]:
        assert list(again[c]) == list(first[c]), c


def random_trace(rng, threads=3, ops=40):
    """Nested ops per thread (each inside its parent's span), and a kernel per some ops."""
    events, corr = [], 100
    for tid in range(1, threads + 1):
        def make(start, end, depth):
            nonlocal corr
            t = start
            while t < end - 4 and len(events) < ops * tid:
                length = rng.randint(2, max(2, (end - t) // 2))
                if t + length > end:
                    break
                name = "op%d_%d" % (depth, rng.randint(0, 3))
                events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid,
                               "ts": t, "dur": length})
                if rng.random() < 0.3 and length > 2:
                    corr += 1
                    events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                                   "pid": 1, "tid": tid, "ts": t + 1, "dur": 1,
                                   "args": {"correlation": corr}})
                    events.append({"ph": "X", "cat": "kernel", "name": "k%d" % corr, "pid": 0,
                                   "tid": 7, "ts": t + 1000000, "dur": 3,
                                   "args": {"stream": 7, "device": 0, "correlation": corr}})
                if depth < 4 and length > 8:  # (after the launch: no tie of starts)
                    make(t + 3, t + length - 1, depth + 1)
                t += length + rng.randint(1, 3)  # (siblings never touch)
        make(0, 100000, 0)
    return {"traceEvents": events}


def brute_parents(events):
    """The innermost host event holding each host event on its thread; a kernel's launch."""
    host = [(k, e) for k, e in enumerate(events) if e["cat"] != "kernel"]
    launch = {e["args"]["correlation"]: k for k, e in host if e["cat"] == "cuda_runtime"}
    out = {}
    for k, e in enumerate(events):
        if e["cat"] == "kernel":
            out[k] = launch[e["args"]["correlation"]]
            continue
        best = None
        for j, p in host:
            if j == k or p["tid"] != e["tid"]:
                continue
            if p["ts"] <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"] and \
                    (p["dur"] > e["dur"] or (p["dur"] == e["dur"] and j < k)):
                if best is None or events[best]["dur"] > p["dur"]:
                    best = j
        out[k] = best
    return out


@pytest.mark.parametrize("seed", range(8))
def test_random_trees_equal_a_brute_force_reference(tmp_path, seed):
    rng = random.Random(seed)
    trace = random_trace(rng)
    p = tmp_path / "random.json"
    p.write_text(json.dumps(trace))
    e = tracemodel.read(p).events()
    evs = trace["traceEvents"]
    assert len(e) == len(evs)
    # the table is in start order; match by (tid, ts, dur, name), unique here
    key = {(ev["tid"] if ev["cat"] != "kernel" else 7, ev["ts"] * 1000, ev["dur"] * 1000,
            ev["name"]): k for k, ev in enumerate(evs)}
    base = e["ts"].min() - min(ev["ts"] for ev in evs) * 1000
    table_of = {}
    for row, (tid, ts, dur, name) in enumerate(zip(e["tid"], e["ts"], e["dur"], e["name"])):
        table_of[key[(tid, ts - base, dur, name)]] = row
    want = brute_parents(evs)
    for k, parent in want.items():
        got = e["parent"].iloc[table_of[k]]
        assert got == (-1 if parent is None else table_of[parent]), (seed, evs[k])


def test_a_real_trace_and_its_analyses():
    t = tracemodel.read(data("kineto", "trace_filter_sampled_rank-0.json.gz"))
    e = t.events()
    assert len(e) == len(t) == 4811
    assert e["name"].cat.categories.is_unique
    assert (e["parent"] < len(e)).all()
    cp = t.critical_path()
    assert cp.length > 0 and cp.edges["critical"].sum() == len(cp.edges[cp.edges["critical"]])
    assert abs(cp.summary().sum() - 100.0) < 1e-6
    on_path = cp.edges[cp.edges["critical"]]
    by_cause = on_path.groupby("bound_by")["weight"].sum().to_dict()
    assert {k: v for k, v in by_cause.items() if v} == {
        k: v for k, v in cp.bound_by.items() if v}  # each path edge's cause adds up
    pats = t.patterns()
    assert list(pats.columns) == ["pattern", "event", "name", "location"]
    assert len(pats.attrs["summary"]) == 8


def test_patterns_find_pytorchs_matches():
    t = tracemodel.read(data("pytorch-1.13-kineto", "for_loop_indexing.kineto.json"))
    p = t.patterns()
    found = p[p["pattern"] == "For Loop Indexing Pattern"]
    assert len(found) > 0
    assert set(found["name"]) <= set(t.events()["name"])


def test_diff_of_two_runs():
    a = tracemodel.read(data("kineto", "trace_compare_base_base.json.gz"))
    b = tracemodel.read(data("kineto", "trace_compare_test_test.json.gz"))
    d = tracemodel.diff(a, b, 1010, 1010, device="cpu", short_names=True)
    assert list(d.columns) == ["name", "control_counts", "control_total_duration",
                               "test_counts", "test_total_duration", "diff_counts",
                               "diff_duration"]
    assert (d["diff_counts"] == d["test_counts"] - d["control_counts"]).all()
    added = set(d[(d["control_counts"] == 0) & (d["test_counts"] > 0)]["name"])
    assert {"AddmmBackward0", "All2All_Pooled_Req", "CatBackward0"} <= added
