"""Writes argsort.txt: keys with many ties and the order NumPy's argsort(kind="quicksort") gives
them, the answers tests/hta/numpy.cpp checks hta::numpy_argsort against. Made with Debian 12's
python3-numpy (1.24.2); run with that interpreter: /usr/bin/python3 make_argsort.py."""
import numpy as np

rng = np.random.default_rng(20261128)
sizes = [1, 2, 3, 15, 16, 17, 18, 31, 32, 33, 50, 64, 100, 257, 500, 1000, 2500]
with open("argsort.txt", "w") as out:
    out.write(f"# numpy {np.__version__}: one case a line, 'keys | order'\n")
    for n in sizes:
        for distinct in (1, 2, 5, n):
            keys = rng.integers(0, distinct, size=n, dtype=np.int64)
            order = np.argsort(keys, kind="quicksort")
            out.write(" ".join(map(str, keys)) + " | " + " ".join(map(str, order)) + "\n")
