"""The validation transforms one by one, on DataFrames built in the test."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import functions as F  # noqa: N812
from pyspark.testing import assertDataFrameEqual

from rackwise.pipeline.ingest import _validate as v
from rackwise.pipeline.ingest.checks import rack_problems

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ANNOTATED_DDL = (
    "cluster_id string, topic string, partition int, replica_index int, broker_id int, "
    "_reason string"
)


def test_rack_problems_uses_the_topology_parser() -> None:
    assert rack_problems(["rack1", "/dc1/r1", None, "/dc1//r2", "rack1"]) == {
        "/dc1//r2": (
            "/dc1//r2",
            "has a malformed rack path '/dc1//r2': empty component (a doubled or trailing '/')",
        ),
        "/dc1/r1": ("/dc1/r1", None),
        "rack1": ("/rack1", None),
    }


def test_annotate_brokers_keeps_the_first_of_an_id_among_the_good_rows(
    spark: SparkSession,
) -> None:
    raw = spark.createDataFrame(
        [
            ("c", 1, "/a//b", None, 0),
            ("c", 1, "r1", [("/d", 1, None)], 1),
            ("c", 1, "r2", None, 2),
            ("c", 2, None, [("/d", 1, True), ("/e", -1, True)], 3),
            ("d", 1, "r2", None, 4),
        ],
        v.RAW_BROKERS_DDL,
    ).withColumn("_source", F.lit("s"))
    kept, rejected = v.check_brokers(raw, rack_problems(["/a//b", "r1", "r2"]))
    assertDataFrameEqual(
        kept.select("cluster_id", "broker_id", "rack"),
        spark.createDataFrame(
            [("c", 1, "/r1"), ("d", 1, "/r2")], "cluster_id string, broker_id int, rack string"
        ),
    )
    assertDataFrameEqual(
        rejected.select("reason"),
        spark.createDataFrame(
            [
                (
                    "Broker 1 has a malformed rack path '/a//b': empty component (a doubled or "
                    "trailing '/')",
                ),
                ("broker 1 is listed more than once; the first entry is kept",),
                ("broker 2: log directory /e has a negative total_bytes -1",),
            ],
            "reason string",
        ),
    )


def _reference(rows: list[tuple[str, str, int, int, int]]) -> dict[tuple[str, str, int], str]:
    """The partitions :func:`partition_problems` must reject, worked out plainly."""
    by_partition: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
    for cluster, topic, partition, index, broker in rows:
        by_partition.setdefault((cluster, topic, partition), []).append((index, broker))
    out = {}
    for (cluster, topic, partition), slots in by_partition.items():
        brokers = [b for _, b in sorted(slots)]
        repeated = [b for b in brokers if brokers.count(b) > 1]
        name = f"{topic}-{partition}"
        if repeated:
            out[(cluster, topic, partition)] = (
                f"{name}: broker {repeated[0]} appears more than once in the replicas"
            )
        elif sorted(i for i, _ in slots) != list(range(len(slots))):
            n = len(slots)
            out[(cluster, topic, partition)] = (
                f"{name}: {n} replicas whose replica indexes are not 0 to {n - 1}, each once"
            )
    return out


def test_partition_problems_agree_with_a_plain_reference(spark: SparkSession) -> None:
    rng = np.random.default_rng(7)
    rows: list[tuple[str, str, int, int, int]] = []
    for p in range(3000):
        n = int(rng.integers(1, 6))
        brokers = rng.integers(1, 9, n) if rng.random() < 0.2 else rng.permutation(40)[:n] + 1
        indexes = np.arange(n)
        if rng.random() < 0.05:
            indexes[int(rng.integers(0, n))] = int(rng.integers(0, n + 1))
        rng.shuffle(indexes)
        cluster, topic = f"c{p % 3}", f"t{p % 7}"
        for i, b in zip(indexes.tolist(), brokers.tolist(), strict=True):
            rows.append((cluster, topic, p, i, b))
    annotated = spark.createDataFrame([(*r, None) for r in rows], ANNOTATED_DDL)
    found = {
        (r["cluster_id"], r["topic"], r["partition"]): r["_reason"]
        for r in v.partition_problems(spark, annotated)
    }
    expected = _reference(rows)
    assert 300 < len(expected) < 1500
    assert found == expected


def test_a_row_problem_rejects_its_partition_with_the_first_reason(spark: SparkSession) -> None:
    annotated = spark.createDataFrame(
        [
            ("c", "t", 0, 0, 1, None),
            ("c", "t", 0, 1, 2, "t-0: second"),
            ("c", "t", 0, 2, 3, "t-0: third"),
            ("c", "t", 1, 0, 1, None),
            ("c", None, 2, 0, 1, "replica row has no topic"),
            ("c", "u", 0, None, 1, "u-0: a replica has no replica_index"),
        ],
        ANNOTATED_DDL,
    )
    expected = spark.createDataFrame(
        [
            ("c", "t", 0, "t-0: second"),
            ("c", None, 2, "replica row has no topic"),
            ("c", "u", 0, "u-0: a replica has no replica_index"),
        ],
        v.PROBLEMS_DDL,
    )
    problems = spark.createDataFrame(v.partition_problems(spark, annotated), v.PROBLEMS_DDL)
    assertDataFrameEqual(problems, expected)
    assertDataFrameEqual(v.row_problems(annotated), expected)


def test_partition_flags_and_repeated_brokers(spark: SparkSession) -> None:
    rows = [
        ("c", "ok", 0, 0, 1),
        ("c", "ok", 0, 1, 2),
        ("c", "twice", 0, 0, 3),
        ("c", "twice", 0, 1, 3),
        ("c", "gap", 0, 0, 1),
        ("c", "gap", 0, 2, 2),
        ("c", "four", 0, 0, 1),
        ("c", "four", 0, 1, 2),
        ("c", "four", 0, 2, 3),
        ("c", "four", 0, 3, 2),
        ("c", "five", 0, 0, 1),
        ("c", "five", 0, 1, 2),
        ("c", "five", 0, 2, 3),
        ("c", "five", 0, 3, 4),
        ("c", "five", 0, 4, 5),
    ]
    annotated = spark.createDataFrame([(*r, None) for r in rows], ANNOTATED_DDL)
    # "twice" and "gap" are flagged by the numbers; "four" and "five" are over three
    # replicas and counted for the closer look, which finds broker 2 twice in "four".
    expected_flags = spark.createDataFrame(
        [
            ("flagged", "c", "twice", 0, 2, False, None),
            ("flagged", "c", "gap", 0, 2, True, None),
            ("many", None, None, None, None, None, 2),
        ],
        v.FLAGS_DDL,
    )
    assertDataFrameEqual(v.partition_flags(annotated), expected_flags)
    expected_repeated = spark.createDataFrame(
        [
            ("c", "twice", 0, "twice-0: broker 3 appears more than once in the replicas"),
            ("c", "four", 0, "four-0: broker 2 appears more than once in the replicas"),
        ],
        v.PROBLEMS_DDL,
    )
    assertDataFrameEqual(v.repeated_brokers(annotated), expected_repeated)
