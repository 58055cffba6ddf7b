"""Holistic Trace Analysis's API, computed by tracemodel: change ``from hta.trace_analysis import
TraceAnalysis`` to ``from tracemodel.hta import TraceAnalysis`` (or
``tracemodel.hta.trace_analysis``), and likewise for ``TraceDiff`` and ``LabeledTrace``."""

from .critical_path import CPGraph
from .trace_analysis import TimeSeriesTypes, TraceAnalysis
from .trace_diff import DeviceType, LabeledTrace, TraceDiff

__all__ = ["TraceAnalysis", "TraceDiff", "LabeledTrace", "DeviceType", "TimeSeriesTypes",
           "CPGraph"]
