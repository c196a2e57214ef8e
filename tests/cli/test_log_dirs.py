"""``rackwise log-dirs``: DescribeLogDirs answers printed as ``kafka-log-dirs.sh`` prints them,
in Java's orders, and KIP-113's shape."""

from __future__ import annotations

import argparse
import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.cli import log_dirs
from rackwise.cli.errors import CommandError
from rackwise.cli.log_dirs import (
    broker_log_dirs,
    broker_set,
    java_hash_order,
    kip113_document,
    topic_partition_hash,
)
from rackwise.common.errors import IllegalArgumentException
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


def test_topic_partition_hash_is_javas() -> None:
    # 31 * (31 + partition) + "t".hashCode()
    assert topic_partition_hash("t", 0) == 961 + 116
    # Java's int arithmetic wraps: "orders".hashCode() is -1008770331.
    assert java_string_hash("orders") == -1008770331
    assert topic_partition_hash("orders", 3) == 31 * 34 - 1008770331
    big = 2**31 - 100
    wrapped = (31 * (31 + big) + java_string_hash("aaaaaaa") + 2**31) % 2**32 - 2**31
    assert topic_partition_hash("aaaaaaa", big) == wrapped


@given(st.lists(st.integers(min_value=-(2**31), max_value=2**31 - 1), max_size=40, unique=True))
def test_hash_order_agrees_with_the_hashmap_port(keys: list[int]) -> None:
    try:
        expected = java_hashmap_order(keys, lambda k: k)
    except IllegalArgumentException:  # a bucket Java would make a tree: modelled by neither
        return
    assert java_hash_order(keys, lambda k: k) == expected


def test_a_presized_map_orders_by_its_smaller_table() -> None:
    # Two directories in a HashMap sized for two: a table of 4 buckets, not 16.
    keys = [4, 1]
    assert java_hash_order(keys, lambda k: k) == [1, 4]
    assert java_hash_order(keys, lambda k: k, initial=2) == [4, 1]


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
    expected = java_hash_order(["/d1", "/d4", "/d2", "/d3"], java_string_hash, initial=4)
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


def parse(*args: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    log_dirs.configure(parser)
    return parser.parse_args(list(args))


def run(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    """The command against a cluster of brokers 1-3 whose brokers all answer ``answer``."""

    async def live_brokers(_bootstrap: str) -> dict[int, tuple[str, int]]:
        return {1: ("h", 1), 2: ("h", 2), 3: ("h", 3)}

    async def describe_broker(address: tuple[str, int]) -> Any:
        return answer((f"/data/{address[1]}", 0, [("t", 0, address[1], 0, False)]))

    monkeypatch.setattr(log_dirs, "live_brokers", live_brokers)
    monkeypatch.setattr(log_dirs, "describe_broker", describe_broker)
    out, err = io.StringIO(), io.StringIO()
    parsed = parse("--describe", "--bootstrap-server", "h:1", *args)
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    code = parsed.run(parsed)
    return code, out.getvalue(), err.getvalue()


def test_the_tools_output_line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(monkeypatch, "--broker-list", "3,1")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 1,3",
    ]
    assert lines[2] == (
        '{"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"t-0","size":1,'
        '"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/data/1"}]},'
        '{"broker":3,"logDirs":[{"partitions":[{"partition":"t-0","size":3,"offsetLag":0,'
        '"isFuture":false}],"error":null,"logDir":"/data/3"}]}],"version":1}'
    )
    assert len(lines) == 3


def test_an_unknown_broker_is_kafkas_error(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(monkeypatch, "--broker-list", "1,4,5")
    assert (code, out) == (1, "")
    assert err == (
        "ERROR: The given brokers do not exist from --broker-list: 4,5. "
        "Current existent brokers: 1,2,3\n"
    )


def test_kip113_prints_one_document_per_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run(monkeypatch, "--format", "kip113")
    lines = out.splitlines()
    assert code == 0 and lines[1] == "Received log directory information from brokers 1,2,3"
    documents = [json.loads(line) for line in lines[2:]]
    assert [d["log_dirs"][0]["path"] for d in documents] == ["/data/1", "/data/2", "/data/3"]


def test_bad_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CommandError, match="--broker-list takes broker ids: 1,x"):
        run(monkeypatch, "--broker-list", "1,x")
    parsed = parse("--bootstrap-server", "h:1")
    with pytest.raises(CommandError, match=r'Missing required argument "\[describe\]"'):
        parsed.run(parsed)
