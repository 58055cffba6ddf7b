"""The errors and warnings of tracemodel (imported by the C++ core at load)."""


class TraceError(ValueError):
    """A trace that cannot be read: ``path`` names the file, ``offset`` the byte (or None)."""

    def __init__(self, message, path=None, offset=-1):
        self.message = message
        self.path = path
        self.offset = None if offset is None or offset < 0 else int(offset)
        where = path or "input"
        if self.offset is not None:
            where += " at byte %d" % self.offset
        super().__init__("%s: %s" % (where, message))

    def __reduce__(self):  # (sent from a cluster's worker whole: its file and offset kept)
        return type(self), (self.message, self.path, -1 if self.offset is None else self.offset)


class RepairWarning(UserWarning):
    """Reading repaired something in a trace; ``repairs`` counts each kind."""

    def __init__(self, message, repairs=None):
        super().__init__(message)
        self.repairs = dict(repairs or {})


class RankWarning(UserWarning):
    """Ranks of a run could not be read; ``unread`` lists each (file, reason)."""

    def __init__(self, message, unread=None):
        super().__init__(message)
        self.unread = list(unread or [])
