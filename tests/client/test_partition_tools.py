"""The pure parts of get-offsets, delete-records and leader-election against Kafka's texts:
``--time``, the partition filters, the JSON files and their refusals, the election lines."""

from __future__ import annotations

import pytest

from rackwise.client.partition_args import (
    PartitionFilter,
    ToolError,
    parse_election_json,
    parse_offset_json,
    parse_time,
)
from rackwise.client.partition_tools import election_lines, hash_order
from rackwise.common import TopicPartition as T
from rackwise.common.java import topic_partition_hash


def test_time_reads_kafkas_names_and_numbers() -> None:
    assert [parse_time(t) for t in ("latest", "earliest", "max-timestamp", "-2", "1700")] == [
        -1, -2, -3, -2, 1700,
    ]  # fmt: skip
    with pytest.raises(ToolError) as refused:
        parse_time("soon")
    assert str(refused.value) == (
        "Malformed time argument soon. Please use -1 or latest / -2 or earliest / -3 or "
        "max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specified long "
        "format timestamp"
    )


def test_topic_and_partitions_filter_as_kafka() -> None:
    selected = PartitionFilter.of_topic("ord.*,audit", "0,2")
    assert selected.topic_allowed("orders") and selected.topic_allowed("audit")
    assert not selected.topic_allowed("xorders")
    assert [p for p in range(4) if selected.allowed(T("orders", p))] == [0, 2]
    assert PartitionFilter.of_topic(None, None).allowed(T("anything", 9))
    with pytest.raises(ToolError, match=r"^--partitions expects a comma separated list of "):
        PartitionFilter.of_topic("t", "0,x")


def test_topic_partition_patterns_as_kafka() -> None:
    selected = PartitionFilter.of_patterns("a:1,b:2-4,c:5-,d:-1,e")
    wanted = {(t, p) for t, p in [("a", 1), ("b", 2), ("b", 3), ("c", 5), ("c", 6), ("d", 0)]}
    wanted |= {("e", p) for p in range(7)}
    got = {(t, p) for t in "abcde" for p in range(7) if selected.allowed(T(t, p))}
    assert got == wanted
    with pytest.raises(ToolError, match=r"^Invalid rule specification: a:x$"):
        PartitionFilter.of_patterns("a:x")


def test_offset_json_is_read_and_refused_in_kafkas_words() -> None:
    text = '{"partitions": [{"topic": "t", "partition": 1, "offset": 5}], "version": 1}'
    assert parse_offset_json(text) == {T("t", 1): 5}
    refusals = {
        "{": "The input string is not a valid JSON",
        '{"version": 2, "partitions": []}': "Not supported version field value 2",
        '{"version": 1}': "Missing partitions field",
        '{"partitions": [{"topic": "t", "partition": 0, "offset": 1}, '
        '{"topic": "t", "partition": 0, "offset": 2}]}': (
            "Offset json file contains duplicate topic partitions: t-0"
        ),
    }
    for document, message in refusals.items():
        with pytest.raises(ToolError) as refused:
            parse_offset_json(document)
        assert str(refused.value) == message


def test_election_json_is_read_and_refused_in_kafkas_words() -> None:
    text = '{"partitions": [{"topic": "t", "partition": 1}, {"topic": "u", "partition": 0}]}'
    assert parse_election_json(text) == [T("t", 1), T("u", 0)]
    with pytest.raises(ToolError, match=r'^Replica election data is missing "partitions" field$'):
        parse_election_json("{}")
    with pytest.raises(ToolError) as refused:
        parse_election_json(
            '{"partitions": [{"topic": "t", "partition": 1}] * 2}'.replace(
                "] * 2", ', {"topic": "t", "partition": 1}]'
            )
        )
    assert str(refused.value) == "Replica election data contains duplicate partitions: [t-1]"


def test_election_lines_are_kafkas() -> None:
    results = {
        T("t", 0): None,
        T("t", 1): None,
        T("t", 2): (84, None),
        T("t", 3): (80, None),
    }
    lines, failed = election_lines("PREFERRED", results)
    assert lines == [
        "Successfully completed leader election (PREFERRED) for partitions t-1, t-0",
        "Valid replica already elected for partitions t-2",
        "Error completing leader election (PREFERRED) for partition: t-3: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: The preferred "
        "leader was not available.",
    ]
    assert failed == 1


def test_partitions_come_in_the_order_of_javas_hash_sets() -> None:
    # TopicPartition.hashCode() = 31 * (31 + partition) + topic.hashCode(): "foo" is 101574.
    assert topic_partition_hash(T("foo", 0)) == 102535
    # "t" hashes to 116: t-p lands in bucket (1077 + 31 p) & 15 of a 16-bucket table.
    assert [tp.partition for tp in hash_order([T("t", p) for p in range(12)])] == [
        5, 4, 3, 2, 1, 0, 11, 10, 9, 8, 7, 6,
    ]  # fmt: skip
