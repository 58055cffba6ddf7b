"""Holistic Trace Analysis's trace diff (``LabeledTrace``, ``TraceDiff``), computed by
tracemodel's C++ core: ops counted and timed per name in one iteration of one rank, compared
between a control and a test run."""

import enum

import pandas as pd

from ._trace import Trace


class DeviceType(enum.Enum):
    CPU = "cpu"
    GPU = "gpu"
    ALL = "all"


class LabeledTrace:
    """A run with a label: its ranks read once, HTA's LabeledTrace (no step filter)."""

    def __init__(self, label="", t=None, trace_dir=None, trace_files=None):
        self.label = label
        if t is None:
            t = Trace(trace_files=trace_files, trace_dir=trace_dir, filter_steps=False)
        self.t = t
        self.iterations = list(t._h.steps())

    def get_iterations(self, rank=None):
        return list(self.iterations)

    def get_ranks(self):
        return self.t.get_ranks()

    def _totals(self, rank, iteration, device_type, short_names):
        rank = self.get_ranks()[0] if rank is None else int(rank)
        if iteration is None and self.iterations:
            iteration = self.iterations[0]
        d = self.t._h.op_totals(rank, iteration, DeviceType(device_type).value, short_names)
        return pd.DataFrame({"counts": d["counts"], "total_duration": d["total_duration"]},
                            index=pd.Index(d["name"], name="name", dtype=object))

    def get_ops_summary(self, rank=None, iteration=None, device_type=DeviceType.ALL,
                        use_short_name=False):
        """Counts and total duration (us) per name."""
        return self._totals(rank, iteration, device_type, use_short_name).reset_index()


class TraceDiff:
    """Compares two labeled traces, per name of op and kernel."""

    @classmethod
    def compare_traces(cls, control, test, control_rank=None, test_rank=None,
                       control_iteration=None, test_iteration=None, device_type=DeviceType.ALL,
                       use_short_name=False):
        a = control._totals(control_rank, control_iteration, device_type, use_short_name)
        b = test._totals(test_rank, test_iteration, device_type, use_short_name)
        cl = control.label or "control"
        tl = test.label or "test"
        if cl == tl:
            cl, tl = cl + "_control", tl + "_test"
        df = pd.merge(a.add_prefix(cl + "_"), b.add_prefix(tl + "_"), how="outer",
                      left_index=True, right_index=True).fillna(0)
        df["diff_counts"] = df[tl + "_counts"] - df[cl + "_counts"]
        df["diff_duration"] = df[tl + "_total_duration"] - df[cl + "_total_duration"]
        df["counts_change_categories"] = [
            "+" if d > 0 else "-" if d < 0 else "=" for d in df["diff_counts"]]
        return df

    @classmethod
    def ops_diff(cls, control, test, control_rank=None, test_rank=None, control_iteration=None,
                 test_iteration=None, device_type=DeviceType.ALL):
        df = cls.compare_traces(control, test, control_rank, test_rank, control_iteration,
                                test_iteration, device_type)
        c, t = df.iloc[:, 0], df.iloc[:, 2]
        d = df["diff_counts"]
        return {
            "added": list(df.index[(c == 0) & (t > 0)]),
            "deleted": list(df.index[(c > 0) & (t == 0)]),
            "increased": list(df.index[(c > 0) & (d > 0)]),
            "decreased": list(df.index[(t > 0) & (d < 0)]),
            "unchanged": list(df.index[(t > 0) & (d == 0)]),
        }
