"""The trace object of tracemodel.hta (``TraceAnalysis.t``): the ranks read once by the C++ core,
their frames as HTA's DataFrames on request, names as ids of one symbol table."""

import glob
import os
import warnings

import pandas as pd

from .. import RankWarning, _check_path, _warn_repairs
from .. import _core


class TraceSymbolTable:
    """Names and categories as ids, as HTA's symbol table: ``sym_table`` (id -> text) and
    ``sym_index`` (text -> id)."""

    def __init__(self):
        self.sym_table = []
        self.sym_index = {}

    def get_sym_table(self):
        return self.sym_table

    def get_sym_id_map(self):
        return self.sym_index

    def add_symbols(self, symbols):
        for s in symbols:
            if s not in self.sym_index:
                self.sym_index[s] = len(self.sym_table)
                self.sym_table.append(s)

    def add_symbols_to_trace_df(self, df, col="name"):
        """Adds ``s_<col>`` with the texts of the ids in ``col``."""
        table = self.sym_table
        df["s_" + col] = [table[i] if 0 <= i < len(table) else "" for i in df[col]]
        return df




def trace_files_of(trace_dir):
    """The files of a folder as HTA lists them: every ``.json`` and ``.gz`` file, not recursive."""
    if not os.path.isdir(trace_dir):
        _check_path(trace_dir)
        raise NotADirectoryError(trace_dir)
    files = sorted(f for f in glob.glob(os.path.join(trace_dir, "*"))
                   if os.path.isfile(f) and (f.endswith(".json") or f.endswith(".gz")))
    if not files:
        raise ValueError("no trace files (.json, .gz) in " + trace_dir)
    return files


class Trace:
    """Ranks of one run, read once: ``traces`` by rank (frames made on request), ``trace_files``,
    ``symbol_table``, ``min_ts``. With ``client`` (a ``dask.distributed.Client``), the ranks are
    read on its workers (``unread``: the files that failed, with their reasons)."""

    def __init__(self, trace_files=None, trace_dir=None, include_last_profiler_step=False,
                 filter_steps=True, client=None):
        if trace_files:
            files = [(int(rank), _check_path(path)) for rank, path in trace_files.items()]
        else:
            files = [(-1, path) for path in trace_files_of(trace_dir)]
        self.trace_path = trace_dir
        self.unread = []
        if client is None:
            self._h = _core.HtaTrace(files, bool(include_last_profiler_step), bool(filter_steps))
        else:  # each rank read on a worker (docs/cluster.md)
            from ._cluster import ClusterHta
            self._h = ClusterHta(files, include_last_profiler_step, filter_steps, client)
            self.unread = self._h.unread
            if self.unread:
                warnings.warn(RankWarning("%d of %d ranks unread: %s" % (
                    len(self.unread), len(files),
                    "; ".join("%s (%s)" % u for u in self.unread)), self.unread), stacklevel=4)
        self.trace_files = dict(self._h.paths)
        self.min_ts = self._h.min_ts
        self.symbol_table = TraceSymbolTable()
        self.symbol_table.add_symbols(self._h.symbols())
        self._frames = {}
        _warn_repairs(trace_dir or ", ".join(p for _, p in files), self._h.repairs(),
                      stacklevel=4)

    @property
    def traces(self):
        return {rank: self.get_trace(rank) for rank in self.get_ranks()}

    def get_ranks(self):
        return list(self._h.ranks)

    def is_trace_loaded(self, rank):
        return rank in self._h.ranks

    def get_trace(self, rank):
        """The rank's frame as HTA's: one row per complete event in file order (HTA's filter
        applied), names and categories as symbol ids, times in us from the first event of all
        ranks, the event's number as index."""
        if rank not in self._frames:
            cols = self._h.frame(int(rank))
            if not self._h.has_file_ids(int(rank)):
                warnings.warn("%s: its events cannot be matched to the file's traceEvents array; "
                              "event ids are tracemodel's table indices, not HTA's"
                              % self.trace_files.get(rank, rank), stacklevel=3)
            df = pd.DataFrame(cols).set_index("index", drop=False)
            df.index.name = None
            self._frames[rank] = df
        return self._frames[rank]

    def get_all_traces(self):
        return self.traces

    def get_raw_trace_for_one_rank(self, rank=0):
        import gzip
        import json
        path = self.trace_files[rank]
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            return json.load(f)
