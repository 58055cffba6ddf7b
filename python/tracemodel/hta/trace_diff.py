"""Holistic Trace Analysis's trace diff (``LabeledTrace``, ``TraceDiff``), computed by
tracemodel's C++ core: ops counted and timed per name in one iteration of one rank, compared
between a control and a test run."""

import enum
import uuid

import pandas as pd

from .. import _core
from ._trace import Trace


class DeviceType(enum.Enum):
    CPU = "cpu"
    GPU = "gpu"
    ALL = "all"


class LabeledTrace:
    """A run with a label (HTA's LabeledTrace): its ranks read once, without HTA's last-step
    filter; ``ranks()``, ``iterations()``, ``extract_ops`` and ``get_ops_summary``."""

    def __init__(self, label="", t=None, trace_dir=None, trace_files=None, client=None):
        self.label = label or "t" + uuid.uuid4().hex[:8]
        if t is None:
            t = Trace(trace_files=trace_files, trace_dir=trace_dir, filter_steps=False,
                      client=client)
        self.t = t
        self._iterations = list(t._h.steps())

    def ranks(self):
        return self.t.get_ranks()

    def iterations(self):
        return list(self._iterations)

    def _rank_and_iteration(self, rank, iteration):
        rank = self.ranks()[0] if rank is None else int(rank)
        if iteration is None and self._iterations:
            iteration = self._iterations[0]
        return rank, iteration

    def extract_ops(self, rank=None, iteration=None, device_type=DeviceType.ALL):
        """The rank's events of one iteration (default: the first rank and iteration), those
        of the host (stream -1), the device or both."""
        rank, iteration = self._rank_and_iteration(rank, iteration)
        df = self.t.get_trace(rank)
        ops = df[df["iteration"] == iteration]
        device = DeviceType(device_type)
        if device == DeviceType.CPU:
            ops = ops[ops["stream"] == -1]
        elif device == DeviceType.GPU:
            ops = ops[ops["stream"] != -1]
        return ops.copy()

    def get_ops_summary(self, ops_df):
        """Counts and total duration (us) per category and name of ``extract_ops``' rows."""
        table = self.t.symbol_table.sym_table
        g = ops_df.groupby(["cat", "name"])["dur"].agg(["count", "sum"]).reset_index()
        names = [table[i] for i in g["name"]]
        return pd.DataFrame({
            "cat": [table[i] for i in g["cat"]],
            "name": names,
            "short_name": [_core.short_name(n) for n in names],
            "counts": g["count"].astype("int64"),
            "total_duration": g["sum"].astype("int64"),
            "cat_id": g["cat"],
            "name_id": g["name"],
        })

    def _totals(self, rank, iteration, device_type, short_names):
        rank, iteration = self._rank_and_iteration(rank, iteration)
        d = self.t._h.op_totals(rank, iteration, DeviceType(device_type).value, short_names)
        return pd.DataFrame({"counts": d["counts"], "total_duration": d["total_duration"]},
                            index=pd.Index(d["name"], name="name", dtype=object))


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

    @classmethod
    def visualize_counts_diff(cls, df, show_image=True, export_file_path=""):
        """A bar chart of the counts' change per name (plotly; shown in a notebook, written to
        ``export_file_path`` when given as .html or an image)."""
        return _diff_figure(df, "diff_counts", show_image, export_file_path)

    @classmethod
    def visualize_duration_diff(cls, df, show_image=True, export_file_path=""):
        """The same for the total durations."""
        return _diff_figure(df, "diff_duration", show_image, export_file_path)


def _diff_figure(df, column, show_image, export_file_path):
    from ._plots import _in_notebook
    try:
        import plotly.express as px
    except ImportError:
        return None
    if not show_image and not export_file_path:
        return None
    changed = df[df[column] != 0].reset_index()
    fig = px.bar(changed, x=changed.columns[0], y=column, title=column)
    if export_file_path:
        if export_file_path.endswith(".html"):
            fig.write_html(export_file_path)
        else:
            fig.write_image(export_file_path)
    if show_image and _in_notebook():
        fig.show()
    return None
