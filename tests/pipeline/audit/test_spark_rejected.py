"""The audit of what ingestion hands it: a cluster read from Kafka's JSON files, with a
partition that ingestion rejects (a replica on a broker the cluster does not have)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from rackwise.pipeline.audit.spark import audit_tables, summarize
from rackwise.pipeline.ingest.spark import read_cluster

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Brokers 1 ("rack1", a one-level name), 2 ("/rack1": the same rack), 3 (no rack).
# t-0 on 1, 3: fine. t-1 on 2, 9: broker 9 is unknown, so ingestion rejects the partition
# whole, and the audit never sees it: 1 partition, 2 replicas, nothing on broker 9.
BROKERS = [
    {"id": 1, "rack": "rack1", "log_dirs": [{"path": "/d1", "total_bytes": 1000}]},
    {"id": 2, "rack": "/rack1", "log_dirs": [{"path": "/d1", "total_bytes": 1000}]},
    {"id": 3, "rack": None, "log_dirs": [{"path": "/d1", "total_bytes": 1000}]},
]
ASSIGNMENT = {
    "version": 1,
    "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 3], "log_dirs": ["any", "any"]},
        {"topic": "t", "partition": 1, "replicas": [2, 9], "log_dirs": ["any", "any"]},
    ],
}


def test_rejected_partition_is_not_audited(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "brokers.json").write_text(json.dumps(BROKERS))
    (tmp_path / "assignment.json").write_text(json.dumps(ASSIGNMENT))
    tables = read_cluster(spark, tmp_path / "brokers.json", tmp_path / "assignment.json")
    reasons = [r["reason"] for r in tables.rejected.collect()]
    assert len(reasons) == 2  # both replicas of t-1, each with the partition's reason
    assert all("t-1" in r and "9" in r for r in reasons)
    result = audit_tables(tables)
    summary = summarize(result)["clusters"]["default"]
    assert (summary["partitions"], summary["replicas"]) == (1, 2)
    # /rack1 holds brokers 1 and 2; broker 3, without a rack, is a domain beside it
    assert summary["rack_levels"] == ["rack"]
    assert (summary["brokers"], summary["brokers_without_rack"]) == (3, 1)
    assert summary["offline_if_lost"]["rack"] == {}
    assert summary["under_min_isr_if_lost"]["rack"] == {"/rack1": 1}
    load = {
        r["domain"]: r["replicas"]
        for r in result.load.where("level in ('broker', 'rack')").collect()
    }
    assert load == {"/rack1": 1, "1": 1, "2": 0, "3": 1}
