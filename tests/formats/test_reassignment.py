"""Reassignment and topics-to-move JSON against the text Kafka's reassignment tool prints."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.common import InvalidFormatException, TopicPartition
from rackwise.formats import (
    ANY_LOG_DIR,
    PartitionReassignment,
    Reassignment,
    format_reassignment,
    format_topics_to_move,
    parse_reassignment,
    parse_topics_to_move,
)

# Printed by Kafka's ReassignPartitionsCommand (expected output in its unit tests): compact,
# sorted by topic then partition, "log_dirs" always present.
KAFKA_CURRENT = (
    '{"version":1,"partitions":['
    '{"topic":"bar","partition":0,"replicas":[7,8],"log_dirs":["any","any"]},'
    '{"topic":"foo","partition":1,"replicas":[4,5,6],"log_dirs":["any","any","any"]}]}'
)
KAFKA_WITH_DIRS = (
    '{"version":1,"partitions":['
    '{"topic":"foo","partition":0,"replicas":[1,2,3],"log_dirs":["/tmp/a","/tmp/b","/tmp/c"]}]}'
)


def test_kafka_output_parses() -> None:
    assert parse_reassignment(KAFKA_CURRENT) == Reassignment(
        (
            PartitionReassignment("bar", 0, (7, 8)),
            PartitionReassignment("foo", 1, (4, 5, 6)),
        )
    )
    entry = parse_reassignment(KAFKA_WITH_DIRS).partitions[0]
    assert entry.log_dirs == ("/tmp/a", "/tmp/b", "/tmp/c")
    assert entry.topic_partition == TopicPartition("foo", 0)


@pytest.mark.parametrize(
    "golden", [KAFKA_CURRENT, KAFKA_WITH_DIRS, '{"version":1,"partitions":[]}']
)
def test_kafka_output_prints_back_byte_for_byte(golden: str) -> None:
    assert format_reassignment(parse_reassignment(golden)) == golden


def test_writer_sorts_as_kafka_and_spells_out_any() -> None:
    reassignment = Reassignment(
        (
            PartitionReassignment("r2", 10, (3,)),
            PartitionReassignment("r2", 2, (1, 2), ("/d/1", ANY_LOG_DIR)),
            PartitionReassignment("r10", 0, (0,)),
            PartitionReassignment("a", 0, (5,)),
            PartitionReassignment("Z", 0, (6,)),
        )
    )
    assert format_reassignment(reassignment) == (
        '{"version":1,"partitions":['
        '{"topic":"Z","partition":0,"replicas":[6],"log_dirs":["any"]},'
        '{"topic":"a","partition":0,"replicas":[5],"log_dirs":["any"]},'
        '{"topic":"r10","partition":0,"replicas":[0],"log_dirs":["any"]},'
        '{"topic":"r2","partition":2,"replicas":[1,2],"log_dirs":["/d/1","any"]},'
        '{"topic":"r2","partition":10,"replicas":[3],"log_dirs":["any"]}]}'
    )


def test_topics_sort_by_utf16_units_as_java_does() -> None:
    # U+1F600 is a surrogate pair (0xD83D...) in Java, so it sorts before U+FF21.
    reassignment = Reassignment(
        (PartitionReassignment("\uff21", 0, (1,)), PartitionReassignment("\U0001f600", 0, (1,)))
    )
    assert [p.topic for p in reassignment.partitions] == ["\U0001f600", "\uff21"]


def test_input_conveniences_match_kafka() -> None:
    # No version means version 1; no log_dirs means "any"; unknown members are ignored;
    # whitespace and member order do not matter; no "partitions" is an empty list.
    text = '{ "partitions" : [ { "replicas":[2, 1], "partition":3, "topic":"t", "extra":0 } ] }'
    assert parse_reassignment(text) == Reassignment((PartitionReassignment("t", 3, (2, 1)),))
    assert format_reassignment(parse_reassignment(text)) == (
        '{"version":1,"partitions":[{"topic":"t","partition":3,"replicas":[2,1],'
        '"log_dirs":["any","any"]}]}'
    )
    assert parse_reassignment('{"version":1}') == Reassignment()


def test_all_any_log_dirs_are_the_same_as_none() -> None:
    explicit = PartitionReassignment("t", 0, (1, 2), ("any", "any"))
    assert explicit == PartitionReassignment("t", 0, (1, 2))
    assert explicit.log_dirs is None
    assert explicit.log_dirs_or_any == ("any", "any")


def test_windows_paths_are_absolute_too() -> None:
    entry = PartitionReassignment("t", 0, (1, 2, 3), ("C:\\kafka", "d:/logs", "\\\\srv\\share"))
    assert entry.log_dirs == ("C:\\kafka", "d:/logs", "\\\\srv\\share")


def test_by_partition() -> None:
    reassignment = parse_reassignment(KAFKA_CURRENT)
    assert reassignment.by_partition()[TopicPartition("foo", 1)].replicas == (4, 5, 6)


def _bad(partition: str) -> str:
    return (
        '{"version":1,"partitions":[{"topic":"ok","partition":0,"replicas":[1]},' + partition + "]}"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "reassignment JSON: not valid JSON: Expecting value (line 1, column 1)"),
        ("[1]", "reassignment JSON: expected a JSON object, got [1]"),
        ('{"version":2}', "reassignment JSON: version: unsupported version 2; only 1 is defined"),
        ('{"version":"1"}', 'reassignment JSON: version: expected an integer, got "1"'),
        ('{"partitions":{}}', "reassignment JSON: partitions: expected a JSON array, got {}"),
        (_bad("7"), "reassignment JSON: partitions[1]: expected a JSON object, got 7"),
        (
            _bad('{"partition":0,"replicas":[1]}'),
            'reassignment JSON: partitions[1]: missing required field "topic"',
        ),
        (
            _bad('{"topic":"t","replicas":[1]}'),
            'reassignment JSON: partitions[1]: missing required field "partition"',
        ),
        (
            _bad('{"topic":"t","partition":0}'),
            'reassignment JSON: partitions[1]: missing required field "replicas"',
        ),
        (
            _bad('{"topic":5,"partition":0,"replicas":[1]}'),
            "reassignment JSON: partitions[1].topic: expected a string, got 5",
        ),
        (
            _bad('{"topic":"","partition":0,"replicas":[1]}'),
            "reassignment JSON: partitions[1].topic: must not be an empty string",
        ),
        (
            _bad('{"topic":"t","partition":true,"replicas":[1]}'),
            "reassignment JSON: partitions[1].partition: expected an integer, got true",
        ),
        (
            _bad('{"topic":"t","partition":-1,"replicas":[1]}'),
            "reassignment JSON: partitions[1].partition: must be at least 0, got -1",
        ),
        (
            _bad('{"topic":"t","partition":0,"replicas":"1,2"}'),
            'reassignment JSON: partitions[1].replicas: expected a JSON array, got "1,2"',
        ),
        (
            _bad('{"topic":"t","partition":0,"replicas":[]}'),
            "reassignment JSON: partitions[1].replicas: the replica list must not be empty",
        ),
        (
            _bad('{"topic":"t","partition":0,"replicas":[1,false]}'),
            "reassignment JSON: partitions[1].replicas[1]: expected an integer, got false",
        ),
        (
            _bad('{"topic":"t","partition":0,"replicas":[1,2.5]}'),
            "reassignment JSON: partitions[1].replicas[1]: expected an integer, got 2.5",
        ),
        (
            _bad('{"topic":"t","partition":0,"replicas":[-3]}'),
            "reassignment JSON: partitions[1].replicas[0]: must be at least 0, got -3",
        ),
        (
            _bad('{"topic":"t","partition":0,"replicas":[4,2,4]}'),
            "reassignment JSON: partitions[1].replicas: broker 4 appears more than once in [4,2,4]",
        ),
        (
            _bad('{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}'),
            'reassignment JSON: partitions[1].log_dirs: length 1 ["any"] differs from the '
            "replicas' length 2 [1,2]; it needs one entry per replica",
        ),
        (
            _bad('{"topic":"t","partition":0,"replicas":[1],"log_dirs":null}'),
            "reassignment JSON: partitions[1].log_dirs: expected a JSON array, got null",
        ),
        (
            _bad('{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any",3]}'),
            "reassignment JSON: partitions[1].log_dirs[1]: expected a string, got 3",
        ),
        (
            _bad('{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/a","logs"]}'),
            'reassignment JSON: partitions[1].log_dirs[1]: "logs" is neither "any" nor an '
            "absolute path",
        ),
        (
            _bad('{"topic":"ok","partition":0,"replicas":[2]}'),
            "reassignment JSON: partitions[1]: partition ok-0 is already listed at partitions[0]",
        ),
    ],
)
def test_reassignment_errors_name_the_field_and_value(text: str, message: str) -> None:
    with pytest.raises(InvalidFormatException) as caught:
        parse_reassignment(text)
    assert str(caught.value) == message


def test_values_refuse_what_the_parser_refuses() -> None:
    with pytest.raises(InvalidFormatException, match=r"^reassignment JSON: t-0\.replicas: broker"):
        PartitionReassignment("t", 0, (1, 1))
    with pytest.raises(InvalidFormatException, match=r"t-0\.replicas\[0\]: expected an integer"):
        PartitionReassignment("t", 0, (True,))
    with pytest.raises(InvalidFormatException, match=r"^reassignment JSON: t-0: partition listed"):
        Reassignment((PartitionReassignment("t", 0, (1,)), PartitionReassignment("t", 0, (2,))))


# --- properties -------------------------------------------------------------------------------

_brokers = st.integers(0, 2**31 - 1)
_log_dir = st.one_of(st.just(ANY_LOG_DIR), st.text(max_size=8).map(lambda tail: "/" + tail))


@st.composite
def _entries(draw: st.DrawFn) -> PartitionReassignment:
    replicas = draw(st.lists(_brokers, min_size=1, max_size=5, unique=True))
    log_dirs = draw(st.none() | st.lists(_log_dir, min_size=len(replicas), max_size=len(replicas)))
    return PartitionReassignment(
        topic=draw(st.text(min_size=1, max_size=6)),
        partition=draw(st.integers(0, 2**31 - 1) | st.integers(0, 3)),
        replicas=tuple(replicas),
        log_dirs=None if log_dirs is None else tuple(log_dirs),
    )


_reassignments = st.lists(_entries(), max_size=6, unique_by=lambda e: e.topic_partition).map(
    lambda entries: Reassignment(tuple(entries))
)


@given(_reassignments)
def test_write_then_read_gives_the_same_value(reassignment: Reassignment) -> None:
    assert parse_reassignment(format_reassignment(reassignment)) == reassignment


@given(_reassignments)
def test_read_then_write_gives_the_same_bytes(reassignment: Reassignment) -> None:
    canonical = format_reassignment(reassignment)
    assert format_reassignment(parse_reassignment(canonical)) == canonical


@given(_reassignments)
def test_output_is_kafkas_shape(reassignment: Reassignment) -> None:
    document = json.loads(format_reassignment(reassignment))
    assert list(document) == ["version", "partitions"]
    for item, entry in zip(document["partitions"], reassignment.partitions, strict=True):
        assert list(item) == ["topic", "partition", "replicas", "log_dirs"]
        assert item["log_dirs"] == list(entry.log_dirs_or_any)


@given(
    st.lists(_entries(), max_size=6, unique_by=lambda e: e.topic_partition).flatmap(
        lambda entries: st.tuples(st.just(entries), st.permutations(entries))
    )
)
def test_entry_order_does_not_matter(
    pair: tuple[list[PartitionReassignment], list[PartitionReassignment]],
) -> None:
    entries, shuffled = pair
    assert Reassignment(tuple(shuffled)) == Reassignment(tuple(entries))


# --- topics to move ---------------------------------------------------------------------------


def test_topics_to_move_kafka_doc_example() -> None:
    # The example from Kafka's documentation, with its spaces and member order.
    text = '{"topics": [{"topic": "foo"},{"topic": "foo1"}],\n "version":1\n}'
    assert parse_topics_to_move(text) == ("foo", "foo1")
    assert format_topics_to_move(("foo", "foo1")) == (
        '{"version":1,"topics":[{"topic":"foo"},{"topic":"foo1"}]}'
    )


def test_topics_to_move_defaults_match_kafka() -> None:
    assert parse_topics_to_move('{"topics":[{"topic":"a","partitions":[1]}]}') == ("a",)
    assert parse_topics_to_move('{"version":1}') == ()
    assert format_topics_to_move([]) == '{"version":1,"topics":[]}'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "{",
            "topics-to-move JSON: not valid JSON: Expecting property name enclosed in double "
            "quotes (line 1, column 2)",
        ),
        ('"foo"', 'topics-to-move JSON: expected a JSON object, got "foo"'),
        ('{"version":0}', "topics-to-move JSON: version: unsupported version 0; only 1 is defined"),
        ('{"topics":"foo"}', 'topics-to-move JSON: topics: expected a JSON array, got "foo"'),
        ('{"topics":["foo"]}', 'topics-to-move JSON: topics[0]: expected a JSON object, got "foo"'),
        (
            '{"topics":[{"name":"foo"}]}',
            'topics-to-move JSON: topics[0]: missing required field "topic"',
        ),
        (
            '{"topics":[{"topic":null}]}',
            "topics-to-move JSON: topics[0].topic: expected a string, got null",
        ),
        (
            '{"topics":[{"topic":"a"},{"topic":"b"},{"topic":"a"}]}',
            'topics-to-move JSON: topics[2].topic: "a" is already listed at topics[0]',
        ),
    ],
)
def test_topics_to_move_errors_name_the_field_and_value(text: str, message: str) -> None:
    with pytest.raises(InvalidFormatException) as caught:
        parse_topics_to_move(text)
    assert str(caught.value) == message


def test_topics_to_move_writer_refuses_repeats() -> None:
    with pytest.raises(
        InvalidFormatException, match=r'topics\[1\]\.topic: "a" is listed more than once'
    ):
        format_topics_to_move(["a", "a"])


_topic_lists = st.lists(st.text(min_size=1, max_size=8), max_size=8, unique=True)


@given(_topic_lists)
def test_topics_to_move_round_trips(topics: list[str]) -> None:
    text = format_topics_to_move(topics)
    assert parse_topics_to_move(text) == tuple(topics)
    assert format_topics_to_move(parse_topics_to_move(text)) == text
