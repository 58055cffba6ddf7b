"""The analyses on a Dask cluster started as users start one: a ``dask scheduler`` process and two
``dask worker`` processes on this machine, on 127.0.0.1 only, joined through a scheduler file,
the workers importing the installed package. Every answer equals the local run's."""

import glob
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings

import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

import tracemodel  # noqa: E402
from tracemodel import _synthetic  # noqa: E402

PROGRAM = os.environ.get("TRACEMODEL_PROGRAM")


def _wait_for(what, check, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if check():
            return
        time.sleep(0.1)
    raise TimeoutError(what)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    d = tmp_path_factory.mktemp("cluster")
    sched = str(d / "scheduler.json")
    loopback = ["--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0"]
    # (each in a session of its own: the end kills a worker's nanny and its worker together)
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--port", "0",
                               "--scheduler-file", sched] + loopback, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=open(d / "scheduler.log", "w"))]
    try:
        _wait_for("the scheduler file", lambda: os.path.exists(sched))
        for k in range(2):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "worker", "--scheduler-file", sched,
                 "--nthreads", "1", "--name", "w%d" % k] + loopback, start_new_session=True,
                stdout=subprocess.DEVNULL, stderr=open(d / ("worker%d.log" % k), "w")))
        client = distributed.Client(scheduler_file=sched, timeout=60)
        client.wait_for_workers(2, timeout=120)
        yield client, sched, procs
        client.close()
    finally:
        # Killed, not shut down: a clean shutdown waits seconds for the nannies and checks
        # nothing the tests need.
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in procs:
            p.wait()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("ranks"))
    _synthetic.write_run(d, 16, steps=3, launches_per_step=150)
    return d


@pytest.fixture(scope="module")
def other_ranks(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("other"))
    _synthetic.write_run(d, 16, steps=3, launches_per_step=150, seed=2)
    return d


def _frames_equal(a, b):
    assert a.ranks == b.ranks
    assert a.unit == b.unit and a.repairs == b.repairs
    for name in a._tables:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)


def _descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in glob.glob("/proc/%d/task/*/children" % p):
            with open(task) as f:
                todo += [int(c) for c in f.read().split()]
    return out


def test_cluster_listens_on_loopback_only(cluster):
    _, _, procs = cluster
    inodes = set()
    for top in procs:
        for pid in _descendants(top.pid):
            for fd in glob.glob("/proc/%d/fd/*" % pid):
                try:
                    link = os.readlink(fd)
                except OSError:
                    continue
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:  # LISTEN, one of the cluster's
                    listening.append(cols[1].split(":")[0])
    assert len(listening) >= 3  # the scheduler and two workers at least
    loopback = {"0100007F", "00000000000000000000000001000000",
                "0000000000000000FFFF00000100007F"}
    assert set(listening) <= loopback, listening


@pytest.mark.parametrize("hta", [False, True])
def test_cluster_gpu_report_equals_the_local_run(cluster, ranks, hta):
    client, _, _ = cluster
    local = tracemodel.gpu_report(ranks, hta=hta)
    remote = tracemodel.gpu_report(ranks, hta=hta, client=client)
    assert len(remote.ranks) == 16 and remote.unread == []
    _frames_equal(local, remote)
    assert len(remote.collectives) == 3 and (remote.collectives["ranks"] == 16).all()


def _program(args, env_extra=None):
    env = dict(os.environ, TRACEMODEL_PYTHON=sys.executable, **(env_extra or {}))
    return subprocess.run([PROGRAM] + args, capture_output=True, env=env, timeout=300)


@pytest.mark.skipif(not PROGRAM, reason="TRACEMODEL_PROGRAM names the tracemodel program")
@pytest.mark.parametrize("rules", [[], ["--hta"]])
def test_cluster_program_json_byte_for_byte(cluster, ranks, rules):
    _, sched, _ = cluster
    local = _program(["gpu", "--json"] + rules + [ranks])
    remote = _program(["gpu", "--json", "--scheduler-file", sched] + rules + [ranks])
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    assert len(local.stdout) > 10000
    assert remote.stdout == local.stdout


@pytest.mark.skipif(not PROGRAM, reason="TRACEMODEL_PROGRAM names the tracemodel program")
@pytest.mark.parametrize("options", [[], ["--hta"], ["--hta", "--short-names", "--iteration", "1"],
                                     ["--rank", "3"]])
def test_cluster_program_diff_byte_for_byte(cluster, ranks, other_ranks, tmp_path, options):
    _, sched, _ = cluster
    other = other_ranks
    local = _program(["diff", "--json"] + options + [ranks, other])
    remote = _program(["diff", "--json", "--scheduler-file", sched] + options + [ranks, other])
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    assert len(local.stdout) > 10000 and remote.stdout == local.stdout
    if options == ["--hta"]:  # the page, with both runs' device time
        pages = [str(tmp_path / "local.html"), str(tmp_path / "remote.html")]
        assert _program(["diff", "--hta", "-o", pages[0], ranks, other]).returncode == 0
        assert _program(["diff", "--hta", "-o", pages[1], "--scheduler-file", sched, ranks,
                         other]).returncode == 0
        with open(pages[0], "rb") as a, open(pages[1], "rb") as b:
            assert a.read() == b.read()


@pytest.mark.skipif(not PROGRAM, reason="TRACEMODEL_PROGRAM names the tracemodel program")
def test_cluster_program_report_byte_for_byte(cluster, ranks, tmp_path):
    """``report``'s page, each rank's part made by the program on a worker: a run of 16 ranks
    under both rules, and one with a rank that has allocations (its memory section)."""
    _, sched, _ = cluster
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data",
                             "pytorch-1.13-kineto", "memory_profile.kineto.json"),
                mixed / "rank-0.json")
    shutil.copy(os.path.join(ranks, "rank-1.json.gz"), mixed)
    for folder, rules in ((ranks, []), (ranks, ["--hta"]), (str(mixed), [])):
        pages = [str(tmp_path / "local.html"), str(tmp_path / "remote.html")]
        assert _program(["report", "-o", pages[0]] + rules + [folder]).returncode == 0
        out = _program(["report", "-o", pages[1], "--scheduler-file", sched] + rules + [folder])
        assert out.returncode == 0, out.stderr
        with open(pages[0], "rb") as a, open(pages[1], "rb") as b:
            local = a.read()
            assert local == b.read()
        if folder == str(mixed):
            assert b"Memory (rank 0)" in local


def test_cluster_a_worker_killed_in_the_middle(cluster, ranks, tmp_path):
    client, _, _ = cluster
    d = str(tmp_path)  # ranks of a few hundred ms each: the kill lands while some are left
    _synthetic.write_run(d, 16, steps=4, launches_per_step=1500, seed=3)
    local = tracemodel.gpu_report(d, hta=True)
    found = {}
    run = threading.Thread(target=lambda: found.update(
        r=tracemodel.gpu_report(d, hta=True, client=client)))
    run.start()
    killed = None

    def busy():
        nonlocal killed
        for addr, keys in client.processing().items():
            if any("_gpu_part" in str(k) for k in keys):
                pid = client.run(os.getpid, workers=[addr])[addr]
                os.kill(pid, signal.SIGKILL)
                killed = addr
                return True
        return False
    _wait_for("a worker busy with a rank", busy, timeout=120)
    run.join(timeout=300)
    assert killed is not None and not run.is_alive()
    remote = found["r"]
    assert remote.unread == []
    _frames_equal(local, remote)
    client.wait_for_workers(2, timeout=120)  # (its nanny starts it again)


def test_cluster_one_unreadable_rank_among_16(cluster, ranks, tmp_path):
    client, sched, _ = cluster
    d = str(tmp_path)
    files = [os.path.join(ranks, "rank-%d.json.gz" % r) for r in range(16)]
    for f in files[:15]:
        shutil.copy(f, d)
    bad = os.path.join(d, "rank-15.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": [{"name": "cut')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        remote = tracemodel.gpu_report(d, client=client)
    assert [type(w.message) for w in caught] == [tracemodel.RankWarning]
    assert len(remote.unread) == 1 and remote.unread[0][0] == bad
    assert "TraceError" in remote.unread[0][1] and "at byte" in remote.unread[0][1]
    assert remote.ranks == list(range(15))
    _frames_equal(tracemodel.gpu_report(files[:15]), remote)
    if PROGRAM:
        out = _program(["gpu", "--json", "--scheduler-file", sched, d])
        assert out.returncode == 1
        assert ("%s: not read: TraceError" % bad).encode() in out.stderr
        local = _program(["gpu", "--json"] + files[:15])
        body, _, unread = out.stdout.rpartition(b',\n"unread":[')
        assert body + b"}\n" == local.stdout
        assert bad.encode() in unread


def _equal(a, b, what):
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=what)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, check_exact=True, obj=what)
    elif isinstance(a, (tuple, list)) and a and isinstance(a[0], pd.DataFrame):
        for x, y in zip(a, b):
            _equal(x, y, what)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), what
        for k in a:
            _equal(a[k], b[k], "%s[%s]" % (what, k))
    else:
        assert a == b, (what, a, b)


def _two_real_ranks(folder):
    for r in (0, 1):
        shutil.copy(os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "kineto",
                                 "trace_filter_sampled_rank-%d.json.gz" % r), folder)
    return str(folder)


@pytest.mark.parametrize("exact", [False, True])
def test_cluster_trace_analysis_equals_the_local_run(cluster, ranks, tmp_path, exact):
    """Every method of tracemodel.hta.TraceAnalysis with a client answers as without one: on the
    16 generated ranks and on two real ranks."""
    from tracemodel.hta import TraceAnalysis, TraceDiff, LabeledTrace
    client, _, _ = cluster
    for folder in (ranks, _two_real_ranks(tmp_path)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (repairs of the real traces: both runs warn)
            local = TraceAnalysis(trace_dir=folder, exact=exact)
            remote = TraceAnalysis(trace_dir=folder, exact=exact, client=client)
        every = local.t.get_ranks()
        assert remote.t.get_ranks() == every and remote.t.unread == []
        assert remote.t.min_ts == local.t.min_ts
        assert remote.t.symbol_table.sym_table == local.t.symbol_table.sym_table
        calls = [("get_temporal_breakdown", {}), ("get_comm_comp_overlap", {}),
                 ("get_gpu_kernel_breakdown", {}),
                 ("get_gpu_kernel_breakdown", dict(num_kernels=3, include_memory_kernels=False)),
                 ("get_idle_time_breakdown", dict(ranks=every, show_idle_interval_stats=True)),
                 ("get_idle_time_breakdown", dict(consecutive_kernel_delay=5)),
                 ("get_cuda_kernel_launch_stats", dict(ranks=every)),
                 ("get_queue_length_summary", dict(ranks=every)),
                 ("get_queue_length_time_series", dict(ranks=every)),
                 ("get_memory_bw_summary", dict(ranks=every)),
                 ("get_memory_bw_time_series", dict(ranks=every)),
                 ("get_gpu_user_annotation_breakdown", {}),
                 ("get_profiler_steps", {}), ("get_potential_stragglers", {}),
                 ("get_time_spent_blocked_on_full_queue", {})]
        if not exact:
            calls.append(("get_cpu_user_annotation_breakdown", {}))
        for name, kw in calls:
            if name.startswith("get_") and name not in (
                    "get_profiler_steps", "get_queue_length_summary",
                    "get_queue_length_time_series", "get_memory_bw_summary",
                    "get_memory_bw_time_series", "get_time_spent_blocked_on_full_queue"):
                kw = dict(kw, visualize=False)
            _equal(getattr(local, name)(**kw), getattr(remote, name)(**kw), name)
        assert local.get_potential_stragglers(visualize=False) != []
        _equal(local.t.get_trace(every[-1]), remote.t.get_trace(every[-1]), "get_trace")
        window = "ProfilerStep"
        a = local.critical_path_analysis(every[0], window, 0)
        b = remote.critical_path_analysis(every[0], window, 0)
        assert (a is None) == (b is None)
        if a is not None:
            _equal(a[0].summary(), b[0].summary(), "critical path")
    local = [LabeledTrace(label, trace_dir=ranks) for label in ("control", "test")]
    remote = [LabeledTrace(label, trace_dir=ranks, client=client) for label in ("control", "test")]
    _equal(TraceDiff.compare_traces(*local, control_rank=0, test_rank=5),
           TraceDiff.compare_traces(*remote, control_rank=0, test_rank=5), "compare_traces")


def test_cluster_trace_analysis_one_unreadable_rank(cluster, ranks, tmp_path):
    from tracemodel.hta import TraceAnalysis
    client, _, _ = cluster
    d = str(tmp_path)
    for r in range(15):
        shutil.copy(os.path.join(ranks, "rank-%d.json.gz" % r), d)
    bad = os.path.join(d, "rank-15.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": [{"name": "cut')
    with pytest.warns(tracemodel.RankWarning, match="1 of 16 ranks unread"):
        remote = TraceAnalysis(trace_dir=d, client=client)
    assert [f for f, _ in remote.t.unread] == [bad]
    assert remote.t.get_ranks() == list(range(15))
    os.remove(bad)
    local = TraceAnalysis(trace_dir=d)
    _equal(local.get_temporal_breakdown(visualize=False),
           remote.get_temporal_breakdown(visualize=False), "temporal")
