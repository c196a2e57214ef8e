"""``rackwise pipeline generate``: a synthetic fleet in both input forms (Parquet and JSON).

:mod:`.fleet` writes the fleet (:func:`generate_fleet`); its private helpers draw the clusters
(``_synthetic``) and write a cluster's JSON form (``_json_form``).
"""

from __future__ import annotations

from rackwise.pipeline.generate.fleet import (
    BROKERS_ARROW,
    JSON_MAX_CLUSTERS,
    JSON_MAX_REPLICAS,
    REPLICAS_ARROW,
    FleetSummary,
    broker_rows,
    chunk_table,
    generate_fleet,
)

__all__ = [
    "BROKERS_ARROW",
    "JSON_MAX_CLUSTERS",
    "JSON_MAX_REPLICAS",
    "REPLICAS_ARROW",
    "FleetSummary",
    "broker_rows",
    "chunk_table",
    "generate_fleet",
]
