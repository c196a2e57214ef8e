"""The audit: spread violations, failure-domain exposure, load and skew, per cluster.

Two implementations of one definition (the notes of :mod:`.spark`): :mod:`.spark`, pure
``DataFrame -> DataFrame`` transforms composed by :func:`.spark.audit_tables`, with its private
transforms (``_replicas``, ``_placements``, ``_spread``, ``_domains``, ``_clusters``); and
:mod:`.local`, the same tables computed in process with NumPy (``_local_cluster``), for inputs
that fit in memory. Both build the brokers' tree with :mod:`.tree` (the pure reference's
``RackTree``), and the summary is built from their tables by :mod:`.summary`, whichever ran.
"""

from __future__ import annotations

from typing import Final

DEFAULT_MIN_INSYNC_REPLICAS: Final = 2
RESULT_TABLES: Final = ("clusters", "spread_violations", "exposure", "load", "skew")
"""The audit's output tables, in the order they are written."""
TABLE_ORDER: Final = {
    "clusters": ("cluster_id",),
    "exposure": ("cluster_id", "level", "domain"),
    "load": ("cluster_id", "level", "domain"),
    "skew": ("cluster_id", "level", "metric"),
}
"""The sort order of the small output tables (one file each); ``spread_violations`` has none."""
