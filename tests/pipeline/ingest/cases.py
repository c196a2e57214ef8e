"""Ingestion cases both engines are checked against: the examples, a JSON cluster and a
Parquet fleet with one of everything wrong, each with what should be kept and rejected."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "pipeline"
TB = 4_000_000_000_000

# examples/pipeline: four brokers with two directories each; broker 3's /data/d2 has failed
# (the broker list and kafka-log-dirs both say so); orders-2 names /data/d2 for its replica on
# broker 1; broker 4 is moving orders-1 to /data/d2 (a future replica, not a placement).
EXAMPLE_LOG_DIRS = [
    ("default", broker, path, TB, not (broker == 3 and path == "/data/d2"))
    for broker in (1, 2, 3, 4)
    for path in ("/data/d1", "/data/d2")
]
EXAMPLE_REPLICAS = [
    ("default", "orders", 0, 0, 1, "/data/d1", 1_048_576),
    ("default", "orders", 0, 1, 3, "/data/d1", 1_048_576),
    ("default", "orders", 1, 0, 2, "/data/d1", 524_288),
    ("default", "orders", 1, 1, 4, "/data/d1", 524_288),
    ("default", "orders", 2, 0, 3, "/data/d1", 2_097_152),
    ("default", "orders", 2, 1, 1, "/data/d2", 2_097_152),
    ("default", "payments", 0, 0, 4, "/data/d2", 8_388_608),
    ("default", "payments", 0, 1, 2, "/data/d2", 8_388_608),
]


# A cluster with one of everything wrong. Broker 2's rack "dc2" is the path /dc2; broker 5
# declares no directory and none is reported, so the /x1 the assignment names for it is taken.
BAD_BROKERS = """[
 {"id":1,"rack":"/dc1/r1","log_dirs":[{"path":"/d1","total_bytes":100}]},
 {"id":2,"rack":"dc2","log_dirs":[{"path":"/d1","total_bytes":100}]},
 {"id":3,"rack":"/dc1//r2"},
 {"id":1,"rack":"/dc1/r9"},
 {"id":4,"log_dirs":[{"path":"rel","total_bytes":1}]},
 {"id":5,"rack":"/dc2/r1"}]"""
BAD_ASSIGNMENT = """{"version":1,"partitions":[
 {"topic":"ok","partition":0,"replicas":[1,2]},
 {"topic":"unknown","partition":0,"replicas":[1,9]},
 {"topic":"rejected","partition":0,"replicas":[2,3]},
 {"topic":"twice","partition":0,"replicas":[1,1]},
 {"topic":"ok","partition":0,"replicas":[2,1]},
 {"topic":"nodir","partition":0,"replicas":[1,2],"log_dirs":["/d9","any"]},
 {"topic":"named","partition":0,"replicas":[5,1],"log_dirs":["/x1","any"]},
 {"topic":"bad","partition":"0","replicas":[1]}]}"""
_E = '"offsetLag":0,"isFuture":false'
BAD_LOG_DIRS = (
    '{"brokers":[{"broker":1,"logDirs":[{"partitions":['
    f'{{"partition":"ok-0","size":10,{_E}}},{{"partition":"stray-0","size":5,{_E}}},'
    f'{{"partition":"neg-0","size":-1,{_E}}}],"error":null,"logDir":"/d1"}}]}},'
    f'{{"broker":2,"logDirs":[{{"partitions":[{{"partition":"ok-0","size":10,{_E}}}],'
    '"error":null,"logDir":"/d1"},{"partitions":[],"error":null,"logDir":"/d7"}]},'
    '{"broker":8,"logDirs":[{"partitions":[],"error":null,"logDir":"/d1"}]}],"version":1}'
)


def replica_record(topic: str, index: int, broker: int, log_dir: str | None = None) -> str:
    return json.dumps(
        {
            "cluster_id": "default",
            "topic": topic,
            "partition": 0,
            "replica_index": index,
            "broker_id": broker,
            "log_dir": log_dir,
            "size_bytes": None,
        },
        separators=(",", ":"),
    )


def json_rejected(b: str, a: str, d: str) -> list[tuple[str, str, str]]:
    """The rejected rows (source, record, reason) of the bad JSON cluster, its files at b, a, d."""
    rack = (
        "Broker 3 has a malformed rack path '/dc1//r2': empty component (a doubled or trailing '/')"
    )
    unknown = "unknown-0: replica on broker 9, which is not in the broker list"
    dropped = "rejected-0: replica on broker 3, which was rejected from the broker list"
    stray = (
        "kafka-log-dirs reports a replica of stray-0 on broker 1 that the assignment does not "
        "place there"
    )
    rejected = [
        (
            b,
            '{"id":1,"rack":"/dc1/r9"}',
            "broker list JSON: [3].id: broker id 1 is already used by [0]",
        ),
        (
            b,
            '{"id":4,"log_dirs":[{"path":"rel","total_bytes":1}]}',
            'broker list JSON: [4].log_dirs[0].path: "rel" is not an absolute path',
        ),
        (b, '{"cluster_id":"default","broker_id":3,"rack":"/dc1//r2","log_dirs":[]}', rack),
        (
            a,
            '{"topic":"twice","partition":0,"replicas":[1,1]}',
            "reassignment JSON: partitions[3].replicas: broker 1 appears more than once in [1,1]",
        ),
        (
            a,
            '{"topic":"ok","partition":0,"replicas":[2,1]}',
            "reassignment JSON: partitions[4]: partition ok-0 is already listed at partitions[0]",
        ),
        (
            a,
            '{"topic":"bad","partition":"0","replicas":[1]}',
            'reassignment JSON: partitions[7].partition: expected a 32-bit integer, got "0"',
        ),
        (a, replica_record("unknown", 0, 1), unknown),
        (a, replica_record("unknown", 1, 9), unknown),
        (a, replica_record("rejected", 0, 2), dropped),
        (a, replica_record("rejected", 1, 3), dropped),
        (a, replica_record("nodir", 0, 1, "/d9"), "nodir-0: broker 1 has no log directory /d9"),
        (a, replica_record("nodir", 1, 2), "nodir-0: broker 1 has no log directory /d9"),
        (
            d,
            '{"partition":"neg-0","size":-1,"offsetLag":0,"isFuture":false}',
            "log-dirs JSON: brokers[0].logDirs[0].partitions[2].size: must be at least 0, got -1",
        ),
        (
            d,
            '{"broker_id":1,"log_dir":"/d1","topic":"stray","partition":0,"size_bytes":5}',
            stray,
        ),
        (
            d,
            '{"cluster_id":"default","broker_id":2,"log_dir":"/d7","is_live":true}',
            "broker 2 has no log directory /d7 in the broker list",
        ),
        (
            d,
            '{"cluster_id":"default","broker_id":8,"log_dir":"/d1","is_live":true}',
            "log directory /d1 of broker 8, which is not in the broker list",
        ),
    ]
    return rejected


def write_fleet(root: Path, brokers: list[dict[str, object]], replicas: pa.Table) -> None:
    (root / "brokers").mkdir(parents=True)
    (root / "replicas").mkdir()
    broker_schema = pa.schema(
        [
            ("cluster_id", pa.string()),
            ("broker_id", pa.int32()),
            ("rack", pa.string()),
            (
                "log_dirs",
                pa.list_(
                    pa.struct(
                        [
                            ("path", pa.string()),
                            ("total_bytes", pa.int64()),
                            ("is_live", pa.bool_()),
                        ]
                    )
                ),
            ),
        ]
    )
    pq.write_table(pa.Table.from_pylist(brokers, broker_schema), root / "brokers" / "b.parquet")
    pq.write_table(replicas, root / "replicas" / "r.parquet")


def _dirs(*entries: tuple[str | None, int | None, bool | None]) -> list[dict[str, object]]:
    return [{"path": p, "total_bytes": t, "is_live": live} for p, t, live in entries]


FLEET_BROKERS = [
    {"cluster_id": "c1", "broker_id": 1, "rack": "/a/r1", "log_dirs": _dirs(("/d1", 100, True))},
    {"cluster_id": "c1", "broker_id": 2, "rack": "/a/r2", "log_dirs": _dirs(("/d1", 100, None))},
    {"cluster_id": "c1", "broker_id": 2, "rack": "/a/r3", "log_dirs": []},
    {"cluster_id": "c1", "broker_id": -1, "rack": "/a/r1", "log_dirs": []},
    {"cluster_id": "c1", "broker_id": 3, "rack": "/a/r1", "log_dirs": _dirs(("/d1", -5, True))},
    {
        "cluster_id": "c1",
        "broker_id": 4,
        "rack": "/a/r1",
        "log_dirs": _dirs(("/d1", 1, True), ("/d1", 2, True)),
    },
    {"cluster_id": "c1", "broker_id": 5, "rack": "/ a/r1", "log_dirs": None},
    {"cluster_id": "c2", "broker_id": 1, "rack": None, "log_dirs": _dirs(("d1", 1, True))},
]
# (topic, partition, replica_index, broker_id, log_dir, size_bytes) in cluster c1
FLEET_REPLICAS = [
    ("t", 0, 0, 1, "/d1", 5),
    ("t", 0, 1, 2, "/d1", 5),
    ("t", 1, 0, 1, "/d1", -3),
    ("t", 1, 1, 2, "/d1", 5),
    ("t", 2, 0, 1, "/d1", 5),
    ("t", 2, 1, 1, "/d1", 5),
    ("t", 3, 0, 1, "/d1", 5),
    ("t", 3, 2, 2, "/d1", 5),
    ("t", 4, 0, 1, "/d1", 5),
    ("t", 4, 1, 2, "/d1", 5),
    ("t", 4, 2, 1, "/d1", 5),
    ("t", 4, 3, 2, "/d1", 5),
    (None, 0, 0, 1, "/d1", 5),
    ("t", 5, 0, 1, "/d9", 5),
    ("t", 6, 0, 1, "d1", 5),
    ("t", 7, 0, 3, None, None),
    ("t", 8, 0, 7, None, None),
    ("t", 9, 0, 2, "/d1", 1),
    ("t", 9, 1, 1, "/d1", 1),
    ("t", 9, 2, 2, "/d1", 1),
    ("t", -1, 0, 1, "/d1", 1),
    ("t", 10, None, 1, "/d1", 1),
]


def fleet_replicas_table() -> pa.Table:
    """FLEET_REPLICAS as cluster c1's replicas dataset."""
    columns = list(zip(*FLEET_REPLICAS, strict=True))
    table = pa.table(
        {
            "cluster_id": pa.array(["c1"] * len(FLEET_REPLICAS)),
            "topic": pa.array(columns[0], pa.string()),
            "partition": pa.array(columns[1], pa.int32()),
            "replica_index": pa.array(columns[2], pa.int32()),
            "broker_id": pa.array(columns[3], pa.int32()),
            "log_dir": pa.array(columns[4], pa.string()),
            "size_bytes": pa.array(columns[5], pa.int64()),
        }
    )
    return table


FLEET_BROKER_REASONS = {
    "broker 2 is listed more than once; the first entry is kept",
    "broker id -1 is negative",
    "broker 3: log directory /d1 has a negative total_bytes -5",
    "broker 4: a log directory is listed more than once",
    "Broker 5 has a malformed rack path '/ a/r1': component ' a' has leading or trailing blanks",
    'broker 1: log directory "d1" is not an absolute path',
}

FLEET_REPLICA_REASONS = {
    "t-1: the replica on broker 1 has a negative size -3",
    "t-2: broker 1 appears more than once in the replicas",
    "t-3: 2 replicas whose replica indexes are not 0 to 1, each once",
    "t-4: broker 1 appears more than once in the replicas",
    "replica row has no topic",
    "t-5: broker 1 has no log directory /d9",
    't-6: log directory "d1" of the replica on broker 1 is not an absolute path',
    "t-7: replica on broker 3, which was rejected from the broker list",
    "t-8: replica on broker 7, which is not in the broker list",
    "t-9: broker 2 appears more than once in the replicas",
    "t--1: partition -1 is negative",
    "t-10: a replica has no replica_index",
}
