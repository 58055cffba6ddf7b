"""tracemodel.hta's ranks on a Dask cluster (``TraceAnalysis(..., client=client)``): the same
methods as the C++ core's ``HtaTrace`` over all ranks, each rank read and analysed on a worker
by a ``HtaTrace`` of that rank alone, its answers gathered here.

A first pass reads every rank once for what the ranks decide together: whether HTA's last step
is dropped (by the steps of all ranks), the first time of all ranks (HTA's alignment) and the
symbol table. Each method then has every rank it needs read again on the workers, with those
decisions given: no worker keeps a rank between calls, so a worker's memory is the ranks it is
reading, and only the answers travel (frames only where a method needs a rank's frame)."""

import numpy as np

from .. import TraceError, _core
from ..cluster import _map


def _handle(item, place, include_last, filter_steps, drop=None, min_ts=None):
    given, path = item
    h = _core.HtaTrace([(given, path)], include_last, filter_steps, drop, place)
    if min_ts is not None:
        h.min_ts = min_ts
    return h


def _variant(h):
    """What the ranks decide together, from one rank read one way."""
    return {"rows": h.rows, "min_ts": h.min_ts, "symbols": list(h.symbols()),
            "steps": list(h.steps())}


def _header(item, place, include_last, filter_steps):
    """One rank's part of the first pass (on a worker): its rank, step names and repairs, and
    the rest both ways while its own steps leave the last step's fate open."""
    h = _handle(item, place, include_last, filter_steps)
    names = list(h.step_names)
    out = {"rank": h.ranks[0], "step_names": names, "repairs": h.repairs(), "variants": {}}
    certain = not filter_steps or len(names) >= 2
    out["variants"][bool(filter_steps and len(names) >= 2)] = _variant(h)
    if not certain:  # (another rank's steps may still drop it: read it that way too)
        out["variants"][True] = _variant(_handle(item, place, include_last, filter_steps, True))
    return out


def _call(item, place, include_last, filter_steps, drop, min_ts, calls):
    """The answers of ``calls`` ((method, args) pairs) on one rank (on a worker)."""
    h = _handle(item, place, include_last, filter_steps, drop, min_ts)
    return [getattr(h, name)(*args) for name, args in calls]


def _cat(parts):
    """Columns of several ranks, one after the other: arrays joined, categoricals' codes mapped
    into one table of texts, lists joined."""
    if not parts:
        return {}
    out = {}
    for name in parts[0]:
        cols = [p[name] for p in parts]
        if isinstance(cols[0], tuple):  # (codes, texts)
            texts, index, codes = [], {}, []
            for c, t in cols:
                remap = np.empty(len(t) + 1, dtype=np.int32)
                remap[-1] = -1
                for k, s in enumerate(t):
                    if s not in index:
                        index[s] = len(texts)
                        texts.append(s)
                    remap[k] = index[s]
                codes.append(remap[np.asarray(c, dtype=np.int64)])
            out[name] = (np.concatenate(codes).astype(np.int32), texts)
        elif isinstance(cols[0], list):
            out[name] = [x for c in cols for x in c]
        else:
            out[name] = np.concatenate([np.asarray(c) for c in cols])
    return out


class ClusterHta:
    """``HtaTrace``'s methods over the ranks of ``files`` ((rank or -1, path) pairs), read on
    the cluster of ``client``. ``unread``: the files that failed, with their reasons."""

    def __init__(self, files, include_last_step, filter_steps, client):
        self._client = client
        self._opts = (bool(include_last_step), bool(filter_steps))
        headers, errors = _map(_header, files, self._opts, client)
        self.unread = [(path, e) for (_, path), e in zip(files, errors) if e is not None]
        seen = {}
        for place, (item, hd) in enumerate(zip(files, headers)):
            if hd is None:
                continue
            if hd["rank"] in seen:
                other = seen[hd["rank"]][1][1]
                raise TraceError("two files of rank %d: %s and %s" % (hd["rank"], other, item[1]),
                                 item[1])
            seen[hd["rank"]] = (place, item, hd)
        if not seen:
            raise TraceError("no rank could be read: " + "; ".join(
                "%s (%s)" % u for u in self.unread))
        self.ranks = sorted(seen)
        self._where = {r: seen[r][:2] for r in self.ranks}
        self.paths = [(r, seen[r][1][1]) for r in self.ranks]
        names = set()
        for r in self.ranks:
            names.update(seen[r][2]["step_names"])
        self._drop = bool(filter_steps) and len(names) >= 2
        chosen = [seen[r][2]["variants"][self._drop] for r in self.ranks]
        starts = [v["min_ts"] for v in chosen if v["rows"] > 0]
        self.min_ts = min(starts) if starts else 0
        self._symbols, self._index = [], {}
        for v in chosen:
            for s in v["symbols"]:
                if s not in self._index:
                    self._index[s] = len(self._symbols)
                    self._symbols.append(s)
        self._steps = sorted({s for v in chosen for s in v["steps"]})
        self._repairs = {}
        for r in self.ranks:
            for kind, n in seen[r][2]["repairs"].items():
                self._repairs[kind] = self._repairs.get(kind, 0) + n
        self._file_ids = {}

    # ---- the ranks' answers -----------------------------------------------------------------

    def _each(self, want, calls):
        """[(rank, answers)] of the ranks in ``want`` (None: all), in rank order."""
        ranks = [r for r in self.ranks if want is None or r in list(want)]
        items = [self._where[r][1] for r in ranks]
        places = [self._where[r][0] for r in ranks]
        results, errors = _map(_call_at, [(places[k], item) for k, item in enumerate(items)],
                               self._opts + (self._drop, self.min_ts, calls), self._client)
        for (r, item), e in zip(zip(ranks, items), errors):
            if e is not None:
                raise TraceError("rank %d on the cluster: %s" % (r, e), item[1])
        return list(zip(ranks, results))

    def _one(self, rank, calls):
        if rank not in self._where:
            raise ValueError("no rank %d in the trace" % rank)
        return self._each([rank], calls)[0][1]

    def repairs(self):
        return dict(self._repairs)

    def symbols(self):
        return list(self._symbols)

    def steps(self):
        return list(self._steps)

    def temporal(self, want, exact):
        return _cat([a[0] for _, a in self._each(want, [("temporal", (None, exact))])])

    def idle(self, want, threshold, exact):
        return _cat([a[0] for _, a in self._each(want, [("idle", (None, threshold, exact))])])

    def overlap(self, exact):
        return _cat([a[0] for _, a in self._each(None, [("overlap", (exact,))])])

    def annotations(self, on_gpu, top, ratio, exact, allow):
        call = ("annotations", (on_gpu, top, ratio, exact, allow))
        return _cat([a[0] for _, a in self._each(None, [call])])

    def kernels(self, top, ratio, include_memory, exact):
        found = self._each(None, [("kernels", (top, ratio, include_memory, exact)),
                                  ("class_sets", (include_memory, exact))])
        times, seen = [0] * 8, 0
        for _, (_, sets) in found:
            for t, s in sets:
                times = [a + b for a, b in zip(times, t)]
                seen |= s
        types = _core.kernel_types(times, seen, exact)
        return types, _cat([k[1] for _, (k, _) in found])

    def launches(self, want, include_memory, exact):
        out = {}
        for _, (d,) in self._each(want, [("launches", (None, include_memory, exact))]):
            out.update(d)
        return out

    def queues(self, want, full, exact):
        found = self._each(want, [("queues", (None, full, exact))])
        return (_cat([a[0][0] for _, a in found]), _cat([a[0][1] for _, a in found]))

    def bandwidth(self, want, exact):
        found = self._each(want, [("bandwidth", (None, exact))])
        return (_cat([a[0][0] for _, a in found]), _cat([a[0][1] for _, a in found]))

    def frame(self, rank):
        cols, symbols, ids = self._one(rank, [("frame", (rank,)), ("symbols", ()),
                                              ("has_file_ids", (rank,))])
        to_global = np.asarray([self._index[s] for s in symbols] or [0], dtype=np.int64)
        for name in ("name", "cat"):
            cols[name] = to_global[np.asarray(cols[name], dtype=np.int64)]
        self._file_ids[rank] = ids
        return cols

    def has_file_ids(self, rank):
        if rank not in self._file_ids:
            self._file_ids[rank] = self._one(rank, [("has_file_ids", (rank,))])[0]
        return self._file_ids[rank]

    def op_totals(self, rank, iteration, device, short_names):
        return self._one(rank, [("op_totals", (rank, iteration, device, short_names))])[0]

    def critical_path(self, rank, annotation, instance):
        return self._one(rank, [("critical_path", (rank, annotation, instance))])[0]

    def kernel_sequences(self, rank, op_name, min_len):
        return self._one(rank, [("kernel_sequences", (rank, op_name, min_len))])[0]

    def write_marked(self, rank, path, key, marks):
        return self._one(rank, [("write_marked", (rank, path, key, marks))])[0]

    def write_critical_path_overlay(self, rank, annotation, instance, path):
        call = ("write_critical_path_overlay", (rank, annotation, instance, path))
        return self._one(rank, [call])[0]

    def straggler_rows(self, steps):
        """{rank: _stragglers.rank_rows(...)}, each made on a worker, names as global ids."""
        ranks = self.ranks
        placed = [self._where[r] for r in ranks]
        results, errors = _map(_straggler_rows, placed,
                               self._opts + (self._drop, self.min_ts, list(steps)), self._client)
        out = {}
        for r, (_, item), found, e in zip(ranks, placed, results, errors):
            if e is not None:
                raise TraceError("rank %d on the cluster: %s" % (r, e), item[1])
            rows, symbols = found
            if rows is not None:
                to_global = np.asarray([self._index[s] for s in symbols] or [0], dtype=np.int64)
                rows[2]["name"] = to_global[np.asarray(rows[2]["name"], dtype=np.int64)]
            out[r] = rows
        return out

    def with_counters(self, want, suffix, queue, bw):
        found = self._each(want, [("with_counters", (None, suffix, queue, bw))])
        return [p for _, (paths,) in found for p in paths]


def _call_at(placed, _k, include_last, filter_steps, drop, min_ts, calls):
    """``_call`` on ``placed`` ((the file's place in the whole list, (rank, path)))."""
    place, item = placed
    return _call(item, place, include_last, filter_steps, drop, min_ts, calls)


def _straggler_rows(placed, _k, include_last, filter_steps, drop, min_ts, steps):
    """One rank's rows for the straggler analysis (on a worker), with its symbols."""
    import pandas as pd
    from ._stragglers import rank_rows
    place, item = placed
    h = _handle(item, place, include_last, filter_steps, drop, min_ts)
    symbols = list(h.symbols())
    return rank_rows(pd.DataFrame(h.frame(h.ranks[0])), symbols, steps), symbols
