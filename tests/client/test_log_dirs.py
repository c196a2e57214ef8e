"""DescribeLogDirs answers made into the report ``kafka-log-dirs.sh`` prints, in Java's
orders, and KIP-113's shape."""

from __future__ import annotations

import json
from typing import Any

from rackwise.client.log_dirs import (
    broker_log_dirs,
    broker_set,
    kip113_document,
)
from rackwise.common.java import java_hashmap_order, java_string_hash
from rackwise.formats.log_dirs import parse_log_dirs
from rackwise.protocol import make, response_class

STORAGE_ERROR = "org.apache.kafka.common.errors.KafkaStorageException"


def answer(*dirs: tuple[str, int, list[tuple[str, int, int, int, bool]]]) -> Any:
    """A DescribeLogDirs v4 answer: (path, error code, [(topic, partition, size, lag,
    future)])."""
    return make(
        response_class(35, 4),
        {
            "throttle_time": 0,
            "error_code": 0,
            "results": [
                {
                    "error_code": code,
                    "log_dir": path,
                    "topics": [
                        {
                            "name": topic,
                            "partitions": [
                                {
                                    "partition_index": p,
                                    "partition_size": size,
                                    "offset_lag": lag,
                                    "is_future_key": future,
                                }
                            ],
                        }
                        for topic, p, size, lag, future in replicas
                    ],
                    "total_bytes": 100,
                    "usable_bytes": 50,
                }
                for path, code, replicas in dirs
            ],
        },
    )


def test_broker_sets_print_as_java_hash_sets() -> None:
    assert broker_set([3, 1, 2]) == "1,2,3"
    assert broker_set([17, 1]) == "17,1"  # same bucket of 16: insertion order
    assert broker_set([]) == ""


def test_an_answer_becomes_the_tools_report() -> None:
    response = answer(
        ("/d1", 0, [("orders", 1, 10, 0, False), ("orders", 0, 20, 0, False)]),
        ("/d4", 0, [("x", 0, 5, 0, False)]),
        ("/d2", 56, []),
        ("/d3", 0, [("orders", 1, 4, 6, True)]),
    )
    broker = broker_log_dirs(7, response, frozenset({"orders"}))
    assert broker.broker_id == 7
    dirs = {d.path: d for d in broker.log_dirs}
    assert [str(r) for r in dirs["/d1"].replicas] == ["orders-0", "orders-1"]
    assert dirs["/d2"].error == STORAGE_ERROR and dirs["/d1"].error is None
    (future,) = dirs["/d3"].replicas
    assert (future.size_bytes, future.offset_lag, future.is_future) == (4, 6, True)
    expected = java_hashmap_order(["/d1", "/d4", "/d2", "/d3"], java_string_hash, initial=4)
    assert [d.path for d in broker.log_dirs] == expected
    every = broker_log_dirs(7, response, frozenset())
    assert sum(len(d.replicas) for d in every.log_dirs) == 4
    assert dirs["/d4"].replicas == ()


def test_the_kip113_shape_reads_back() -> None:
    response = answer(("/d1", 0, [("t", 0, 10, 0, False)]), ("/d2", 56, []))
    broker = broker_log_dirs(2, response, frozenset())
    document = kip113_document(broker)
    dirs = {d["path"]: d for d in json.loads(document)["log_dirs"]}
    assert dirs["/d1"] == {
        "is_live": True,
        "path": "/d1",
        "partitions": [{"topic": "t", "partition": 0, "size": 10, "is_temporary": False}],
    }
    assert document.startswith('{"version":1,"log_dirs":[{"is_live":')
    report = parse_log_dirs(document, broker_id=2)
    (read,) = report.brokers
    assert {d.path: d.is_live for d in read.log_dirs} == {"/d1": True, "/d2": False}
