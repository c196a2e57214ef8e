"""A cluster snapshot as the pipeline's input rows: broker, directory and replica rows as the
JSON files give them, a move in flight read as its target, several clusters as one input; and
the validated tables equal to those of the same cluster described in files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from rackwise.client import snapshot_tables
from rackwise.client.cluster_state import (
    BrokerState,
    ClusterSnapshot,
    ClusterStateError,
    LogDirState,
    PartitionState,
    ReassignmentState,
)
from rackwise.client.snapshot_tables import merged, read_live, snapshot_columns, summary
from rackwise.common import TopicPartition
from rackwise.pipeline.audit.rules import DomainRules, TopicRule
from rackwise.pipeline.ingest.local import LocalTables, read_source
from rackwise.pipeline.ingest.source import (
    LIVE_REPLICAS_SOURCE,
    InputSource,
    LiveCluster,
    live_clusters,
)

TB = 4_000_000_000_000
STORAGE_ERROR = 56


def partition(
    tp: str, replicas: tuple[int, ...], dirs: dict[int, str], size: int, **extra: Any
) -> tuple[TopicPartition, PartitionState]:
    topic, _, index = tp.rpartition("-")
    state = PartitionState(
        topic,
        int(index),
        replicas,
        replicas[0] if replicas else None,
        3,
        replicas,
        (),
        2,
        {b: size for b in dirs},
        dirs,
        **extra,
    )
    return TopicPartition(topic, int(index)), state


def snapshot(**changes: Any) -> ClusterSnapshot:
    """Brokers 1-3 (racks /dc1/r1, /dc1/r2, /dc2/r1), two directories each, broker 2's second
    one failed; orders-0 on 1,2 and orders-1 on 2,3; audit-0 on 3 with a future copy."""
    dirs = {
        1: (LogDirState("/d/1a", 0, TB, TB // 2), LogDirState("/d/1b", 0, TB, TB)),
        2: (LogDirState("/d/2a", 0, TB, TB), LogDirState("/d/2b", STORAGE_ERROR, None, None)),
        3: (LogDirState("/d/3a", 0, None, None), LogDirState("/d/3b", 0, TB, TB)),
    }
    partitions = dict(
        [
            partition("orders-0", (1, 2), {1: "/d/1a", 2: "/d/2a"}, 700),
            partition("orders-1", (2, 3), {2: "/d/2a", 3: "/d/3b"}, 500),
            partition("audit-0", (3,), {3: "/d/3a"}, 90, future_log_dir={3: "/d/3b"}),
        ]
    )
    values: dict[str, Any] = {
        "bootstrap": "h:1",
        "cluster_id": "Xc1",
        "controller_id": 1,
        "brokers": {
            b: BrokerState(b, "h", 9000 + b, rack)
            for b, rack in ((1, "/dc1/r1"), (2, "/dc1/r2"), (3, "/dc2/r1"))
        },
        "partitions": partitions,
        "log_dirs": dirs,
        "reassignments": {},
        "topic_configs": {"orders": {"min.insync.replicas": "2"}, "audit": {}},
    }
    values.update(changes)
    return ClusterSnapshot(**values)


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in table.to_pylist()]


def test_brokers_directories_and_replicas_as_the_files_give_them() -> None:
    columns = snapshot_columns(snapshot(), "east")
    assert columns.brokers == [
        ("east", 1, "/dc1/r1", [("/d/1a", TB, True), ("/d/1b", TB, True)], 0),
        ("east", 2, "/dc1/r2", [("/d/2a", TB, True), ("/d/2b", None, False)], 1),
        ("east", 3, "/dc2/r1", [("/d/3a", None, True), ("/d/3b", TB, True)], 2),
    ]
    assert rows(columns.replicas) == [
        ("east", "orders", 0, 0, 1, "/d/1a", 700, 0),
        ("east", "orders", 0, 1, 2, "/d/2a", 700, 0),
        ("east", "orders", 1, 0, 2, "/d/2a", 500, 1),
        ("east", "orders", 1, 1, 3, "/d/3b", 500, 1),
        ("east", "audit", 0, 0, 3, "/d/3a", 90, 2),
    ]
    assert columns.reported_dirs == [] and columns.rejects.rows == []


def test_a_move_in_flight_is_read_as_its_target() -> None:
    tp, state = partition("orders-1", (2, 3, 1), {2: "/d/2a", 3: "/d/3b", 1: "/d/1b"}, 500)
    state = PartitionState(**{**_fields(state), "size_bytes": {2: 500, 3: 500, 1: 120}})
    moving = ReassignmentState((2, 3, 1), adding=(1,), removing=(3,))
    taken = snapshot(partitions={**snapshot().partitions, tp: state}, reassignments={tp: moving})
    columns = snapshot_columns(taken, "east")
    moved = [r for r in rows(columns.replicas) if r[1:3] == ("orders", 1)]
    # broker 3 is on its way out; broker 1's copy (120 bytes so far) will be the full size
    assert moved == [
        ("east", "orders", 1, 0, 2, "/d/2a", 500, 1),
        ("east", "orders", 1, 1, 1, "/d/1b", 500, 1),
    ]
    assert summary(taken).endswith("1 move in flight (read as their targets)")


def _fields(state: PartitionState) -> dict[str, Any]:
    return {name: getattr(state, name) for name in state.__slots__}


def test_a_fenced_broker_without_directories_and_a_partition_without_replicas() -> None:
    brokers = {**snapshot().brokers, 4: BrokerState(4, "", -1, None, fenced=True)}
    tp, empty = partition("gone-0", (), {}, 0)
    taken = snapshot(brokers=brokers, partitions={**snapshot().partitions, tp: empty})
    columns = snapshot_columns(taken, "east")
    assert columns.brokers[-1] == ("east", 4, None, None, 3)
    assert [(r[1], r[3]) for r in columns.rejects.rows] == [
        (LIVE_REPLICAS_SOURCE, "partition gone-0 has no replicas")
    ]
    tables = read_source(InputSource.live_clusters([LiveCluster("h:1")], "east", None), columns)
    assert tables.rejected.column("reason").to_pylist() == ["partition gone-0 has no replicas"]
    assert (4, None) in [(r["broker_id"], r["rack"]) for r in tables.brokers.to_pylist()]


def test_several_clusters_are_one_input_with_distinct_ordinals() -> None:
    one = merged([snapshot_columns(snapshot(), "east"), snapshot_columns(snapshot(), "west")])
    assert [r[0] for r in one.brokers] == ["east"] * 3 + ["west"] * 3
    assert [r[4] for r in one.brokers] == list(range(6))
    table = one.replicas
    assert table.column("_ordinal").to_pylist() == [0, 0, 1, 1, 2, 3, 3, 4, 4, 5]
    tables = read_source(InputSource.live_clusters([], "default", None), one)
    counts = {
        c: tables.replicas.column("cluster_id").to_pylist().count(c) for c in ("east", "west")
    }
    assert counts == {"east": 5, "west": 5}
    assert rows(merged([]).replicas) == []


def test_the_topics_rules_are_the_inputs_topic_configs() -> None:
    configs = {
        "orders": {"min.insync.replicas": "2", "min.insync.racks": "2",
                   "leaders.preference": "ordered_racks:/dc1,/dc2"},
        "audit": {"min.insync.racks.level": "2"},
    }  # fmt: skip
    east = snapshot_columns(snapshot(topic_configs=configs), "east")
    assert east.topic_configs == [
        ("east", "audit", "min.insync.racks.level", "2"),
        ("east", "orders", "leaders.preference", "ordered_racks:/dc1,/dc2"),
        ("east", "orders", "min.insync.racks", "2"),
    ]
    both = merged([east, snapshot_columns(snapshot(), "west")])
    assert both.topic_configs == east.topic_configs
    rules = DomainRules.of({"min.insync.racks": "3"}, both.topic_configs)
    assert rules.rule("east", "orders").min_insync_racks == 2
    assert rules.rule("east", "audit") == TopicRule(3, 2)
    assert rules.rule("west", "orders").min_insync_racks == 3


def write_files(directory: Path) -> InputSource:
    """The cluster of :func:`snapshot` as a broker list, reassignment JSON and
    ``kafka-log-dirs`` output, written by hand."""
    brokers = [
        {"id": 1, "rack": "/dc1/r1", "log_dirs": [
            {"path": "/d/1a", "total_bytes": TB}, {"path": "/d/1b", "total_bytes": TB}]},
        {"id": 2, "rack": "/dc1/r2", "log_dirs": [
            {"path": "/d/2a", "total_bytes": TB},
            {"path": "/d/2b", "total_bytes": 0, "is_live": False}]},
        {"id": 3, "rack": "/dc2/r1", "log_dirs": [
            {"path": "/d/3a", "total_bytes": 0}, {"path": "/d/3b", "total_bytes": TB}]},
    ]  # fmt: skip
    assignment = {"version": 1, "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [1, 2]},
        {"topic": "orders", "partition": 1, "replicas": [2, 3]},
        {"topic": "audit", "partition": 0, "replicas": [3]},
    ]}  # fmt: skip

    def described(path: str, *replicas: tuple[str, int, bool]) -> dict[str, Any]:
        partitions = [{"partition": p, "size": s, "offsetLag": 0, "isFuture": f}
                      for p, s, f in replicas]  # fmt: skip
        return {"logDir": path, "error": None, "partitions": partitions}

    log_dirs = {"version": 1, "brokers": [
        {"broker": 1, "logDirs": [described("/d/1a", ("orders-0", 700, False))]},
        {"broker": 2, "logDirs": [described("/d/2a", ("orders-0", 700, False),
                                            ("orders-1", 500, False))]},
        {"broker": 3, "logDirs": [described("/d/3a", ("audit-0", 90, False)),
                                  described("/d/3b", ("orders-1", 500, False),
                                            ("audit-0", 0, True))]},
    ]}  # fmt: skip
    for name, document in (("b.json", brokers), ("a.json", assignment)):
        (directory / name).write_text(json.dumps(document))
    (directory / "l.txt").write_text(
        "Querying brokers for log directories information\n"
        "Received log directory information from brokers 1,2,3\n" + json.dumps(log_dirs) + "\n"
    )
    return InputSource.json_cluster(
        directory / "b.json", directory / "a.json", directory / "l.txt", "east"
    )


def test_the_same_tables_as_the_clusters_files(tmp_path: Path) -> None:
    """But for the capacities a broker list cannot leave unknown (0 there), the files and
    the snapshot give the same tables."""
    from_files = read_source(write_files(tmp_path))
    live = snapshot_columns(snapshot(), "east")
    from_cluster = read_source(InputSource.live_clusters([LiveCluster("h:1")], "east", None), live)
    assert rows(from_cluster.brokers) == rows(from_files.brokers)
    assert rows(from_cluster.replicas) == rows(from_files.replicas)
    assert _dirs(from_cluster) == [
        ("east", 1, "/d/1a", TB, True), ("east", 1, "/d/1b", TB, True),
        ("east", 2, "/d/2a", TB, True), ("east", 2, "/d/2b", None, False),
        ("east", 3, "/d/3a", None, True), ("east", 3, "/d/3b", TB, True),
    ]  # fmt: skip
    same = [(*r[:3], r[4]) for r in _dirs(from_files)]
    assert [(*r[:3], r[4]) for r in _dirs(from_cluster)] == same
    assert from_cluster.rejected.num_rows == from_files.rejected.num_rows == 0


def _dirs(tables: LocalTables) -> list[tuple[Any, ...]]:
    return sorted(rows(tables.log_dirs))


def test_the_bootstrap_flags_and_file(tmp_path: Path) -> None:
    listing = tmp_path / "clusters.txt"
    listing.write_text("# the fleet\neast = a:1,b:2\n\nc:3  # unnamed\n")
    assert live_clusters(["west=w:9"], str(listing)) == [
        LiveCluster("w:9", "west"),
        LiveCluster("a:1,b:2", "east"),
        LiveCluster("c:3", None),
    ]
    for bad, message in (
        ("west=w", "--bootstrap-server: 'west=w': expected [NAME=]HOST:PORT[,HOST:PORT]"),
        ("a b=w:1", "--bootstrap-server: 'a b=w:1': a cluster name has no blanks, ',' or '#'"),
        ("w:0", "--bootstrap-server: 'w:0': expected [NAME=]HOST:PORT[,HOST:PORT]"),
    ):
        try:
            live_clusters([bad], None)
        except ValueError as error:
            assert str(error) == message
        else:
            raise AssertionError(bad)
    (tmp_path / "empty.txt").write_text("# nothing\n")
    try:
        live_clusters([], str(tmp_path / "empty.txt"))
    except ValueError as error:
        assert str(error) == f"--bootstrap-servers-file {tmp_path / 'empty.txt'}: no cluster in it"
    else:
        raise AssertionError("an empty listing")


def test_each_cluster_read_in_turn_named_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[tuple[str, dict[str, str], int]] = []

    def read_cluster(bootstrap: str, config: dict[str, str], *, timeout_ms: int) -> Any:
        read.append((bootstrap, config, timeout_ms))
        return snapshot(bootstrap=bootstrap)

    monkeypatch.setattr(snapshot_tables, "read_cluster", read_cluster)
    lines: list[str] = []
    one = read_live([LiveCluster("h:1")], {"client.id": "x"}, 900, lines.append, "lab")
    assert {r[0] for r in one.brokers} == {"lab"}
    assert read == [("h:1", {"client.id": "x"}, 900)]
    assert re.fullmatch(r"read lab from h:1: 3 brokers, 3 partitions, 6 log dirs \(\d+\.\d s\)",
                        lines[0])  # fmt: skip
    # several clusters: the name given, else the cluster's own id, never --cluster-id's
    two = read_live([LiveCluster("h:1", "east"), LiveCluster("h:2")], {}, 900, lines.append, "lab")
    assert sorted({r[0] for r in two.brokers}) == ["Xc1", "east"]
    with pytest.raises(ClusterStateError) as caught:
        read_live([LiveCluster("h:1"), LiveCluster("h:2")], {}, 900, lines.append)
    assert str(caught.value) == "cluster Xc1 is given twice: by h:1 and by h:2"
