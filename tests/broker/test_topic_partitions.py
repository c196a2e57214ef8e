"""DescribeTopicPartitions (KIP-966) from hand-built images: Kafka's paging, its errors, and
each partition as Metadata shows it."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.broker.topic_partitions import describe_topic_partitions
from rackwise.image import MetadataImage, replay
from rackwise.protocol import ApiKey, make, request_class
from rackwise.records import TopicRecord
from tests.broker.test_broker_apis import image_of, partition, register

LISTENER = "PLAINTEXT"


def ask(
    image: MetadataImage,
    topics: list[str] = (),  # type: ignore[assignment]
    limit: int = 2000,
    cursor: tuple[str, int] | None = None,
) -> Any:
    body = make(
        request_class(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0),
        topics=[{"name": t} for t in topics],
        response_partition_limit=limit,
        cursor=None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]},
    )
    return describe_topic_partitions(body, image, LISTENER)


def listed(response: Any) -> list[tuple[str, int]]:
    return [(t.name, p.partition_index) for t in response.topics for p in t.partitions]


def cursor_of(response: Any) -> tuple[str, int] | None:
    c = response.next_cursor
    return None if c is None else (c.topic_name, c.partition_index)


def sized(counts: dict[str, int]) -> MetadataImage:
    """Topics of ``counts[name]`` partitions, each on broker 1."""
    records: list[Any] = [register(1)]
    for n, (name, count) in enumerate(sorted(counts.items())):
        topic_id = uuid.UUID(int=500 + n)
        records.append(TopicRecord(name=name, topic_id=topic_id))
        records += [partition(p, (1,), (1,), 1, topic_id=topic_id) for p in range(count)]
    return replay(records)


def test_a_page_stops_at_the_limit_and_the_cursor_resumes_there() -> None:
    image = sized({"a": 3, "b": 2})
    first = ask(image, limit=4)
    assert listed(first) == [("a", 0), ("a", 1), ("a", 2), ("b", 0)]
    assert cursor_of(first) == ("b", 1)
    second = ask(image, limit=4, cursor=("b", 1))
    assert listed(second) == [("b", 1)] and cursor_of(second) is None
    # A page that ends exactly with a topic points at the next topic's first partition.
    exact = ask(image, limit=3)
    assert listed(exact) == [("a", 0), ("a", 1), ("a", 2)] and cursor_of(exact) == ("b", 0)


def test_the_limit_is_at_least_one_and_at_most_two_thousand() -> None:
    image = sized({"big": 2500})
    assert listed(ask(image, limit=0)) == [("big", 0)]
    assert len(listed(ask(image, limit=100_000))) == 2000
    assert cursor_of(ask(image, limit=100_000)) == ("big", 2000)


def test_each_partition_shows_its_leader_replicas_and_offline_replicas() -> None:
    (topic,) = ask(image_of(), ["t"]).topics
    assert (topic.error_code, topic.topic_id, topic.is_internal) == (0, uuid.UUID(int=7), False)
    rows = {
        p.partition_index: (p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
        for p in topic.partitions
    }
    # broker 2 is fenced, broker 4 has no PLAINTEXT listener: its partition has no leader here
    assert rows == {0: (1, [1, 2], [1]), 1: (3, [3, 1], [3, 1]), 2: (-1, [2, 3], []),
                    3: (-1, [4, 1], [4, 1])}  # fmt: skip
    offline = {p.partition_index: list(p.offline_replicas) for p in topic.partitions}
    assert offline == {0: [2], 1: [], 2: [2], 3: [4]}
    assert all(
        list(p.eligible_leader_replicas) == [] and list(p.last_known_elr) == []
        for p in topic.partitions
    )
    # a replica whose directory is lost is offline
    (lost,) = ask(image_of(), ["a"]).topics[0].partitions
    assert list(lost.offline_replicas) == [3]


def test_named_topics_that_do_not_exist_are_answered_and_unnamed_ones_are_not_listed() -> None:
    response = ask(sized({"a": 1}), ["zz", "a", "bad/name"])
    assert [(t.name, t.error_code, t.topic_id) for t in response.topics] == [
        ("a", 0, uuid.UUID(int=500)),
        ("bad/name", 17, uuid.UUID(int=0)),
        ("zz", 3, uuid.UUID(int=0)),
    ]
    assert [t.name for t in ask(sized({"a": 1, "b": 1})).topics] == ["a", "b"]


def test_a_cursor_outside_the_named_topics_or_below_zero_fails_the_request() -> None:
    image = sized({"a": 2, "b": 2})
    for cursor in (("c", 0), ("a", -1)):
        response = ask(image, ["a", "b"], cursor=cursor)
        assert [(t.name, t.error_code, list(t.partitions)) for t in response.topics] == [
            ("a", 42, []),
            ("b", 42, []),
        ]
        assert cursor_of(response) is None
    # a cursor may name a topic past the last one when no topics are named
    assert listed(ask(image, cursor=("c", 0))) == []


@settings(max_examples=60, deadline=None)
@given(
    counts=st.dictionaries(
        st.text("abcdef", min_size=1, max_size=3), st.integers(0, 7), min_size=1, max_size=5
    ),
    limit=st.integers(1, 9),
)
def test_paging_lists_every_partition_once_in_order(counts: dict[str, int], limit: int) -> None:
    image = sized(counts)
    seen: list[tuple[str, int]] = []
    cursor = None
    for _ in range(sum(counts.values()) + len(counts) + 1):
        page = ask(image, limit=limit, cursor=cursor)
        assert len(listed(page)) <= limit
        seen += listed(page)
        cursor = cursor_of(page)
        if cursor is None:
            break
    assert cursor is None
    assert seen == [(name, p) for name in sorted(counts) for p in range(counts[name])]
