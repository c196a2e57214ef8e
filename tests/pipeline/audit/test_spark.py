"""The audit transforms on hand-worked fixtures, and against the pure reference on random ones."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from pyspark.sql import functions as F  # noqa: N812
from pyspark.testing import assertDataFrameEqual

from rackwise.common import IllegalArgumentException
from rackwise.pipeline import schema
from rackwise.pipeline.audit.spark import (
    RESULT_TABLES,
    AuditResult,
    audit_tables,
    enrich_replicas,
    local_checkpoint,
    rack_exposure,
    summarize,
    violating_signatures,
)
from tests.pipeline.audit.cases import (
    BROKERS,
    LOG_DIRS,
    REPLICAS,
    random_fleet,
    reference_exposure,
    reference_spread,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class Tables:
    brokers: DataFrame
    log_dirs: DataFrame
    replicas: DataFrame


def _tables(spark: SparkSession, brokers: list, log_dirs: list, replicas: list) -> Tables:
    return Tables(
        spark.createDataFrame(brokers, schema.BROKERS_DDL),
        spark.createDataFrame(log_dirs, schema.LOG_DIRS_DDL),
        spark.createDataFrame(replicas, schema.REPLICAS_DDL),
    )


@dataclass(frozen=True)
class Audited:
    """An audit, its output tables computed once and kept as local DataFrames (so that the
    assertions below run no further Spark job)."""

    result: AuditResult
    tables: dict[str, DataFrame]

    def __getattr__(self, name: str) -> DataFrame:
        return self.tables[name]


def _audit(
    spark: SparkSession, fleet: tuple[list, list, list], min_isr: int = 2, *, lazy: bool = False
) -> Audited:
    """``lazy``: the pure path (every output one lazy plan); else the default, the job's path
    (each shared table checkpointed as it is defined)."""
    tables = _tables(spark, *fleet)
    materialize = None if lazy else local_checkpoint
    result = audit_tables(tables, min_isr, materialize=materialize)
    local = {}
    for name in RESULT_TABLES:
        frame = result.table(name)
        local[name] = spark.createDataFrame(frame.collect(), frame.schema)
    return Audited(result, local)


@pytest.fixture(scope="module")
def hand(spark: SparkSession) -> Audited:
    return _audit(spark, (BROKERS, LOG_DIRS, REPLICAS))


@pytest.fixture(scope="module")
def fleet() -> tuple[list, list, list]:
    return random_fleet(7, num_clusters=60)


@pytest.fixture(scope="module")
def random_audit(spark: SparkSession, fleet: tuple[list, list, list]) -> Audited:
    # min ISR 3 here (the hand-worked fixture is audited with 2); the fleet has partitions of
    # four and five replicas, which take the aggregation's second, exact path
    assert max(sum(1 for r in fleet[2] if r[:3] == k[:3]) for k in fleet[2]) > 3
    return _audit(spark, fleet, min_isr=3)


def test_spread_violations_by_hand(spark: SparkSession, hand: Audited) -> None:
    expected = spark.createDataFrame(
        [
            ("c1", "t", 0, 0, "cluster", "/", 3, 2, 0),
            ("c1", "t", 0, 1, "dc", "/dc1", 2, 2, 0),
            ("c3", "v", 0, 0, "cluster", "/", 2, 2, 0),
        ],
        "cluster_id string, topic string, partition int, depth int, level string, node string, "
        "replicas long, max_child_replicas long, min_free_child_replicas long",
    )
    assertDataFrameEqual(hand.spread_violations, expected)


def test_exposure_by_hand(spark: SparkSession, hand: Audited) -> None:
    hit = hand.exposure.where("offline_if_lost > 0 or under_min_isr_if_lost > 0").drop(
        "below_min_insync_racks_if_lost", "leaders_leave_preference_if_lost"
    )
    expected = spark.createDataFrame(
        [
            ("c1", "dc", "/dc1", None, None, 1, 0, 1),
            ("c1", "rack", "/dc1/r1", None, None, 1, 0, 1),
            ("c1", "dc", "/dc3", None, None, 1, 1, 0),
            ("c1", "broker", "5", 5, None, 1, 1, 0),
            ("c1", "log_dir", "5:/d1", 5, "/d1", 1, 1, 0),
            ("c2", "broker", "1", 1, None, 1, 0, 1),
            ("c2", "broker", "2", 2, None, 1, 0, 1),
            ("c2", "log_dir", "1:/d1", 1, "/d1", 1, 0, 1),
            ("c3", "rack", "/rack1", None, None, 1, 1, 0),
            ("c3", "broker", "1", 1, None, 1, 0, 1),
            ("c3", "broker", "2", 2, None, 1, 0, 1),
            ("c3", "log_dir", "1:/d", 1, "/d", 1, 0, 1),
            ("c3", "log_dir", "2:/d", 2, "/d", 1, 0, 1),
        ],
        "cluster_id string, level string, domain string, broker_id int, log_dir string, "
        "partitions long, offline_if_lost long, under_min_isr_if_lost long",
    )
    assertDataFrameEqual(hit, expected)
    # every domain is listed, exposed or not: 3 dcs + 3 racks + 6 brokers + 12 dirs; 2 + 1;
    # 3 racks (rack1 and /rack1 are one) + 4 + 4; 2 + 2 + 2
    clusters = [r["cluster_id"] for r in hand.exposure.collect()]
    assert [clusters.count(c) for c in ("c1", "c2", "c3", "idle")] == [24, 3, 11, 6]


def test_load_by_hand(spark: SparkSession, hand: Audited) -> None:
    # brokers: replicas / leaders (replica_index 0) / bytes; capacity 2 x 100 in c1, unknown in c2
    brokers = hand.load.where("level = 'broker' and cluster_id != 'idle'").drop(
        "level", "log_dir", "is_live"
    )
    expected = spark.createDataFrame(
        [
            ("c1", "1", 1, 1, 1, 10, 200, 0.05),
            ("c1", "2", 2, 1, 0, 10, 200, 0.05),
            ("c1", "3", 3, 0, 0, 0, 200, 0.0),
            ("c1", "4", 4, 2, 1, 15, 200, 0.075),
            ("c1", "5", 5, 1, 0, 5, 200, 0.025),
            ("c1", "6", 6, 0, 0, 0, 200, 0.0),
            ("c2", "1", 1, 1, 1, 7, None, None),
            ("c2", "2", 2, 1, 0, 7, None, None),
            ("c3", "1", 1, 1, 1, 3, 100, 0.03),
            ("c3", "2", 2, 1, 0, 3, 100, 0.03),
            ("c3", "3", 3, 0, 0, 0, 100, 0.0),
            ("c3", "4", 4, 0, 0, 0, 100, 0.0),
        ],
        "cluster_id string, domain string, broker_id int, replicas long, leaders long, "
        "bytes long, total_bytes long, utilisation double",
    )
    assertDataFrameEqual(brokers, expected)
    # racks sum their brokers: /dc1 = brokers 1, 2, 3; /dc1/r2 is empty but listed
    racks = hand.load.where("level in ('dc', 'rack') and cluster_id != 'idle'").select(
        "domain", "replicas", "leaders", "bytes", "total_bytes"
    )
    expected_racks = spark.createDataFrame(
        [
            ("/dc1", 2, 1, 20, 600),
            ("/dc2", 2, 1, 15, 200),
            ("/dc3", 1, 0, 5, 200),
            ("/dc1/r1", 2, 1, 20, 400),
            ("/dc1/r2", 0, 0, 0, 200),
            ("/dc2/r1", 2, 1, 15, 200),
            ("/rack1", 2, 1, 6, 200),
            ("/rack2", 0, 0, 0, 100),
            ("/rack3", 0, 0, 0, 100),
        ],
        "domain string, replicas long, leaders long, bytes long, total_bytes long",
    )
    assertDataFrameEqual(racks, expected_racks)
    dead = hand.load.where("level = 'log_dir' and not is_live").select("domain", "replicas")
    assertDataFrameEqual(
        dead, spark.createDataFrame([("4:/d1", 1)], "domain string, replicas long")
    )


def test_skew_by_hand(spark: SparkSession, hand: Audited) -> None:
    # c1 brokers hold 1, 1, 0, 2, 1, 0 replicas: min 0, max 2, mean 5/6, max/mean 2.4
    row = hand.skew.where("cluster_id = 'c1' and level = 'broker' and metric = 'replicas'")
    expected = spark.createDataFrame(
        [("c1", "broker", "replicas", 6, 0.0, 2.0, 5 / 6, 2.4)],
        "cluster_id string, level string, metric string, domains long, min double, "
        "max double, mean double, max_over_mean double",
    )
    assertDataFrameEqual(row, expected)
    # a flat cluster has no rack level to measure
    levels = {r["level"] for r in hand.skew.where("cluster_id = 'c2'").collect()}
    assert levels == {"broker", "log_dir"}


def test_clusters_by_hand(spark: SparkSession, hand: Audited) -> None:
    expected = spark.createDataFrame(
        [
            ("c1", ["dc", "rack"], 6, 1, 12, 1, 2, 5, 0, 1, 1, 2, {"cluster": 1, "dc": 1}, 0, 0),
            ("c2", [], 2, 2, 1, 0, 1, 2, 0, 0, 0, 0, {}, 0, 0),
            ("c3", ["rack"], 4, 0, 4, 0, 1, 2, 0, 0, 1, 1, {"cluster": 1}, 0, 0),
            ("idle", ["rack"], 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, {}, 0, 0),
        ],
        "cluster_id string, rack_levels array<string>, brokers long, brokers_without_rack long, "
        "log_dirs long, failed_log_dirs long, partitions long, replicas long, offline_now long, "
        "under_min_isr_now long, partitions_with_spread_violations long, spread_violations long, "
        "spread_violations_by_level map<string,bigint>, below_min_insync_racks_now long, "
        "leaders_outside_preference long",
    )
    assertDataFrameEqual(hand.clusters, expected)


def test_summary_shape(hand: Audited) -> None:
    summary = summarize(hand.result)
    assert json.loads(json.dumps(summary, sort_keys=True)) == summary
    c1 = summary["clusters"]["c1"]
    assert c1["partitions"] == 2
    assert c1["replicas"] == 5
    assert c1["partitions_with_spread_violations"] == 1
    # every level of the cluster is present, exposed or not (runs diff level by level)
    assert c1["offline_if_lost"] == {
        "dc": {"/dc3": 1},
        "rack": {},
        "broker": {"5": 1},
        "log_dir": {"5:/d1": 1},
    }
    assert c1["under_min_isr_if_lost"] == {
        "dc": {"/dc1": 1},
        "rack": {"/dc1/r1": 1},
        "broker": {},
        "log_dir": {},
    }
    assert c1["exposed_domains"]["offline_if_lost"] == {
        "dc": 1,
        "rack": 0,
        "broker": 1,
        "log_dir": 1,
    }
    assert c1["max_offline_if_lost"] == c1["max_under_min_isr_if_lost"] == 1
    assert c1["skew"]["broker"]["replicas"]["max_over_mean"] == 2.4
    assert c1["skew"]["dc"]["bytes"] == {"min": 5, "max": 20, "mean": 13.3333, "max_over_mean": 1.5}
    assert c1["spread_violations_by_level"] == {"cluster": 1, "dc": 1}
    assert (c1["offline_now"], c1["under_min_isr_now"]) == (0, 1)
    assert summary["clusters"]["c2"]["offline_if_lost"] == {"broker": {}, "log_dir": {}}
    c3 = summary["clusters"]["c3"]
    assert c3["rack_levels"] == ["rack"]
    assert c3["offline_if_lost"] == {"rack": {"/rack1": 1}, "broker": {}, "log_dir": {}}
    assert c3["under_min_isr_if_lost"]["broker"] == {"1": 1, "2": 1}
    # most at risk first: c1 and c3 lose a partition to one failure, c1 is under min ISR now
    assert summary["fleet"]["worst_clusters"] == ["c1", "c3", "c2", "idle"]
    assert summary["fleet"]["replicas"] == 9


def test_summary_caps_domains_per_level(hand: Audited) -> None:
    c2 = summarize(hand.result, max_domains=1)["clusters"]["c2"]
    # two brokers are exposed; only the first (by count, then name) is listed, both counted
    assert c2["under_min_isr_if_lost"]["broker"] == {"1": 1}
    assert c2["exposed_domains"]["under_min_isr_if_lost"]["broker"] == 2


def test_result_tables_by_name(hand: Audited) -> None:
    assert [hand.result.table(n).columns[0] for n in RESULT_TABLES] == ["cluster_id"] * 5
    with pytest.raises(IllegalArgumentException, match="Unknown audit table 'nope'"):
        hand.result.table("nope")


def test_min_insync_replicas_must_be_positive(spark: SparkSession) -> None:
    tables = _tables(spark, BROKERS, LOG_DIRS, REPLICAS)
    with pytest.raises(IllegalArgumentException, match="at least 1, got 0"):
        audit_tables(tables, min_insync_replicas=0)


# --- random clusters against the pure reference -------------------------------------------


def test_spread_matches_reference(random_audit: Audited, fleet: tuple[list, list, list]) -> None:
    got = {
        (r["cluster_id"], r["partition"], r["depth"], r["node"], r["max_child_replicas"])
        for r in random_audit.spread_violations.collect()
    }
    expected = reference_spread(fleet[0], fleet[2])
    assert len(expected) > 10  # the random fleet does exercise the check
    assert got == expected


def test_exposure_matches_brute_force(
    random_audit: Audited, fleet: tuple[list, list, list]
) -> None:
    rows = random_audit.exposure.where("partitions > 0").collect()
    got = {
        (
            r["cluster_id"],
            r["domain"],
            r["partitions"],
            r["offline_if_lost"],
            r["under_min_isr_if_lost"],
        )
        for r in rows
    }
    assert got == reference_exposure(fleet, 3)


def test_load_matches_brute_force(random_audit: Audited, fleet: tuple[list, list, list]) -> None:
    got = {
        (r["cluster_id"], r["domain"]): (r["replicas"], r["leaders"], r["bytes"])
        for r in random_audit.load.where("level = 'broker'").collect()
    }
    expected = {(c, str(b)): (0, 0, 0) for c, b, _ in fleet[0]}
    for c, _, _, index, b, _, size in fleet[2]:
        n, lead, total = expected[(c, str(b))]
        expected[(c, str(b))] = (n + 1, lead + (index == 0), total + size)
    assert got == expected


def test_lazy_path_gives_the_same_tables(spark: SparkSession, hand: Audited) -> None:
    # materialize=None: one lazy plan per output, nothing checkpointed (the pure composition;
    # it always takes the path for partitions of more than three replicas). Exposure is the
    # deepest plan (placements, fragile partitions, rack exposure, the domain table).
    lazy = audit_tables(_tables(spark, BROKERS, LOG_DIRS, REPLICAS), materialize=None)
    assertDataFrameEqual(lazy.table("exposure"), hand.tables["exposure"])


# Node ids are RackTree's, breadth first: / 0; /dc1 1, /dc2 2, /dc3 3, broker 6 (a leaf) 4;
# /dc1/r1 5, /dc1/r2 6; /dc2/r1 7; ... So brokers 1, 2 sit in node 5, broker 4 in 7, broker 5
# in 3 (/dc3), broker 6 in 0 (the root).
PLACEMENTS_DDL = "cluster_key int, leaves array<int>, live_leaves array<int>, partitions long"


def test_tree_node_ids_are_rack_trees(hand: Audited) -> None:
    nodes = {
        r["path"]: r["node_id"]
        for r in hand.result.small.rack_nodes.collect()
        if r["cluster_key"] == 1
    }
    assert nodes == {
        "/": 0,
        "/dc1": 1,
        "/dc2": 2,
        "/dc3": 3,
        "/dc1/r1": 5,
        "/dc1/r2": 6,
        "/dc2/r1": 7,
    }


def test_violating_signatures_transform(spark: SparkSession, hand: Audited) -> None:
    # [5, 5, 7]: t-0 (see the fixture): violations at / and /dc1.
    # [3, 7]: one replica in /dc3, one in /dc2/r1: / holds dc2 1, dc3 1, dc1 0, b6 0: fine.
    # [5, 6]: /dc1/r1 and /dc1/r2: / holds dc1 2, the others 0: a violation at / only.
    placements = spark.createDataFrame(
        [(1, [5, 5, 7], [5, 5, 7], 1), (1, [3, 7], [3], 1), (1, [5, 6], [5, 6], 4)],
        PLACEMENTS_DDL,
    )
    got = violating_signatures(placements, hand.result.small.rack_nodes)
    expected = spark.createDataFrame(
        [
            (1, [5, 5, 7], 0, "cluster", "/", 3, 2, 0),
            (1, [5, 5, 7], 1, "dc", "/dc1", 2, 2, 0),
            (1, [5, 6], 0, "cluster", "/", 2, 2, 0),
        ],
        "cluster_key int, leaves array<int>, depth int, level string, node string, "
        "replicas long, max_child_replicas long, min_free_child_replicas long",
    )
    assertDataFrameEqual(got.select("cluster_key", "leaves", F.inline("violations")), expected)


def test_rack_exposure_transform(spark: SparkSession, hand: Audited) -> None:
    # 4 partitions live on [5, 6] (both in /dc1): losing /dc1 takes them offline; losing
    # /dc1/r1 or /dc1/r2 leaves one live replica, under min ISR 2.
    # 1 partition live on [3]: /dc3 holds its only live replica.
    placements = spark.createDataFrame(
        [(1, [5, 6], [5, 6], 4), (1, [3, 7], [3], 1)], PLACEMENTS_DDL
    )
    got = rack_exposure(placements, hand.result.small.rack_nodes, 2)
    expected = spark.createDataFrame(
        [("/dc1", 4, 4, 0), ("/dc1/r1", 4, 0, 4), ("/dc1/r2", 4, 0, 4), ("/dc3", 1, 1, 0)],
        "node string, partitions long, offline_if_lost long, under_min_isr_if_lost long",
    )
    assertDataFrameEqual(got.drop("cluster_key"), expected)


def test_transforms_select_their_columns(spark: SparkSession, hand: Audited) -> None:
    # the schema contract: extra input columns do not leak into a transform's output
    small = hand.result.small
    replicas = spark.createDataFrame(REPLICAS, schema.REPLICAS_DDL)
    plain = enrich_replicas(replicas, small.broker_leaves, small.log_dir_keys)
    wider = enrich_replicas(
        replicas.withColumn("noise", F.lit("x")), small.broker_leaves, small.log_dir_keys
    )
    assert wider.columns == plain.columns
    assertDataFrameEqual(wider, plain)


def test_cluster_without_replicas(hand: Audited) -> None:
    summary = summarize(hand.result)["clusters"]["idle"]
    assert (summary["partitions"], summary["replicas"]) == (0, 0)
    assert summary["offline_if_lost"] == {"rack": {}, "broker": {}, "log_dir": {}}
    assert summary["skew"]["broker"]["replicas"] == {
        "min": 0,
        "max": 0,
        "mean": 0,
        "max_over_mean": None,
    }


def test_partitions_table_counts_live_replicas(hand: Audited) -> None:
    rows = hand.result.partitions.select(
        "topic", "partition", "replicas", "live_replicas", F.size("leaves").alias("n")
    )
    expected = [("t", 0, 3, 3, 3), ("t", 1, 2, 1, 2), ("u", 0, 2, 2, 2), ("v", 0, 2, 2, 2)]
    assert sorted(tuple(r) for r in rows.collect()) == expected
