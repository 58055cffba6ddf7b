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
    procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--port", "0",
                               "--scheduler-file", sched] + loopback,
                              stdout=subprocess.DEVNULL, stderr=open(d / "scheduler.log", "w"))]
    try:
        _wait_for("the scheduler file", lambda: os.path.exists(sched))
        for k in range(2):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "worker", "--scheduler-file", sched,
                 "--nthreads", "1", "--name", "w%d" % k] + loopback,
                stdout=subprocess.DEVNULL, stderr=open(d / ("worker%d.log" % k), "w")))
        client = distributed.Client(scheduler_file=sched, timeout=60)
        client.wait_for_workers(2, timeout=120)
        yield client, sched, procs
        client.close()
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("ranks"))
    _synthetic.write_run(d, 16, steps=3, launches_per_step=150)
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
