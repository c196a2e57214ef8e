"""The audit: spread violations, failure-domain exposure, load and skew, per cluster, on Spark.

The transforms (here and in the package's private modules ``_replicas``, ``_placements``,
``_spread``, ``_domains``, ``_clusters``) are pure ``DataFrame -> DataFrame`` functions: each
selects the columns it needs on entry and the columns it promises on exit, joins with an
explicit ``how=`` and uses only Spark's native functions (no Python UDF). The brokers' tree,
which is metadata, is built on the driver by :class:`rackwise.topology.RackTree`
(:mod:`rackwise.pipeline.audit.tree`). :func:`assemble_audit` wires the transforms together,
handing each shared table to a ``materialize`` function as it is defined; :func:`audit_tables`
(and the job, :func:`rackwise.pipeline.engines.spark.run_audit`) checkpoint each one, so that
the input is read once and every table computed once. The in-process engine computes the same
tables with NumPy (:mod:`rackwise.pipeline.audit.local`).

Shape of the work. The replicas are the only large table and are read once. They are joined
(broadcast, no shuffle) to the small broker and log-dir tables, which turns every string but the
topic into an integer, then aggregated once, with two grouping sets: per partition and per
(broker, log dir) (the only large shuffle; see ``_replicas``). One more pass over that
(``_placements``) reduces the partitions to small tables: how many partitions share each
placement (the racks of their replicas, all and live), and the brokers and log dirs of the
partitions one failure can hurt. Then:

* spread: evaluated once per distinct placement and joined back to the partitions that have it
  only to list them (``spread_violations``);
* exposure of racks: once per distinct placement of live replicas; of brokers and log dirs:
  from the fragile partitions' (broker, log dir) keys;
* load: the per-(broker, log dir) aggregates, rolled up the small tree;
* per-cluster counts: sums over the placements.

Definitions
-----------
Spread violation
    For a partition and a rack node holding its replicas: some child of the node holds two or
    more replicas more than another child that still has a broker without a replica of the
    partition. The reference is :func:`rackwise.topology.spread_violations`.
Brokers without a rack
    As in :class:`rackwise.topology.RackTree`: directly under the root, each its own failure
    domain. A cluster with no rack at all has no rack level (nothing to spread over); in a
    cluster with mixed rack information every rack-less broker is a domain beside the data
    centres (Kafka's rack-aware assignment refuses such a cluster; the audit reports what is).
    ``brokers_without_rack`` in the cluster table counts them.
Failed log directories
    A replica in a log dir with ``is_live = false`` is already lost: it counts as lost in every
    failure scenario. A partition with no live replica is ``offline_now``; one with fewer live
    replicas than ``min.insync.replicas`` is ``under_min_isr_now``.
Exposure of a domain
    Among the partitions with a live replica in the domain (``partitions``): those left with no
    live replica if it fails (``offline_if_lost``) and those left with ``1 <= live < min ISR``
    (``under_min_isr_if_lost``). The two are disjoint, as Kafka's OfflinePartitionsCount and
    UnderMinIsrPartitionCount are. The root is not a domain (losing it is losing the cluster).
Load
    Replicas, leaders (replica_index 0, the preferred leader) and bytes per log dir, broker and
    rack node; every known domain appears, an empty one with zeros. ``utilisation`` is bytes
    over the capacity (``total_bytes``) where that is known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pyspark import StorageLevel

from rackwise.common import IllegalArgumentException
from rackwise.pipeline.audit import DEFAULT_MIN_INSYNC_REPLICAS, RESULT_TABLES
from rackwise.pipeline.audit._clusters import cluster_rows, named
from rackwise.pipeline.audit._domains import (
    domain_table,
    exposure_rows,
    load_rows,
    rack_exposure,
    skew_rows,
)
from rackwise.pipeline.audit._placements import (
    fine_load,
    fragile_hits,
    has_wide_partitions,
    placement_aggregates,
    placement_input,
    placements,
)
from rackwise.pipeline.audit._replicas import (
    enrich_replicas,
    partition_table,
    replica_aggregates,
)
from rackwise.pipeline.audit._rules_spark import rule_frame, with_rule_clusters, with_rule_exposure
from rackwise.pipeline.audit._spread import spread_rows, violating_signatures
from rackwise.pipeline.audit.rules import DEFAULT_RULES, DomainRules
from rackwise.pipeline.audit.summary import DEFAULT_MAX_DOMAINS, summary_from_frames
from rackwise.pipeline.audit.tree import DomainTables, domain_tables

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "RESULT_TABLES",
    "AuditInput",
    "AuditResult",
    "DomainTables",
    "Materialize",
    "PreparedAudit",
    "assemble_audit",
    "audit_tables",
    "cluster_rows",
    "domain_tables",
    "enrich_replicas",
    "has_wide_partitions",
    "local_checkpoint",
    "partition_table",
    "placement_aggregates",
    "prepare_audit",
    "rack_exposure",
    "replica_aggregates",
    "summarize",
    "summary_from_frames",
    "violating_signatures",
]


Materialize = Callable[[str, "DataFrame"], "DataFrame"]
"""Given a stage name and a frame, compute the frame and return a frame that reads the result
(``frame.localCheckpoint()``, say): see :func:`assemble_audit`."""


class AuditInput(Protocol):
    """What the audit reads: ``rackwise.pipeline.ingest.tables.ClusterTables`` or anything alike."""

    @property
    def brokers(self) -> DataFrame: ...
    @property
    def log_dirs(self) -> DataFrame: ...
    @property
    def replicas(self) -> DataFrame: ...


@dataclass(frozen=True)
class AuditResult:
    """The audit's tables (lazy DataFrames).

    Output tables (``RESULT_TABLES``):

    clusters
        ``cluster_id, brokers, brokers_without_rack, log_dirs, failed_log_dirs, rack_levels``
        (level names, top down), ``partitions, replicas, offline_now, under_min_isr_now,
        partitions_with_spread_violations, spread_violations`` (partition-node rows),
        ``spread_violations_by_level`` (a map from level name to partition-node rows).
    spread_violations
        ``cluster_id, topic, partition, depth, level, node`` (the rack path; ``/`` the root),
        ``replicas`` (under the node), ``max_child_replicas``, ``min_free_child_replicas``.
    exposure
        ``cluster_id, level, domain, broker_id, log_dir, partitions, offline_if_lost,
        under_min_isr_if_lost``. ``domain`` is the rack path, the broker id, or
        ``<broker id>:<log dir>``.
    load
        ``cluster_id, level, domain, broker_id, log_dir, is_live`` (log dirs only), ``replicas,
        leaders, bytes, total_bytes, utilisation``.
    skew
        ``cluster_id, level, metric, domains, min, max, mean, max_over_mean``.

    Intermediate tables, materialized by a job that writes several outputs: ``aggregates``
    (the one pass over the replicas), ``partitions`` (one row per partition), ``placements``
    (the second pass: see ``_placements``), ``violating_signatures`` (the placements
    that violate the spread, with where), ``domains`` (load and exposure of every domain, the
    source of three outputs); and ``small``, the driver-built tables (:class:`DomainTables`).
    """

    min_insync_replicas: int
    clusters: DataFrame
    spread_violations: DataFrame
    exposure: DataFrame
    load: DataFrame
    skew: DataFrame
    aggregates: DataFrame
    partitions: DataFrame
    placements: DataFrame
    violating_signatures: DataFrame
    domains: DataFrame
    small: DomainTables

    def table(self, name: str) -> DataFrame:
        """One of ``RESULT_TABLES`` by name."""
        if name not in RESULT_TABLES:
            raise IllegalArgumentException(f"Unknown audit table {name!r}")
        frame: DataFrame = getattr(self, name)
        return frame


@dataclass(frozen=True)
class PreparedAudit:
    """The audit's input keyed and aggregated, lazily but for the small tables (built
    already): what :func:`assemble_audit` derives every output from."""

    small: DomainTables
    replicas: DataFrame
    aggregates: DataFrame
    tables: AuditInput


def prepare_audit(tables: AuditInput) -> PreparedAudit:
    """Build the small tables on the driver (:func:`domain_tables`) and define the
    integer-keyed replicas and their one aggregation."""
    small = domain_tables(tables.brokers, tables.log_dirs)
    enriched = enrich_replicas(tables.replicas, small.broker_leaves, small.log_dir_keys)
    return PreparedAudit(small, enriched, replica_aggregates(enriched), tables)


def _lazy(stage: str, frame: DataFrame) -> DataFrame:
    del stage
    return frame


def assemble_audit(
    prepared: PreparedAudit,
    min_insync_replicas: int = DEFAULT_MIN_INSYNC_REPLICAS,
    *,
    materialize: Materialize | None = None,
    rules: DomainRules = DEFAULT_RULES,
) -> AuditResult:
    """Every output of the audit from ``prepared``.

    Without ``materialize`` every output is lazy. With it, each shared intermediate is handed
    to ``materialize(stage, frame)`` as soon as it is defined and what it returns (a
    checkpointed frame, say) is what the rest is built on. The stages: ``read`` (the
    aggregation of the replicas), ``placements`` (the second pass: placements, fragile
    partitions' brokers, load), then, only when that pass met partitions of more than three
    replicas, ``partitions`` (completing them needs a second read of the replicas) and
    ``placements`` again; ``spread`` (the violating placements), ``domains``, and ``rules``
    (the topics' ``min.insync.racks`` and ``leaders.preference`` per domain, one Arrow call
    per cluster: :mod:`rackwise.pipeline.audit.domain_loss`) unless no topic has such a rule.
    The outputs themselves are small lazy plans over those.
    """
    if min_insync_replicas < 1:
        raise IllegalArgumentException(
            f"min.insync.replicas must be at least 1, got {min_insync_replicas}"
        )
    done = materialize or _lazy
    small = prepared.small
    nodes = small.rack_nodes
    aggregates = done("read", prepared.aggregates)
    parts = partition_table(aggregates, None)
    second: DataFrame | None = None
    if materialize is not None:
        rows = placement_input(aggregates, None)
        second = done("placements", placement_aggregates(rows, min_insync_replicas))
    if second is None or has_wide_partitions(second):
        parts = done("partitions", partition_table(aggregates, prepared.replicas))
        rows = placement_input(aggregates, parts)
        second = done("placements", placement_aggregates(rows, min_insync_replicas))
    signatures = placements(second)
    bad = done("spread", violating_signatures(signatures, nodes))
    domains = done(
        "domains",
        domain_table(
            nodes,
            small.broker_leaves,
            small.log_dir_keys,
            fine_load(second),
            fragile_hits(second),
            rack_exposure(signatures, nodes, min_insync_replicas),
        ),
    )
    keys = small.cluster_keys
    raw = prepared.tables
    by_rule = None
    if not rules.is_trivial:
        by_rule = done(
            "rules",
            rule_frame(raw.replicas, raw.brokers, raw.log_dirs, rules, min_insync_replicas),
        )
    clusters = cluster_rows(signatures, bad, small.cluster_meta, min_insync_replicas)
    clusters = with_rule_clusters(clusters, by_rule)
    load = load_rows(domains)
    return AuditResult(
        min_insync_replicas=min_insync_replicas,
        clusters=clusters,
        spread_violations=spread_rows(parts, bad, keys),
        exposure=with_rule_exposure(named(exposure_rows(domains), keys), by_rule),
        load=named(load, keys),
        skew=named(skew_rows(load), keys),
        aggregates=aggregates,
        partitions=parts,
        placements=second,
        violating_signatures=bad,
        domains=domains,
        small=small,
    )


def local_checkpoint(stage: str, frame: DataFrame) -> DataFrame:
    """A :data:`Materialize` for :func:`assemble_audit`: ``frame`` computed now and
    checkpointed locally (memory, spilling to disk)."""
    del stage
    return frame.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)


def audit_tables(
    tables: AuditInput,
    min_insync_replicas: int = DEFAULT_MIN_INSYNC_REPLICAS,
    *,
    materialize: Materialize | None = local_checkpoint,
    rules: DomainRules = DEFAULT_RULES,
) -> AuditResult:
    """Audit every cluster in ``tables`` (validated brokers, log_dirs and replicas tables).

    By default each shared table is computed now, once, and checkpointed
    (:func:`local_checkpoint`; see :func:`assemble_audit`): the outputs are then small plans
    over small checkpoints, and collecting or writing all of them reads the replicas once.
    ``materialize=None`` leaves every output a lazy DataFrame (only the small tables are
    computed now), each output collected or written recomputing everything it needs from the
    replicas: the pure composition, for a caller that wants one output only. Collecting
    several lazy outputs of one cluster costs several seconds each in query planning alone.
    """
    if min_insync_replicas < 1:
        raise IllegalArgumentException(
            f"min.insync.replicas must be at least 1, got {min_insync_replicas}"
        )
    return assemble_audit(
        prepare_audit(tables), min_insync_replicas, materialize=materialize, rules=rules
    )


def summarize(result: AuditResult, max_domains: int = DEFAULT_MAX_DOMAINS) -> dict[str, Any]:
    """The summary of ``result`` (three small collects: ``clusters``, ``exposure``, ``skew``);
    see :func:`rackwise.pipeline.audit.summary.summary_from_frames`."""
    return summary_from_frames(
        result.clusters.toPandas(),
        result.exposure.toPandas(),
        result.skew.toPandas(),
        result.min_insync_replicas,
        max_domains,
    )
