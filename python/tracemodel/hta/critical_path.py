"""HTA's critical path result (``CPGraph``), from tracemodel's C++ graph under HTA's rules."""

import numpy as np
import pandas as pd

from ._frames import _plain

_TYPES = {
    "critical_path_operator": "OPERATOR_KERNEL",
    "critical_path_dependency": "DEPENDENCY",
    "critical_path_kernel_launch_delay": "KERNEL_LAUNCH_DELAY",
    "critical_path_kernel_kernel_delay": "KERNEL_KERNEL_DELAY",
    "critical_path_sync_dependency": "SYNC_DEPENDENCY",
}


class CPGraph:
    """The graph and its critical path: ``critical_path_events_set``,
    ``critical_path_edges_set`` (source and target events, type), and the breakdown of the
    path's time per edge (``get_critical_path_breakdown``) and per cause (``summary``)."""

    def __init__(self, t, rank, result, annotation="", instance_id=0):
        self.t = t
        self.rank = rank
        self.annotation = annotation
        self.instance_id = instance_id
        self.edges = _plain(result["edges"])
        self.path = list(result["path"])
        self.node_count = int(result["nodes"])
        self.length = float(result["length"])
        self.critical_path_events_set = set(int(e) for e in result["events"])
        crit = self.edges.iloc[self.path] if self.path else self.edges.iloc[0:0]
        self.critical_path_edges_set = set(
            (int(s), int(d), _TYPES.get(ty, ty))
            for s, d, ty in zip(crit["source"], crit["target"], crit["type"]))
        self._breakdown = None

    def get_critical_path_breakdown(self):
        """One row per critical edge in path order: event_idx (the event its time belongs to,
        NaN for other edges), duration (us), type, s_name, cat, pid, tid, stream, bound_by."""
        if self._breakdown is not None:
            return self._breakdown
        frame = self.t.get_trace(self.rank)
        table = self.t.symbol_table.sym_table
        crit = self.edges.iloc[self.path] if self.path else self.edges.iloc[0:0]
        by_event = frame.set_index("index")
        rows = []
        for _, e in crit.iterrows():
            ty = _TYPES.get(e["type"], e["type"])
            ev = int(e["event"])
            row = {"event_idx": float(ev) if ev >= 0 and ty == "OPERATOR_KERNEL" else np.nan,
                   "duration": int(e["weight"]), "type": ty}
            if ev >= 0 and ev in by_event.index and ty == "OPERATOR_KERNEL":
                r = by_event.loc[ev]
                name = table[int(r["name"])]
                row.update(s_name=name, cat=table[int(r["cat"])], pid=int(r["pid"]),
                           tid=int(r["tid"]), stream=int(r["stream"]))
            else:
                row.update(s_name=None, cat=None, pid=np.nan, tid=np.nan, stream=np.nan)
            row["bound_by"] = e["bound_by"]  # (the C++ path's cause of the edge)
            rows.append(row)
        cols = ["event_idx", "duration", "type", "s_name", "cat", "pid", "tid", "stream",
                "bound_by"]
        self._breakdown = pd.DataFrame(rows, columns=cols)
        return self._breakdown

    def summary(self):
        """Percent of the critical path's time per cause (``bound_by``)."""
        b = self.get_critical_path_breakdown()
        total = b["duration"].sum()
        s = b.groupby("bound_by")["duration"].sum()
        return s * 100.0 / total if total else s.astype("float64")
