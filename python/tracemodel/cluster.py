"""tracemodel on a Dask cluster (docs/cluster.md): each rank's file is read and analysed on a
worker, only its results (a few kilobytes of summaries and rows) come back, and they are gathered
here into the same answers as a run in this process.

    from dask.distributed import Client
    client = Client(scheduler_file="scheduler.json")
    r = tracemodel.gpu_report(["run/"], client=client)   # r.temporal, r.kernels, r.unread ...

Files are named by path: the workers must see them at the same paths (shared storage). A worker
that dies has its ranks run again on another (Dask's scheduler does it); a rank that cannot be
read is listed in ``unread`` with its file and reason, and the other ranks' answers come back.

``python3 -m tracemodel parts`` is what ``tracemodel gpu --scheduler-file`` runs: the
parts of the ranks as bytes on its standard output, gathered by the program itself."""

import argparse
import os
import struct
import sys
import warnings

from . import _core, _frame
from ._errors import RankWarning

__all__ = ["gpu_report", "GpuReport", "map_ranks", "trace_files"]


def trace_files(paths):
    """The trace files of ``paths`` (files, or folders of one rank each), as the program lists
    them: a folder's ``.json``, ``.json.gz`` and ``.pftrace`` files, by name."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return list(_core.trace_files([os.fspath(p) for p in paths]))


def _reason(error):
    text = str(error)
    return "%s: %s" % (type(error).__name__, text) if text else type(error).__name__


def map_ranks(fn, files, *args, client=None, key=None):
    """``fn(file, place, *args)`` for each file (``place``: its place in ``files``), on the
    cluster's workers when ``client`` is given (one task per file), else here, one after the
    other. Returns (results, unread): the results in the order of ``files`` (None where a file
    failed) and the failures as (file, reason) pairs."""
    results, errors = _map(fn, files, args, client, key)
    return results, [(f, e) for f, e in zip(files, errors) if e is not None]


def _map(fn, files, args, client, key=None):
    """(results, errors), each in the order of ``files``."""
    results, errors = [None] * len(files), [None] * len(files)
    if client is None:
        for k, f in enumerate(files):
            try:
                results[k] = fn(f, k, *args)
            except Exception as e:  # (a file's failure is reported, the others go on)
                errors[k] = _reason(e)
        return results, errors
    import uuid
    prefix = key or "tracemodel-%s-%s" % (getattr(fn, "__name__", "rank"), uuid.uuid4().hex[:12])
    futures = [client.submit(fn, f, k, *args, key="%s-%d" % (prefix, k), pure=False)
               for k, f in enumerate(files)]
    try:
        for k, fut in enumerate(futures):
            try:
                results[k] = fut.result()
            except Exception as e:  # the task's own error, reported with its file
                errors[k] = _reason(e)
    finally:
        for fut in futures:
            fut.release()
    return results, errors


def _gpu_part(path, place, hta, series, threads):
    """One rank's part of a device-time report (runs on a worker)."""
    return _core.gpu_part(path, place, hta, series, threads)


def _diff_part(path, place, hta, short_names, with_gpu, threads):
    """One rank's part of a trace diff (runs on a worker)."""
    return _core.diff_part(path, place, hta, short_names, with_gpu, threads)


def _program_part(path, place, program, command, flags):
    """One rank's part made by the ``tracemodel`` program itself (runs on a worker: ``report``'s
    parts need the program's own rendering of a rank)."""
    import subprocess
    done = subprocess.run([program, command, "--place", str(place)] + list(flags) + [path],
                          capture_output=True)
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(lines[0] if lines else "%s exited with %d" % (command, done.returncode))
    return done.stdout


class GpuReport:
    """Every device-time analysis of a set of ranks (``tracemodel gpu``'s report): DataFrames
    ``temporal`` (with each rank's communication hidden behind computation), ``idle``,
    ``kernels``, ``kernel_types``, ``queues`` and ``bandwidth`` (summaries), ``gpu_annotations``,
    ``launches`` (with ``series=True``), and across ranks ``steps``, ``collectives`` (the spread
    of each) and ``stragglers``. Times are in ``unit`` ("ns"; HTA's rules: "us") but the
    spread's (ns). ``unread``: the files that failed, with their reasons."""

    _tables = ("temporal", "idle", "kernels", "kernel_types", "queues", "bandwidth",
               "gpu_annotations", "launches", "steps", "collectives", "stragglers")

    def __init__(self, columns, unread):
        for name in self._tables:
            setattr(self, name, _frame(columns[name]))
        self.unit = columns["unit"]
        self.repairs = dict(columns["repairs"])
        self.unread = list(unread)
        self.ranks = [int(r) for r in self.temporal["rank"]]

    def __repr__(self):
        return "<tracemodel.GpuReport: %d ranks, %d unread>" % (len(self.ranks), len(self.unread))


def gpu_report(paths, hta=False, client=None, series=False, threads=1):
    """Reads and analyses each rank of ``paths`` (files or folders of one rank each) as
    ``tracemodel gpu`` does (``hta=True``: HTA's rules), on the cluster of ``client`` or here.
    ``series``: keep a row per launch. ``threads``: each rank's reading and analyses (1: a
    worker's thread runs one rank)."""
    files = trace_files(paths)
    if not files:
        raise ValueError("no trace files in the paths given")
    parts, unread = map_ranks(_gpu_part, files, bool(hta), bool(series), int(threads),
                              client=client)
    parts = [p for p in parts if p is not None]
    if unread:
        warnings.warn(RankWarning("%d of %d ranks unread: %s" % (
            len(unread), len(files), "; ".join("%s (%s)" % u for u in unread)), unread),
            stacklevel=2)
    if not parts:
        raise ValueError("no rank could be read: " + "; ".join("%s (%s)" % u for u in unread))
    return GpuReport(_core.gpu_report(parts, bool(hta)), unread)


def _write_frames(out, kind, place, payload):
    out.write(kind + struct.pack("<QQ", place, len(payload)))
    out.write(payload)
    out.flush()


def main(argv=None):
    """``parts``: each file's part (``--kind gpu``: of the device-time report, ``diff``: of a
    trace diff, ``report``: of ``tracemodel report``'s page, made by ``--program``) as a frame
    on standard output: ``P`` or ``E`` (an error's
    text), then its place and length (two little-endian 64-bit numbers), then the bytes."""
    p = argparse.ArgumentParser(prog="python3 -m tracemodel")
    sub = p.add_subparsers(dest="command", required=True)
    parts = sub.add_parser("parts", help="each rank's device-time part, computed on the cluster")
    parts.add_argument("--scheduler-file", required=True)
    parts.add_argument("--kind", choices=["gpu", "diff", "report"], default="gpu")
    parts.add_argument("--program", default="tracemodel",
                       help="report: the tracemodel program, as the workers find it")
    parts.add_argument("--hta", action="store_true")
    parts.add_argument("--series", action="store_true", help="gpu: the launch rows too")
    parts.add_argument("--short-names", action="store_true", help="diff: names shortened")
    parts.add_argument("--with-gpu", action="store_true", help="diff: the gpu part too")
    parts.add_argument("--threads", type=int, default=1)
    parts.add_argument("--timeout", type=float, default=30, help="seconds to reach the scheduler")
    parts.add_argument("files", nargs="+")
    a = p.parse_args(argv)
    from dask.distributed import Client
    out = sys.stdout.buffer
    with Client(scheduler_file=a.scheduler_file, timeout=a.timeout) as client:
        if a.kind == "gpu":
            results, errors = _map(_gpu_part, a.files, (a.hta, a.series, a.threads), client)
        elif a.kind == "diff":
            results, errors = _map(_diff_part, a.files,
                                   (a.hta, a.short_names, a.with_gpu, a.threads), client)
        else:
            results, errors = _map(_program_part, a.files, (a.program, "report-part",
                                                            ["--hta"] if a.hta else []), client)
    for k, (part, error) in enumerate(zip(results, errors)):
        if part is not None:
            _write_frames(out, b"P", k, part)
        else:
            _write_frames(out, b"E", k, error.encode("utf-8", "replace"))
    return 0
