"""Validation of raw input rows as Spark transforms: each takes raw DataFrames and returns the
rows that pass and the rows that do not, the latter in the ``rejected`` schema with a one-line
reason naming the offending value.

The raw tables are what the readers produce from either input form, with two private columns:
``_ordinal`` (the row's position in its file, so that of two rows for one key the first is the
one kept) and ``_source`` (the file or dataset, for ``rejected.source``).

Goals
    Nothing is dropped silently: every input row ends up in exactly one of the validated tables
    or in ``rejected``. A partition is kept whole or rejected whole, so that the audit never sees
    a partition with a replica missing.
Constraints
    The replicas can be 100,000,000 rows. Row checks use one broadcast join against what is
    known of each broker (:data:`LOOKUP_DDL`, thousands of rows); the partition checks are one
    aggregation of plain numbers; only small results (bad partitions, brokers, directories)
    are materialised, by the caller.
Algorithm
    1. Brokers: a row is rejected for a missing or negative id, a bad log directory entry
       (no path, a relative path, a negative capacity, a path twice) or a malformed rack path
       (:func:`rackwise.topology.rackpath.parse_rack_path`, a one-level ``r1`` read as
       ``/r1``); of the rest, a second row for an id already seen is rejected.
    2. Reported log directories (``kafka-log-dirs``) must belong to a kept broker and, when the
       broker list gives the broker's directories, be one of them.
    3. Replicas: each row is checked against the kept brokers and their known directories (a
       replica that ``kafka-log-dirs`` puts in a rejected directory fails here); then
       per partition, with ``count``, ``min``/``max``/``sum`` of the broker ids and ``bit_or`` of
       ``1 << replica_index``: a broker twice (exact for up to three replicas from the three
       numbers; partitions with more replicas are checked again with a list of their brokers)
       and replica indexes other than 0..n-1. The first problem of a partition rejects it.
Worked example
    Partition ``orders-3`` with replicas on brokers ``[1, 1, 2]``: ``n = 3``, ``min = 1``,
    ``max = 2``, ``sum = 4``, the middle one is ``4 - 1 - 2 = 1 = min``: a broker twice, and all
    three rows go to ``rejected`` with "orders-3: broker 1 appears more than once in the
    replicas".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812

from rackwise.pipeline import schema
from rackwise.pipeline.ingest.checks import ABSOLUTE_PATH, MAX_REPLICA_INDEX
from rackwise.pipeline.ingest.tables import conform

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

RAW_BROKERS_DDL: Final = (
    "cluster_id string, broker_id int, rack string, "
    "log_dirs array<struct<path:string,total_bytes:bigint,is_live:boolean>>, _ordinal bigint"
)
RAW_REPLICAS_DDL: Final = (
    "cluster_id string, topic string, partition int, replica_index int, broker_id int, "
    "log_dir string, size_bytes bigint, _ordinal bigint"
)
RAW_REPORTED_DIRS_DDL: Final = (
    "cluster_id string, broker_id int, log_dir string, is_live boolean, _ordinal bigint"
)

PARTITION_KEYS: Final = ("cluster_id", "topic", "partition")
PROBLEMS_DDL: Final = "cluster_id string, topic string, partition int, _reason string"
""":func:`partition_problems`' rows: a partition to reject and why."""
_ABSOLUTE: Final = ABSOLUTE_PATH
_MAX_INDEX: Final = MAX_REPLICA_INDEX


def _quoted(column: Column) -> Column:
    return F.concat(F.lit('"'), column, F.lit('"'))


def _first_reason(*cases: tuple[Column, Column]) -> Column:
    """The reason of the first case whose condition holds, else null."""
    result = F.when(cases[0][0], cases[0][1])
    for condition, reason in cases[1:]:
        result = result.when(condition, reason)
    return result


def rejected_rows(frame: DataFrame, record_columns: Sequence[str]) -> DataFrame:
    """``frame`` (with ``cluster_id``, ``_source``, ``_reason``) as ``rejected`` rows, the record
    being the named columns as JSON."""
    record = F.to_json(F.struct(*(F.col(c) for c in record_columns)), {"ignoreNullFields": "false"})
    return frame.select(
        F.col("cluster_id"),
        F.col("_source").alias("source"),
        record.alias("record"),
        F.col("_reason").alias("reason"),
    )


def split(frame: DataFrame) -> tuple[DataFrame, DataFrame]:
    """``frame`` by ``_reason``: the rows without one and the rows with one."""
    return frame.filter(F.col("_reason").isNull()), frame.filter(F.col("_reason").isNotNull())


# --- brokers ------------------------------------------------------------------------------------


def _literal_map(mapping: Mapping[str, str | None], key: Column) -> Column:
    """``mapping[key]`` as a Spark expression (null for a key not in it)."""
    if not mapping:
        return F.lit(None).cast("string")
    pairs = [F.lit(item) for pair in mapping.items() for item in pair]
    return F.create_map(*pairs)[key]


def _dir_problem() -> Column:
    """The first problem among a raw broker's ``log_dirs`` entries, or null."""
    dirs = F.coalesce(F.col("log_dirs"), F.array())
    no_path = F.filter(dirs, lambda d: d["path"].isNull())
    relative = F.filter(dirs, lambda d: ~d["path"].rlike(_ABSOLUTE))
    negative = F.filter(dirs, lambda d: d["total_bytes"] < 0)
    paths = F.transform(dirs, lambda d: d["path"])
    broker = F.concat(F.lit("broker "), F.col("broker_id").cast("string"))
    return _first_reason(
        (F.size(no_path) > 0, F.concat(broker, F.lit(": a log directory has no path"))),
        (
            F.size(relative) > 0,
            F.concat(
                broker,
                F.lit(": log directory "),
                _quoted(relative[0]["path"]),
                F.lit(" is not an absolute path"),
            ),
        ),
        (
            F.size(negative) > 0,
            F.concat(
                broker,
                F.lit(": log directory "),
                negative[0]["path"],
                F.lit(" has a negative total_bytes "),
                negative[0]["total_bytes"].cast("string"),
            ),
        ),
        (
            F.size(F.array_distinct(paths)) < F.size(paths),
            F.concat(broker, F.lit(": a log directory is listed more than once")),
        ),
    )


def annotate_brokers(raw: DataFrame, racks: Mapping[str, tuple[str, str | None]]) -> DataFrame:
    """Raw brokers with ``rack_path`` and ``_reason`` (null for a broker to keep); ``racks``
    is :func:`rackwise.pipeline.ingest.checks.rack_problems` of their racks."""
    joined = raw.withColumn(
        "rack_path", _literal_map({k: path for k, (path, _) in racks.items()}, F.col("rack"))
    ).withColumn(
        "rack_problem", _literal_map({k: why for k, (_, why) in racks.items()}, F.col("rack"))
    )
    reason = _first_reason(
        (F.col("cluster_id").isNull(), F.lit("broker row has no cluster_id")),
        (F.col("broker_id").isNull(), F.lit("broker row has no broker_id")),
        (
            F.col("broker_id") < 0,
            F.concat(F.lit("broker id "), F.col("broker_id").cast("string"), F.lit(" is negative")),
        ),
        (F.lit(True), _dir_problem()),
    )
    with_rack = _first_reason(
        (F.col("_reason").isNotNull(), F.col("_reason")),
        (
            F.col("rack_problem").isNotNull(),
            F.concat(
                F.lit("Broker "),
                F.col("broker_id").cast("string"),
                F.lit(" "),
                F.col("rack_problem"),
            ),
        ),
    )
    checked = joined.withColumn("_reason", reason).withColumn("_reason", with_rack)
    from pyspark.sql import Window  # noqa: PLC0415

    first = Window.partitionBy("cluster_id", "broker_id", F.col("_reason").isNull()).orderBy(
        "_ordinal"
    )
    duplicate = F.concat(
        F.lit("broker "),
        F.col("broker_id").cast("string"),
        F.lit(" is listed more than once; the first entry is kept"),
    )
    checked = checked.withColumn(
        "_reason",
        F.when(F.col("_reason").isNull() & (F.row_number().over(first) > 1), duplicate).otherwise(
            F.col("_reason")
        ),
    )
    return checked.drop("rack_problem")


def check_brokers(
    raw: DataFrame, racks: Mapping[str, tuple[str, str | None]]
) -> tuple[DataFrame, DataFrame]:
    """Kept brokers (the raw columns, ``rack`` now a path) and ``rejected`` rows."""
    return split_brokers(annotate_brokers(raw, racks))


def split_brokers(annotated: DataFrame) -> tuple[DataFrame, DataFrame]:
    """:func:`annotate_brokers`'s rows as kept brokers and ``rejected`` rows."""
    kept, bad = split(annotated)
    kept = kept.withColumn("rack", F.col("rack_path")).drop("rack_path", "_reason")
    return kept, rejected_rows(bad, ("cluster_id", "broker_id", "rack", "log_dirs"))


# --- log directories ----------------------------------------------------------------------------

LOOKUP_DDL: Final = "cluster_id string, broker_id int, _kept boolean, _dirs array<string>"
"""What the row checks know of a broker: every broker id the broker list names, whether it was
kept, and its known log directories (null when none is known)."""


def _unknown_broker(subject: Column) -> list[tuple[Column, Column]]:
    """Reasons for a row on a broker that is missing from the broker list (``_kept`` null) or
    was rejected from it (``_kept`` false); ``subject`` says what is on it."""
    broker = F.concat(subject, F.lit(" broker "), F.col("broker_id").cast("string"))
    return [
        (F.col("_kept").isNull(), F.concat(broker, F.lit(", which is not in the broker list"))),
        (~F.col("_kept"), F.concat(broker, F.lit(", which was rejected from the broker list"))),
    ]


def _lookup(frame: DataFrame, lookup: DataFrame) -> DataFrame:
    return frame.join(F.broadcast(lookup), on=["cluster_id", "broker_id"], how="left")


def annotate_reported_dirs(raw: DataFrame, declared_lookup: DataFrame) -> DataFrame:
    """Reported directories with ``_reason`` (null for one to keep): a directory must be on a
    kept broker and, when the broker list declares the broker's directories
    (``declared_lookup``, :data:`LOOKUP_DDL`), be one of them."""
    no_dir = F.concat(
        F.lit("broker "),
        F.col("broker_id").cast("string"),
        F.lit(" has no log directory "),
        F.col("log_dir"),
        F.lit(" in the broker list"),
    )
    reason = _first_reason(
        *_unknown_broker(F.concat(F.lit("log directory "), F.col("log_dir"), F.lit(" of"))),
        (F.col("_dirs").isNotNull() & ~F.array_contains("_dirs", F.col("log_dir")), no_dir),
    )
    columns = ("cluster_id", "broker_id", "log_dir", "is_live", "_source", "_reason")
    return _lookup(raw, declared_lookup).withColumn("_reason", reason).select(*columns)


# --- replicas -----------------------------------------------------------------------------------


def _topic_partition() -> Column:
    return F.concat_ws("-", F.col("topic"), F.col("partition").cast("string"))


def annotate_replicas(replicas: DataFrame, lookup: DataFrame) -> DataFrame:
    """``replicas`` with ``_reason``: the row's own problem, if any. ``lookup``
    (:data:`LOOKUP_DDL`) has each broker's known directories, of which a replica's directory
    must be one when any are known."""
    joined = _lookup(replicas, lookup)
    reason = _first_reason(*_key_problems(), *_placement_problems())
    return joined.withColumn("_reason", reason).drop("_kept", "_dirs")


def _key_problems() -> list[tuple[Column, Column]]:
    """A replica row's missing or impossible keys."""
    tp = F.concat(_topic_partition(), F.lit(": "))
    index = F.col("replica_index")
    return [
        (F.col("cluster_id").isNull(), F.lit("replica row has no cluster_id")),
        (F.col("topic").isNull() | (F.col("topic") == ""), F.lit("replica row has no topic")),
        (
            F.col("partition").isNull(),
            F.concat(
                F.lit("replica row of topic "), _quoted(F.col("topic")), F.lit(" has no partition")
            ),
        ),
        (
            F.col("partition") < 0,
            F.concat(
                tp, F.lit("partition "), F.col("partition").cast("string"), F.lit(" is negative")
            ),
        ),
        (index.isNull(), F.concat(tp, F.lit("a replica has no replica_index"))),
        (
            (index < 0) | (index > _MAX_INDEX),
            F.concat(tp, F.lit("replica index "), index.cast("string"), F.lit(" is out of range")),
        ),
        (
            F.col("broker_id").isNull(),
            F.concat(tp, F.lit("replica "), index.cast("string"), F.lit(" has no broker_id")),
        ),
    ]


def _placement_problems() -> list[tuple[Column, Column]]:
    """A replica on a broker, in a directory or of a size that cannot be."""
    tp = F.concat(_topic_partition(), F.lit(": "))
    broker = F.col("broker_id").cast("string")
    return [
        *_unknown_broker(F.concat(tp, F.lit("replica on"))),
        (
            F.col("log_dir").isNotNull() & ~F.col("log_dir").rlike(_ABSOLUTE),
            F.concat(
                tp,
                F.lit("log directory "),
                _quoted(F.col("log_dir")),
                F.lit(" of the replica on broker "),
                broker,
                F.lit(" is not an absolute path"),
            ),
        ),
        (
            F.col("log_dir").isNotNull()
            & F.col("_dirs").isNotNull()
            & ~F.array_contains("_dirs", F.col("log_dir")),
            F.concat(
                tp, F.lit("broker "), broker, F.lit(" has no log directory "), F.col("log_dir")
            ),
        ),
        (
            F.col("size_bytes") < 0,
            F.concat(
                tp,
                F.lit("the replica on broker "),
                broker,
                F.lit(" has a negative size "),
                F.col("size_bytes").cast("string"),
            ),
        ),
    ]


def _has_keys() -> Column:
    return (
        F.col("cluster_id").isNotNull()
        & F.col("topic").isNotNull()
        & (F.col("topic") != "")
        & F.col("partition").isNotNull()
    )


FLAGS_DDL: Final = (
    "_kind string, cluster_id string, topic string, partition int, n bigint, bad_mask boolean, "
    "many bigint"
)
""":func:`partition_flags`' rows."""


def partition_flags(annotated: DataFrame) -> DataFrame:
    """One pass of plain-number aggregation over all replicas: a ``flagged`` row (keys, ``n``,
    ``bad_mask``) for every partition with a row problem, a broker twice (exact up to three
    replicas) or replica indexes other than 0..n-1, and one ``many`` row counting the other
    partitions of over three replicas, whose brokers the numbers cannot vouch for (see
    :func:`repeated_brokers`). Rows without a partition key come out as flagged groups.

    The result is small: a row per problem, and one more.
    """
    in_range = F.col("replica_index").between(0, _MAX_INDEX)
    stats = annotated.groupBy(*PARTITION_KEYS).agg(
        F.count(F.lit(1)).alias("n"),
        F.max(F.col("_reason").isNotNull().cast("int")).alias("row_problem"),
        F.min("broker_id").alias("b_min"),
        F.max("broker_id").alias("b_max"),
        F.sum("broker_id").alias("b_sum"),
        F.bit_or(F.when(in_range, F.expr("shiftleft(1L, replica_index)"))).alias("mask"),
    )
    middle = F.col("b_sum") - F.col("b_min") - F.col("b_max")
    twice = ((F.col("n") == 2) & (F.col("b_min") == F.col("b_max"))) | (
        (F.col("n") == 3) & ((middle == F.col("b_min")) | (middle == F.col("b_max")))
    )
    full_mask = F.when(F.col("n") <= _MAX_INDEX + 1, F.expr("shiftleft(1L, n)") - 1)
    bad_mask = F.coalesce(F.col("mask") != full_mask, F.lit(True))
    flagged = (F.col("row_problem") == 1) | twice | bad_mask
    # Flagged partitions keep their keys; the others of over three replicas fold into one
    # "many" group, counted: one small aggregation over the same pass.
    candidates = stats.filter(flagged | (F.col("n") > 3)).select(
        F.when(flagged, "flagged").otherwise("many").alias("_kind"),
        *(F.when(flagged, F.col(k)).alias(k) for k in PARTITION_KEYS),
        F.when(flagged, F.col("n")).alias("n"),
        F.when(flagged, bad_mask).alias("bad_mask"),
    )
    folded = candidates.groupBy("_kind", *PARTITION_KEYS, "n", "bad_mask").agg(
        F.count(F.lit(1)).alias("many")
    )
    return folded.select(
        "_kind",
        *PARTITION_KEYS,
        "n",
        "bad_mask",
        F.when(F.col("_kind") == "many", F.col("many")).alias("many"),
    )


def repeated_brokers(annotated: DataFrame) -> DataFrame:
    """Partitions with a broker twice, however many replicas they have: ``cluster_id``,
    ``topic``, ``partition``, ``_reason`` naming the first broker (by replica index) that
    repeats. A second aggregation over all replicas, run only when some partition has over
    three."""
    pairs = (
        annotated.filter(_has_keys())
        .groupBy(*PARTITION_KEYS, "broker_id")
        .agg(F.count(F.lit(1)).alias("times"), F.min("replica_index").alias("first"))
    )
    repeated = (
        pairs.filter(F.col("times") > 1)
        .groupBy(*PARTITION_KEYS)
        .agg(F.min_by("broker_id", "first").alias("broker_id"))
    )
    reason = F.concat(
        _topic_partition(),
        F.lit(": broker "),
        F.col("broker_id").cast("string"),
        F.lit(" appears more than once in the replicas"),
    )
    return repeated.select(*PARTITION_KEYS, reason.alias("_reason"))


def partition_problems(spark: SparkSession, annotated: DataFrame) -> list[Row]:
    """Every partition to reject with its reason (:data:`PROBLEMS_DDL` rows, on the driver):
    the first row problem by replica index, else a broker twice, else replica indexes other
    than 0..n-1; rows without a partition key as one group per key with their first reason.

    One aggregation of numbers over all replicas (:func:`partition_flags`); the flagged
    partitions, few, are looked at again for their reasons (:func:`partition_reasons`), and
    only if some partition has over three replicas is every partition's broker list checked
    (:func:`repeated_brokers`).
    """
    flags = partition_flags(annotated).collect()
    flagged = [r for r in flags if r["_kind"] == "flagged"]
    many = sum(r["many"] for r in flags if r["_kind"] == "many")
    found: dict[tuple[object, ...], Row] = {}
    if flagged:
        frame = spark.createDataFrame(flagged, FLAGS_DDL)
        for row in partition_reasons(annotated, frame).collect():
            found[tuple(row[k] for k in PARTITION_KEYS)] = row
    if many:
        for row in repeated_brokers(annotated).collect():
            found.setdefault(tuple(row[k] for k in PARTITION_KEYS), row)
    return list(found.values())


def _reason_order() -> Column:
    """Orders a partition's row problems by replica index (a missing index first); null for a
    row without a problem, which ``min_by`` then passes over."""
    return F.when(F.col("_reason").isNotNull(), F.coalesce(F.col("replica_index"), F.lit(-1)))


def row_problems(annotated: DataFrame) -> DataFrame:
    """:func:`partition_problems` for replicas whose partitions are known to be whole and
    without a broker twice (the JSON reader checks every entry): the partitions of the rows
    with a problem, each with its first. Only those rows are grouped."""
    bad_rows = annotated.filter(F.col("_reason").isNotNull())
    first = bad_rows.groupBy(*PARTITION_KEYS).agg(
        F.min_by("_reason", _reason_order()).alias("_reason")
    )
    return first.select(*PARTITION_KEYS, "_reason")


def partition_reasons(annotated: DataFrame, flagged: DataFrame) -> DataFrame:
    """The reasons for the ``flagged`` partitions of :func:`partition_flags` (few, so they are
    broadcast), from their rows: ``cluster_id``, ``topic``, ``partition``, ``_reason``."""
    f = flagged.select(*(F.col(k).alias(f"_f_{k}") for k in PARTITION_KEYS), "n", "bad_mask")
    condition = F.col(PARTITION_KEYS[0]).eqNullSafe(F.col(f"_f_{PARTITION_KEYS[0]}"))
    for key in PARTITION_KEYS[1:]:
        condition = condition & F.col(key).eqNullSafe(F.col(f"_f_{key}"))
    rows = annotated.join(F.broadcast(f), on=condition, how="inner")
    lists = rows.groupBy(*PARTITION_KEYS).agg(
        F.first("n").alias("n"),
        F.first("bad_mask").alias("bad_mask"),
        F.min_by("_reason", _reason_order()).alias("row_reason"),
        F.array_sort(F.collect_list(F.struct("replica_index", "broker_id"))).alias("slots"),
    )
    brokers = F.transform("slots", lambda slot: slot["broker_id"])
    repeated = F.filter(brokers, lambda b: F.size(F.filter(brokers, lambda c: c == b)) > 1)
    tp = F.concat(_topic_partition(), F.lit(": "))
    n = F.col("n").cast("string")
    reason = _first_reason(
        (F.col("row_reason").isNotNull(), F.col("row_reason")),
        (
            F.size(repeated) > 0,
            F.concat(
                tp,
                F.lit("broker "),
                repeated[0].cast("string"),
                F.lit(" appears more than once in the replicas"),
            ),
        ),
        (
            F.coalesce(F.col("bad_mask"), F.lit(True)),
            F.concat(
                tp,
                n,
                F.lit(" replicas whose replica indexes are not 0 to "),
                (F.col("n") - 1).cast("string"),
                F.lit(", each once"),
            ),
        ),
    )
    return lists.select(*PARTITION_KEYS, reason.alias("_reason")).filter(
        F.col("_reason").isNotNull()
    )


REPLICA_RECORD: Final = schema.REPLICAS_COLUMNS


def split_replicas(
    resolved: DataFrame, annotated: DataFrame, bad: DataFrame | None, *, broadcast: bool = True
) -> tuple[DataFrame, DataFrame]:
    """The kept replicas (``resolved`` rows of partitions not in ``bad``) and ``rejected``
    rows: rows without a partition key for their own reason, the rest with their partition's.
    ``bad`` is :func:`partition_problems`, small and materialised by the caller, or ``None``
    when it is empty, which spares reading the replicas again for rejects. It is broadcast
    unless ``broadcast`` is false (for a very large set of rejected partitions).

    The kept rows come from ``resolved`` rather than ``annotated`` so that reading them again
    does not repeat the checks' joins.
    """
    keys = list(PARTITION_KEYS)
    if bad is None:
        kept = resolved
        rejected = rejected_rows(annotated.limit(0), REPLICA_RECORD)
    else:
        small = F.broadcast(bad) if broadcast else bad
        kept = resolved.filter(_has_keys()).join(small.select(*keys), on=keys, how="left_anti")
        keyless = annotated.filter(~_has_keys())
        in_bad = annotated.filter(_has_keys()).drop("_reason").join(small, on=keys, how="inner")
        rejected = rejected_rows(keyless, REPLICA_RECORD).unionByName(
            rejected_rows(in_bad, REPLICA_RECORD)
        )
    return conform(kept, schema.REPLICAS_COLUMNS, schema.REPLICAS_DDL), rejected


def assignment_dirs(replicas: DataFrame, lookup: DataFrame) -> DataFrame:
    """Directories named only by the assignment, on kept brokers of which no directory is
    otherwise known (``_dirs`` null in ``lookup``): ``log_dirs`` rows with an unknown
    capacity, live."""
    unknown = lookup.filter(F.col("_kept") & F.col("_dirs").isNull())
    named = (
        replicas.filter(F.col("log_dir").isNotNull())
        .join(F.broadcast(unknown), on=["cluster_id", "broker_id"], how="left_semi")
        .select("cluster_id", "broker_id", "log_dir")
        .distinct()
    )
    frame = named.select(
        "cluster_id",
        "broker_id",
        "log_dir",
        F.lit(None).cast("long").alias("total_bytes"),
        F.lit(True).alias("is_live"),
    )
    return conform(frame, schema.LOG_DIRS_COLUMNS, schema.LOG_DIRS_DDL)
