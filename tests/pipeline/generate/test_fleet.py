"""The synthetic fleet: deterministic, realistic in the ways the audit and planner care about,
and the same cluster in both input forms."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F  # noqa: N812
from pyspark.testing import assertDataFrameEqual

from rackwise.common import IllegalArgumentException
from rackwise.formats.brokers import format_broker_list, parse_broker_list
from rackwise.formats.log_dirs import STORAGE_ERROR, format_log_dirs, parse_log_dirs
from rackwise.formats.reassignment import format_reassignment, parse_reassignment
from rackwise.pipeline.generate import _synthetic, generate_fleet
from rackwise.pipeline.generate import fleet as generate
from rackwise.pipeline.ingest.spark import read_cluster, read_fleet
from rackwise.topology import RackTree, spread_violations

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _replicas(root: Path) -> pd.DataFrame:
    """The replicas dataset with plain string columns (Parquet keeps them dictionary-coded)."""
    frame = pq.read_table(root / "replicas").to_pandas()
    return frame.astype({"cluster_id": str, "topic": str, "log_dir": str})


def _fleet(root: Path, **kwargs: object) -> generate.FleetSummary:
    args: dict[str, object] = {
        "clusters": 2,
        "brokers": 13,
        "partitions": 400,
        "topology": "dc=3,rack=2",
        "seed": 5,
    }
    args.update(kwargs)
    return generate_fleet(root, **args)  # type: ignore[arg-type]


def test_same_seed_same_fleet_other_seed_other_fleet(tmp_path: Path) -> None:
    first, second, _ = (_fleet(tmp_path / n, seed=s) for n, s in (("a", 5), ("b", 5), ("c", 6)))
    assert first.replicas == second.replicas == 2 * 400 * 3
    for dataset in ("brokers", "replicas"):
        a = pq.read_table(tmp_path / "a" / dataset)
        assert a.equals(pq.read_table(tmp_path / "b" / dataset))
        assert not a.equals(pq.read_table(tmp_path / "c" / dataset))
    for name in ("brokers.json", "assignment.json", "log_dirs.json"):
        text = (tmp_path / "a" / "json" / "cluster-000" / name).read_bytes()
        assert text == (tmp_path / "b" / "json" / "cluster-000" / name).read_bytes()
    assert first.json_clusters == ("cluster-000", "cluster-001")


def test_json_form_is_what_kafkas_tools_print(tmp_path: Path) -> None:
    _fleet(tmp_path)
    directory = tmp_path / "json" / "cluster-001"
    assignment = (directory / "assignment.json").read_text()
    assert format_reassignment(parse_reassignment(assignment)) == assignment
    log_dirs = (directory / "log_dirs.json").read_text()
    report = parse_log_dirs(log_dirs)
    assert format_log_dirs(report) == log_dirs
    brokers = (directory / "brokers.json").read_text()
    assert format_broker_list(parse_broker_list(brokers)) == brokers
    dirs = [d for b in report.brokers for d in b.log_dirs]
    assert sum(d.error == STORAGE_ERROR for d in dirs) == 1
    futures = [r for d in dirs for r in d.replicas if r.is_future]
    assert len(futures) == 3
    named = [e for e in parse_reassignment(assignment).partitions if e.log_dirs is not None]
    assert named, "replicas in the failed directory are named in the assignment"


def test_the_fleet_has_what_an_audit_should_find(tmp_path: Path) -> None:
    _fleet(tmp_path, clusters=1, brokers=40, partitions=4000)
    brokers = pq.read_table(tmp_path / "brokers").to_pylist()
    replicas = _replicas(tmp_path)
    per_rack = Counter(b["rack"] for b in brokers)
    assert len(per_rack) == 6 and len(set(per_rack.values())) > 1, "uneven racks"
    failed = [
        (b["broker_id"], d["path"]) for b in brokers for d in b["log_dirs"] if not d["is_live"]
    ]
    assert len(failed) == 1
    on_failed = replicas[(replicas.broker_id == failed[0][0]) & (replicas.log_dir == failed[0][1])]
    assert len(on_failed) > 0 and on_failed.size_bytes.isna().all()
    share = replicas.groupby("broker_id").log_dir.apply(lambda d: (d == "/data/d1").mean())
    assert share.max() > 0.7 and share.median() < 0.6, "one skewed disk"
    sizes = replicas.drop_duplicates(["topic", "partition"]).size_bytes.dropna()
    assert sizes.max() > 50 * sizes.median(), "Zipf-like topic sizes"
    tree = RackTree.build([(b["broker_id"], b["rack"], False) for b in brokers])
    ordered = replicas.sort_values(["topic", "partition", "replica_index"])
    assignment = ordered.groupby(["topic", "partition"], sort=False).broker_id.apply(list)
    violations = {v.partition for v in spread_violations(tree, list(assignment))}
    assert 5 <= len(violations) <= 60, "about one partition in 200 misplaced"
    assert all(len(set(row)) == len(row) for row in assignment)


def test_chunks_keep_every_partition_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generate, "CHUNK_PARTITIONS", 7)
    monkeypatch.setattr(generate, "ROWS_PER_FILE", 50)
    _fleet(tmp_path, clusters=1, partitions=100, replication_factor=4, log_dirs_per_broker=1)
    replicas = _replicas(tmp_path)
    assert len(list((tmp_path / "replicas").iterdir())) > 1
    per_partition = replicas.groupby(["topic", "partition"])
    assert per_partition.ngroups == 100
    assert (per_partition.replica_index.apply(sorted).map(tuple) == (0, 1, 2, 3)).all()
    assert (per_partition.broker_id.nunique() == 4).all()
    assert (replicas.log_dir == "/data/d1").all()


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        ("dc=3,rack", "topology 'dc=3,rack': expected levels such as dc=3,rack=2, got 'rack'"),
        ("dc=0", "topology 'dc=0': expected levels such as dc=3,rack=2, got 'dc=0'"),
        ("dc=2,dc=2", "topology 'dc=2,dc=2': level 'dc' appears twice"),
    ],
)
def test_topology_errors(topology: str, message: str) -> None:
    with pytest.raises(IllegalArgumentException) as caught:
        _synthetic.parse_topology(topology)
    assert str(caught.value) == message


def test_refuses_to_overwrite_and_impossible_clusters(tmp_path: Path) -> None:
    _fleet(tmp_path / "f", clusters=1, partitions=5)
    with pytest.raises(IllegalArgumentException, match="already exists"):
        _fleet(tmp_path / "f", clusters=1, partitions=5)
    with pytest.raises(IllegalArgumentException, match="--replication-factor 4 needs at least"):
        _fleet(tmp_path / "g", brokers=3, replication_factor=4)


def test_more_racks_than_brokers_and_a_single_level(tmp_path: Path) -> None:
    _fleet(tmp_path / "a", clusters=1, brokers=4, partitions=50, topology="rack=9")
    racks = {b["rack"] for b in pq.read_table(tmp_path / "a" / "brokers").to_pylist()}
    assert len(racks) == 4 and all(r.startswith("/rack") for r in racks)
    sizes = np.array(pq.read_table(tmp_path / "a" / "replicas")["broker_id"])
    assert set(sizes.tolist()) <= {1, 2, 3, 4}


def test_both_forms_read_into_the_same_tables(spark: SparkSession, tmp_path: Path) -> None:
    _fleet(tmp_path, clusters=2, brokers=9, partitions=60)
    fleet = read_fleet(spark, tmp_path)
    assert fleet.rejected.count() == 0
    directory = tmp_path / "json" / "cluster-001"
    one = read_cluster(
        spark,
        directory / "brokers.json",
        directory / "assignment.json",
        directory / "log_dirs.json",
        "cluster-001",
    )
    assert one.rejected.count() == 0
    for name in ("brokers", "log_dirs", "replicas"):
        mine = getattr(fleet, name).filter(F.col("cluster_id") == "cluster-001")
        assertDataFrameEqual(getattr(one, name), mine)
    assert fleet.replicas.count() == 2 * 60 * 3


@settings(max_examples=200, deadline=None)
@given(
    num_partitions=st.one_of(st.integers(1, 300), st.integers(300, 2_000_000)),
    seed=st.integers(0, 2**32 - 1),
)
def test_topic_sizes_cover_every_partition_exactly(num_partitions: int, seed: int) -> None:
    names, first, mean_bytes = _synthetic._topics(np.random.default_rng(seed), num_partitions)
    sizes = np.diff(np.append(first, num_partitions))
    assert len(names) == len(set(names)) == first.size == mean_bytes.size >= 1
    assert list(names) == sorted(names)
    assert first[0] == 0
    assert (sizes >= 1).all(), "every topic has at least one partition"
    assert int(sizes.sum()) == num_partitions
    assert (mean_bytes > 0).all()
