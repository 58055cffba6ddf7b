"""``python3 -m tracemodel parts ...``: the cluster's side of ``tracemodel gpu --scheduler-file``
(tracemodel.cluster.main)."""

import sys

from .cluster import main

sys.exit(main())
