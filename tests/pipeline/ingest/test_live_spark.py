"""A running cluster's rows on Spark: the snapshot of ``tests/client/test_snapshot_tables.py``
validated by the Spark reader gives the tables its files give there, and the tables the
in-process reader gives."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rackwise.client.snapshot_tables import snapshot_columns
from rackwise.pipeline.ingest import local
from rackwise.pipeline.ingest.source import InputSource, LiveCluster
from rackwise.pipeline.ingest.spark import read_source
from tests.client.test_snapshot_tables import snapshot, write_files

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _rows(frame: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in frame.collect()), key=repr)


def test_spark_validates_a_snapshot_as_the_clusters_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    source = InputSource.live_clusters([LiveCluster("h:1")], "east", None)
    columns = snapshot_columns(snapshot(), "east")
    live = read_source(spark, source, columns)
    files = read_source(spark, write_files(tmp_path))
    in_process = local.read_source(source, snapshot_columns(snapshot(), "east"))
    assert _rows(live.brokers) == _rows(files.brokers)
    assert _rows(live.replicas) == _rows(files.replicas)
    assert [r[:3] for r in _rows(live.log_dirs)] == [r[:3] for r in _rows(files.log_dirs)]
    for name in ("brokers", "log_dirs", "replicas"):
        expected = sorted(
            (tuple(r.values()) for r in getattr(in_process, name).to_pylist()), key=repr
        )
        assert _rows(getattr(live, name)) == expected, name
    assert live.rejected.count() == 0
