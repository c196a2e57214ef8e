"""The failure-domain tree of every cluster, as small broadcast tables.

The brokers and log directories are metadata (thousands of rows where the replicas are
millions), so their tables are built on the driver, each cluster's tree by
:class:`rackwise.topology.RackTree` itself: the audit's tree is the pure reference's tree, not a
second implementation of it. The four tables come back as local DataFrames, whose sizes Spark
knows, so every join with them is a broadcast.

The tree: the root ``/`` (depth 0), a rack node per path prefix (``/dc1`` at depth 1,
``/dc1/r1`` at depth 2), each broker as a leaf under its own rack's node. A rack written
without a leading ``/`` is a one-level path (``rack1`` is ``/rack1``). A broker without a rack
sits directly under the root, as its own failure domain: in a cluster where no broker has a
rack the tree is flat (no rack level at all); with mixed rack information each rack-less broker
is a domain of its own beside the data centres.

Integer keys carried through the replicas instead of strings: ``cluster_key`` (clusters in id
order, from 1), ``node_id`` (the node's number in its cluster's ``RackTree``, the root 0),
``log_dir_key`` (a broker's log dirs in path order, from 1; ``UNKNOWN_LOG_DIR`` for none).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import pandas as pd

from rackwise.common import NO_BROKER
from rackwise.pipeline.schema import BROKERS_COLUMNS, LOG_DIRS_COLUMNS
from rackwise.topology import RackTree, as_rack_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CLUSTER_LEVEL: Final = "cluster"
BROKER_LEVEL: Final = "broker"
LOG_DIR_LEVEL: Final = "log_dir"
UNKNOWN_LOG_DIR: Final = 0
"""``log_dir_key`` of a replica whose log directory is not known (keys of known ones start at 1)."""

KEYS_DDL: Final = "cluster_key int, cluster_id string"
NODES_DDL: Final = (
    "cluster_key int, node_id int, path string, depth int, level string, num_brokers long, "
    "num_children long, ancestors array<string>"
)
LEAVES_DDL: Final = (
    "cluster_key int, cluster_id string, broker_id int, rack string, leaf_id int, "
    "ancestors array<string>"
)
META_DDL: Final = (
    "cluster_key int, cluster_id string, rack_levels array<string>, brokers long, "
    "brokers_without_rack long, log_dirs long, failed_log_dirs long"
)
DIRS_DDL: Final = (
    "cluster_key int, cluster_id string, broker_id int, log_dir string, log_dir_key int, "
    "total_bytes long, is_live boolean"
)


@dataclass(frozen=True)
class DomainTables:
    """The small tables of every cluster.

    ``cluster_keys`` (KEYS_DDL); ``rack_nodes`` (NODES_DDL: every rack node, with the brokers
    beneath it, its children, child racks plus brokers directly in it, and the paths from the
    root down to it); ``broker_leaves`` (LEAVES_DDL: each broker with its rack node as
    ``leaf_id``); ``log_dir_keys`` (DIRS_DDL); ``cluster_meta`` (META_DDL: brokers, brokers
    without a rack, log dirs, failed log dirs and the rack level names, top down).
    """

    cluster_keys: DataFrame
    rack_nodes: DataFrame
    broker_leaves: DataFrame
    log_dir_keys: DataFrame
    cluster_meta: DataFrame


def level_name(depth: int, height: int) -> str:
    """The name of a rack level: ``rack`` in a one-level tree; else ``dc`` (depth 1), ``rack``
    (depth 2), ``level3``, ``level4``, ... below; the root is ``cluster``.

    >>> [level_name(d, 3) for d in range(4)]
    ['cluster', 'dc', 'rack', 'level3']
    """
    if depth == 0:
        return CLUSTER_LEVEL
    if height == 1:
        return "rack"
    return {1: "dc", 2: "rack"}.get(depth, f"level{depth}")


def _chain(tree: RackTree, node: int) -> list[str]:
    return [tree.paths[n] for n in reversed(tree.path_to_root(node))]


def tree_rows(
    key: int, cluster_id: str, brokers: list[tuple[int, str | None]]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The node rows (:data:`NODES_DDL`) and the broker rows (:data:`LEAVES_DDL`) of one
    cluster, built by :class:`RackTree` itself."""
    tree = RackTree.build([(b, as_rack_path(rack), False) for b, rack in brokers])
    racks = [n for n in range(tree.num_nodes) if int(tree.broker_of[n]) == NO_BROKER]
    height = max(int(tree.depth[n]) for n in racks)
    nodes = [
        (
            key,
            n,
            tree.paths[n],
            int(tree.depth[n]),
            level_name(int(tree.depth[n]), height),
            int(tree.num_brokers[n]),
            int(tree.child_count[n]),
            _chain(tree, n),
        )
        for n in racks
    ]
    leaves = []
    for broker, rack in brokers:
        home = int(tree.parent[tree.leaf_of_broker[broker]])
        leaves.append((key, cluster_id, broker, as_rack_path(rack), home, _chain(tree, home)))
    return nodes, leaves


def numbered_dirs(rows: Iterable[Any], keys: dict[str, int]) -> list[tuple[Any, ...]]:
    """The :data:`DIRS_DDL` rows of ``rows`` (mappings with the ``log_dirs`` columns) of the
    clusters in ``keys``: each broker's directories numbered from 1 in path order."""
    per_broker: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for row in rows:
        if row["cluster_id"] in keys:
            per_broker[(row["cluster_id"], row["broker_id"])].append(row)
    out = []
    for (cluster_id, broker), dirs in sorted(per_broker.items()):
        for number, row in enumerate(sorted(dirs, key=lambda r: r["log_dir"]), start=1):
            is_live = row["is_live"] is not False
            out.append(
                (
                    keys[cluster_id],
                    cluster_id,
                    broker,
                    row["log_dir"],
                    number,
                    row["total_bytes"],
                    is_live,
                )
            )
    return out


def meta_rows(
    keys: dict[str, int],
    nodes: list[tuple[Any, ...]],
    leaves: list[tuple[Any, ...]],
    dirs: list[tuple[Any, ...]],
) -> list[tuple[Any, ...]]:
    """The :data:`META_DDL` rows of every cluster in ``keys``."""
    levels: dict[int, set[tuple[int, str]]] = defaultdict(set)
    for key, _, _, depth, level, *_ in nodes:
        if depth >= 1:
            levels[key].add((depth, level))
    brokers: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for key, _, _, rack, *_ in leaves:
        brokers[key][0] += 1
        brokers[key][1] += rack is None
    disks: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for key, *_, is_live in dirs:
        disks[key][0] += 1
        disks[key][1] += not is_live
    return [
        (key, cluster_id, [name for _, name in sorted(levels[key])], *brokers[key], *disks[key])
        for cluster_id, key in keys.items()
    ]


def domain_tables(brokers: DataFrame, log_dirs: DataFrame) -> DomainTables:
    """The small tables, built now on the driver (see :class:`DomainTables`)."""
    spark = brokers.sparkSession
    per_cluster: dict[str, list[tuple[int, str | None]]] = defaultdict(list)
    for row in brokers.select(*BROKERS_COLUMNS).collect():
        per_cluster[row["cluster_id"]].append((row["broker_id"], row["rack"]))
    keys = {cluster_id: number for number, cluster_id in enumerate(sorted(per_cluster), start=1)}
    nodes: list[tuple[Any, ...]] = []
    leaves: list[tuple[Any, ...]] = []
    for cluster_id, key in keys.items():
        more_nodes, more_leaves = tree_rows(key, cluster_id, per_cluster[cluster_id])
        nodes += more_nodes
        leaves += more_leaves
    dirs = numbered_dirs(log_dirs.select(*LOG_DIRS_COLUMNS).collect(), keys)
    return DomainTables(
        cluster_keys=_local(spark, [(k, c) for c, k in keys.items()], KEYS_DDL),
        rack_nodes=_local(spark, nodes, NODES_DDL),
        broker_leaves=_local(spark, leaves, LEAVES_DDL),
        log_dir_keys=_local(spark, dirs, DIRS_DDL),
        cluster_meta=_local(spark, meta_rows(keys, nodes, leaves, dirs), META_DDL),
    )


def _local(spark: SparkSession, rows: list[tuple[Any, ...]], ddl: str) -> DataFrame:
    """``rows`` as a DataFrame held by the JVM (through Arrow), so that scanning it, which
    every join with it does, never starts a Python worker."""
    names = [field.split()[0] for field in ddl.split(", ")]
    return spark.createDataFrame(pd.DataFrame(rows, columns=names), ddl)
