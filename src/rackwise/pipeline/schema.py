"""The pipeline's tables: one schema each, the contract between ingestion, audit and planning.

Every input form (a broker list, reassignment JSON, either ``kafka-log-dirs`` shape, a Parquet
fleet, a generated fleet) is read into these three tables; rows that cannot be are written to
the ``rejected`` table with a reason, never dropped.

brokers
    ``cluster_id``, ``broker_id``, ``rack``: the broker's rack as a path (``/dc1/r1``; a
    one-level name ``r1`` is read as ``/r1``), ``null`` for a broker without a rack.
log_dirs
    ``cluster_id``, ``broker_id``, ``log_dir`` (absolute path), ``total_bytes`` (capacity in
    bytes, ``null`` when unknown), ``is_live`` (``false`` for a failed directory).
replicas
    ``cluster_id``, ``topic``, ``partition``, ``replica_index`` (position in the replica list; 0 is
    the preferred leader), ``broker_id``, ``log_dir`` (``null`` when unknown), ``size_bytes``
    (bytes on disk, ``null`` when unknown).
rejected
    ``cluster_id``, ``source`` (the file or dataset), ``record`` (the offending row as JSON),
    ``reason`` (one line naming the offending value).
"""

from __future__ import annotations

from typing import Final

DEFAULT_CLUSTER_ID: Final = "default"

BROKERS_DDL: Final = "cluster_id string, broker_id int, rack string"
LOG_DIRS_DDL: Final = (
    "cluster_id string, broker_id int, log_dir string, total_bytes long, is_live boolean"
)
REPLICAS_DDL: Final = (
    "cluster_id string, topic string, partition int, replica_index int, broker_id int, "
    "log_dir string, size_bytes long"
)
REJECTED_DDL: Final = "cluster_id string, source string, record string, reason string"

BROKERS_COLUMNS: Final = ("cluster_id", "broker_id", "rack")
LOG_DIRS_COLUMNS: Final = ("cluster_id", "broker_id", "log_dir", "total_bytes", "is_live")
REPLICAS_COLUMNS: Final = (
    "cluster_id",
    "topic",
    "partition",
    "replica_index",
    "broker_id",
    "log_dir",
    "size_bytes",
)
REJECTED_COLUMNS: Final = ("cluster_id", "source", "record", "reason")
