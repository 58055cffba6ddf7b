"""tracemodel in Python: traces read by the C++ library, their events and analyses as pandas
DataFrames.

    import tracemodel
    t = tracemodel.read("trace.json.gz")     # Chrome JSON, .json.gz or Perfetto's .pftrace
    t.events()                               # one row per event
    t.key_averages()                         # PyTorch's key averages
    t.critical_path().summary()

``tracemodel.hta`` holds Holistic Trace Analysis's classes (TraceAnalysis, TraceDiff,
LabeledTrace) with its methods, parameters and result types.
"""

import errno
import os
import warnings

import pandas as pd

from ._errors import RankWarning, RepairWarning, TraceError
from . import _core

__all__ = ["read", "diff", "gpu_report", "Trace", "CriticalPath", "GpuReport", "TraceError",
           "RepairWarning", "RankWarning"]
__version__ = "0.1.0"


def _frame(columns, index=None):
    """A DataFrame from the core's columns: arrays, and (codes, texts) pairs as categoricals."""
    data = {}
    for name, col in columns.items():
        if isinstance(col, tuple):
            codes, texts = col
            data[name] = pd.Categorical.from_codes(codes, categories=pd.Index(texts, dtype=object))
        else:
            data[name] = col
    return pd.DataFrame(data, index=index, copy=False)  # (no copy into one block)


def _check_path(path):
    path = os.fspath(path)
    if path != "-" and not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    return path


def _warn_repairs(what, repairs, stacklevel=3):
    if repairs:
        text = ", ".join("%d %s" % (n, kind) for kind, n in repairs.items())
        warnings.warn(RepairWarning("%s: repaired %d: %s" % (what, sum(repairs.values()), text),
                                    repairs), stacklevel=stacklevel)


class CriticalPath:
    """The longest chain of dependent host ops, launches and device work of a trace.

    ``edges`` (a DataFrame: source and target events, weight, type, the event charged, whether
    the edge is on the path), ``events`` (the events on the path, in order), ``length`` and
    ``bound_by`` (time per cause), in ns."""

    def __init__(self, result):
        self.edges = _frame(result["edges"])
        self.events = list(result["events"])
        self.length = result["length"]
        self.bound_by = dict(result["bound_by"])
        self.acyclic = bool(result["acyclic"])

    def summary(self):
        """Percent of the path's length per cause (a Series)."""
        total = sum(self.bound_by.values())
        s = pd.Series({k: (100.0 * v / total if total else 0.0) for k, v in self.bound_by.items()},
                      dtype="float64")
        s.index.name = "bound_by"
        return s


class Trace:
    """A trace read and analysed: the call tree built, forward and backward ops and launches
    linked. Events are numbered by their place in ``events()``."""

    def __init__(self, path):
        self._t = _core.Trace(path)
        self.path = path
        self.repairs = self._t.repairs()
        self._events = None

    def __len__(self):
        return len(self._t)

    def __repr__(self):
        return "<tracemodel.Trace %s: %d events>" % (self.path, len(self))

    def events(self):
        """One row per event: name, category, kind, thread, pid, tid, ts and dur (ns), parent,
        correlation, external_id, stream, device, input_shapes. Texts are categoricals; -1
        stands for none in number columns."""
        if self._events is None:
            self._events = _frame(self._t.event_columns())
            self._events.index.name = "event"
        return self._events

    def tree(self):
        """The call tree in depth-first order: event, depth, and the event's columns."""
        cols = self._t.tree_columns()
        ev = self.events()
        order = cols["event"]
        out = ev.iloc[order][["name", "thread", "ts", "dur", "parent"]].copy()
        out.insert(0, "depth", cols["depth"])
        out.index.name = "event"
        return out

    def links(self):
        """Forward op to backward op and launch to device activity links: source, target,
        kind, id."""
        return _frame(self._t.link_columns())

    def key_averages(self, group_by="name", sort_by="total"):
        """PyTorch's key averages (group_by: name, shapes or stack; sort_by: total, self, count,
        device_total or self_device), times in ns, memory in bytes."""
        return _frame(_core.key_averages(self._t, group_by, sort_by))

    def patterns(self, framework_prefix="torch/"):
        """PyTorch's anti-patterns: one row per match (pattern, event, name, location); the
        ``attrs["summary"]`` of the frame lists each pattern's description, matches and why it
        was skipped when it was."""
        cols, summary = _core.patterns(self._t, framework_prefix)
        df = _frame(cols)
        df.attrs["summary"] = [
            {"pattern": p, "description": d, "skipped": s, "matches": n, "reports": list(r)}
            for p, d, s, n, r in summary]
        return df

    def critical_path(self, annotation="", instance=0, hta=False):
        """The critical path of the window of the ``instance``-th event whose name contains
        ``annotation`` (the whole trace when empty); ``hta=True``: HTA's rules."""
        r = _core.critical_path(self._t, annotation, int(instance), bool(hta))
        if annotation and r["window"] is None:
            raise ValueError("no event named like %r (occurrence %d)" % (annotation, instance))
        return CriticalPath(r)

    def write(self, path):
        """Writes the trace: Perfetto's format for .pftrace(.gz), else Chrome JSON (.json.gz
        compressed)."""
        self._t.write(os.fspath(path))


def read(path):
    """Reads a trace (Chrome JSON, .json.gz, or Perfetto's .pftrace), builds its tree and links.
    A missing file raises FileNotFoundError, a bad one TraceError; repairs are warnings."""
    path = _check_path(path)
    t = Trace(path)
    _warn_repairs(path, t.repairs)
    return t


def diff(control, test, control_iteration=None, test_iteration=None, device="all",
         short_names=False):
    """Counts and total durations per name of two traces, and their change (test - control);
    iterations select ``ProfilerStep#N``."""
    return _frame(_core.diff(control._t, test._t, control_iteration, test_iteration, device,
                             short_names))


from .cluster import GpuReport, gpu_report  # noqa: E402 (it uses the names above)
