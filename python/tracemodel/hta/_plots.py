"""What HTA draws with visualize=True, with plotly (Debian's python3-plotly) when it is there.
Figures are shown in a notebook (or with an explicit renderer); elsewhere nothing is drawn."""


def _in_notebook():
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and shell.__class__.__name__ == "ZMQInteractiveShell"


def figure(kind, data, extra=None):
    """The plotly figure of one analysis, or None without plotly."""
    try:
        import plotly.express as px
    except ImportError:
        return None
    if kind == "temporal":
        df = data.melt(id_vars="rank", value_vars=["idle_time_pctg", "compute_time_pctg",
                                                   "non_compute_time_pctg"])
        return px.bar(df, x="rank", y="value", color="variable", title="Temporal breakdown",
                      labels={"value": "percent of time"})
    if kind == "overlap":
        return px.bar(data, x="rank", y="comp_comm_overlap_pctg",
                      title="Computation-communication overlap")
    if kind == "kernels":
        types, _ = data
        return px.pie(types, values="percentage", names="kernel_type",
                      title="Time spent by kernel type")
    if kind == "annotations":
        return px.bar(data, x="name", y="sum (us)", color="rank", title="User annotations")
    if kind == "idle":
        y = "idle_time_ratio" if extra else "idle_time"
        return px.bar(data, x="stream", y=y, color="idle_category", facet_col="rank",
                      title="Idle time breakdown")
    if kind == "launches":
        rank, df, _, _ = data
        return px.scatter(df, x="cpu_duration", y="gpu_duration",
                          title="Kernel launches, rank %d" % rank)
    return None


def show(kind, data, extra=None):
    if not _in_notebook() and not (isinstance(extra, str) and extra not in ("", "notebook")):
        return None
    fig = figure(kind, data, extra)
    if fig is not None:
        fig.show(renderer=extra if isinstance(extra, str) and extra else None)
    return fig
