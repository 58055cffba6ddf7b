"""tracemodel's ranks on a Dask cluster, measured: generated ranks of about 1M events each
(tracemodel._synthetic) analysed by ``tracemodel.gpu_report(..., hta=True, client=...)`` on one
single-threaded worker and on two (a ``dask scheduler`` and ``dask worker --nthreads 1
--no-nanny`` processes on 127.0.0.1), medians of repetitions:

- throughput (ranks a second) with two workers against one;
- the memory each worker adds over its idle self (its peak resident set, VmHWM, less its
  resident set once idle with tracemodel imported) against one rank's table;
- what crosses the network (the loopback interface's bytes, everything Dask sent included)
  against the trace bytes.

    python3 bench/python/cluster_speed.py [--folder DIR] [--ranks 16] [--events 1000000]

The ranks are written to DIR once (about 190 MB each) and reused."""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import tracemodel
from tracemodel import _core, _synthetic


def lo_bytes():
    with open("/proc/net/dev") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == "lo":
                return int(rest.split()[0])  # (received: every byte sent over lo is received)
    return 0


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class Cluster:
    def __init__(self, workers, folder):
        from dask.distributed import Client
        self.sched = os.path.join(folder, "scheduler.json")
        if os.path.exists(self.sched):
            os.remove(self.sched)
        net = ["--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0"]
        log = open(os.path.join(folder, "cluster.log"), "a")
        self.procs = [subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--port", "0",
                                        "--scheduler-file", self.sched] + net,
                                       stdout=log, stderr=log)]
        while not os.path.exists(self.sched):
            time.sleep(0.1)
        self.workers = [subprocess.Popen([sys.executable, "-m", "dask", "worker",
                                          "--scheduler-file", self.sched, "--nthreads", "1",
                                          "--no-nanny", "--memory-limit", "0"] + net,
                                         stdout=log, stderr=log) for _ in range(workers)]
        self.procs += self.workers
        self.client = Client(scheduler_file=self.sched, timeout=60)
        self.client.wait_for_workers(workers, timeout=120)
        self.client.run(lambda: __import__("tracemodel.cluster"))
        time.sleep(1)
        self.idle_kb = [status_kb(w.pid, "VmRSS") for w in self.workers]

    def added_kb(self):
        return [status_kb(w.pid, "VmHWM") - idle for w, idle in zip(self.workers, self.idle_kb)]

    def close(self):
        self.client.close()
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(timeout=30)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "tracemodel-ranks"))
    p.add_argument("--ranks", type=int, default=16)
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rules", choices=["exact", "hta", "both"], default="both")
    a = p.parse_args()
    steps = 4
    per_step = max(1, (a.events // steps - 2) // 3)
    files = [os.path.join(a.folder, "rank-%d.json" % r) for r in range(a.ranks)]
    if not all(os.path.exists(f) for f in files):
        os.makedirs(a.folder, exist_ok=True)
        t = time.time()
        for r, f in enumerate(files):
            _synthetic.write_rank(f, r, world_size=a.ranks, steps=steps,
                                  launches_per_step=per_step)
        print("wrote %d ranks in %.0f s" % (a.ranks, time.time() - t))
    trace_bytes = sum(os.path.getsize(f) for f in files)
    one = _core.HtaTrace([(-1, files[0])], False, True)
    table = one.table_bytes
    events = one.rows
    del one
    print("%d ranks, %.0f MB of traces; one rank: %d rows of HTA's frame, a table of %.0f MB"
          % (a.ranks, trace_bytes / 1e6, events, table / 1e6))
    for hta in {"exact": (False,), "hta": (True,), "both": (False, True)}[a.rules]:
        results = {}
        rules = "HTA's rules" if hta else "exact rules"
        for n in (1, 2):
            c = Cluster(n, a.folder)
            try:
                times, net = [], []
                for _ in range(a.repeat):
                    before, t = lo_bytes(), time.perf_counter()
                    r = tracemodel.gpu_report(files, hta=hta, client=c.client)
                    times.append(time.perf_counter() - t)
                    net.append(lo_bytes() - before)
                    assert len(r.ranks) == a.ranks and not r.unread
                added = c.added_kb()
            finally:
                c.close()
            med = statistics.median(times)
            results[n] = med
            print("%s, %d worker(s): median %.2f s of %d runs (%s), %.2f ranks/s; each worker "
                  "added %s MB (%.2f x one rank's table); the network carried %.2f MB a run "
                  "(%.3f%% of the traces)"
                  % (rules, n, med, a.repeat, " ".join("%.2f" % x for x in times),
                     a.ranks / med, "/".join("%.0f" % (k / 1024) for k in added),
                     max(added) * 1024 / table, statistics.median(net) / 1e6,
                     100.0 * statistics.median(net) / trace_bytes))
        print("%s: two workers against one: %.2fx the throughput" % (rules, results[1] / results[2]))

if __name__ == "__main__":
    main()
