"""DataFrames of the C++ core's columns as HTA builds its frames."""

import numpy as np
import pandas as pd


def _plain(columns):
    """A DataFrame of the core's columns, texts as Python strings (HTA's object columns)."""
    data = {}
    for name, col in columns.items():
        if isinstance(col, tuple):
            codes, texts = col
            texts = np.asarray(texts + [None], dtype=object)
            data[name] = texts[codes]
        else:
            data[name] = col
    return pd.DataFrame(data)
