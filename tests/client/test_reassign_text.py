"""Golden cases of ``kafka-reassign-partitions.sh``'s pure parts, from Kafka's own unit tests
(``ReassignPartitionsUnitTest``): the throttles, the lines, the files' checks."""

from __future__ import annotations

import pytest

from rackwise.client.reassign_files import parse_execute, parse_generate, parse_targets
from rackwise.client.reassign_text import (
    Move,
    OngoingReassignment,
    PartitionState,
    ReassignFailure,
    Replica,
    clearing_lines,
    current_assignment_text,
    list_text,
    move_map,
    move_state,
    move_states_text,
    moves_timed_out_text,
    partition_states_text,
    started_text,
    throttle_configs,
)
from rackwise.common import TopicPartition


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def _move_map_case() -> tuple[dict, dict, dict]:
    ongoing = {
        tp("foo", 0): OngoingReassignment((1, 2, 3, 4), (4,), (3,)),
        tp("foo", 1): OngoingReassignment((4, 5, 6, 7, 8), (7, 8), (4, 5)),
        tp("foo", 2): OngoingReassignment((1, 2, 3, 4), (3, 4), (1, 2)),
        tp("foo", 3): OngoingReassignment((1, 2, 3, 4), (3, 4), (1, 2)),
        tp("foo", 4): OngoingReassignment((1, 2, 3, 4), (3, 4), (1, 2)),
        tp("foo", 5): OngoingReassignment((1, 2, 3, 4), (3, 4), (1, 2)),
    }
    proposed = {
        tp("foo", 0): [1, 2, 5],
        tp("foo", 2): [3, 4],
        tp("foo", 3): [5, 6],
        tp("foo", 4): [3],
        tp("foo", 5): [3, 4, 5, 6],
        tp("bar", 0): [1, 2, 3],
    }
    current = {
        tp("foo", 0): [1, 2, 3, 4],
        tp("foo", 1): [4, 5, 6, 7, 8],
        tp("foo", 2): [1, 2, 3, 4],
        tp("foo", 3): [1, 2, 3, 4],
        tp("foo", 4): [1, 2, 3, 4],
        tp("foo", 5): [1, 2, 3, 4],
        tp("bar", 0): [2, 3, 4],
        tp("baz", 0): [1, 2, 3],
    }
    return ongoing, proposed, current


def test_move_map_as_kafkas_test_move_map() -> None:
    ongoing, proposed, current = _move_map_case()
    moves = move_map(ongoing, proposed, current)
    f = frozenset
    assert {k.partition: v for k, v in moves.items() if k.topic == "foo"} == {
        0: Move(f({1, 2, 3}), f({5})),
        1: Move(f({4, 5, 6}), f({7, 8})),
        2: Move(f({1, 2}), f({3, 4})),
        3: Move(f({1, 2}), f({5, 6})),
        4: Move(f({1, 2}), f({3})),
        5: Move(f({1, 2}), f({3, 4, 5, 6})),
    }
    assert moves[tp("bar", 0)] == Move(f({2, 3, 4}), f({1}))


def test_throttles_as_kafkas_test_move_map() -> None:
    ongoing, proposed, current = _move_map_case()
    throttles = throttle_configs(current, proposed, ongoing)
    assert throttles.leader == {
        "foo": "0:1,0:2,0:3,1:4,1:5,1:6,2:1,2:2,3:1,3:2,4:1,4:2,5:1,5:2",
        "bar": "0:2,0:3,0:4",
    }
    assert throttles.follower == {
        "foo": "0:5,1:7,1:8,2:3,2:4,3:5,3:6,4:3,5:3,5:4,5:5,5:6",
        "bar": "0:1",
    }
    assert throttles.brokers == {1, 2, 3, 4, 5, 6, 7, 8}


def test_throttle_lists_sort_as_strings() -> None:
    current = {tp("t", 2): [1], tp("t", 10): [1]}
    throttles = throttle_configs(current, {tp("t", 2): [3], tp("t", 10): [3]})
    assert throttles.leader == {"t": "10:1,2:1"}
    assert throttles.follower == {"t": "10:3,2:3"}


def test_a_partition_without_replicas_is_refused() -> None:
    with pytest.raises(ReassignFailure, match="Trying to reassign a topic partition t-0 with 0"):
        throttle_configs({}, {tp("t", 0): [1]})


def test_partition_states_text() -> None:
    states = {
        tp("foo", 0): PartitionState((1, 2, 3), (1, 2, 3), True),
        tp("foo", 1): PartitionState((1, 2, 3), (1, 2, 4), False),
        tp("bar", 0): PartitionState((1, 2, 3), (1, 2, 4), False),
    }
    assert partition_states_text(states) == "\n".join(
        [
            "Status of partition reassignment:",
            "Reassignment of partition bar-0 is still in progress.",
            "Reassignment of partition foo-0 is completed.",
            "Reassignment of partition foo-1 is still in progress.",
        ]
    )
    other = {tp("foo", 0): PartitionState((1, 2), (1, 3), True)}
    assert partition_states_text(other).splitlines()[1] == (
        "There is no active reassignment of partition foo-0, but replica set is 1,2 rather "
        "than 1,3."
    )


def test_replica_move_states_text() -> None:
    states = {
        Replica.of("bar", 0, 0): move_state(
            "/tmp/kafka-logs0", "/tmp/kafka-logs0", None, found=True
        ),
        Replica.of("foo", 0, 0): move_state(
            "/tmp/kafka-logs1", "/tmp/kafka-logs0", "/tmp/kafka-logs1", found=True
        ),
        Replica.of("foo", 1, 0): move_state(
            "/tmp/kafka-logs1", "/tmp/kafka-logs0", None, found=True
        ),
        Replica.of("quux", 0, 0): move_state("/tmp/kafka-logs1", None, None, found=False),
        Replica.of("quux", 1, 1): move_state(
            "/tmp/kafka-logs1", "/tmp/kafka-logs0", "/tmp/kafka-logs2", found=True
        ),
        Replica.of("quux", 2, 1): move_state("/tmp/kafka-logs1", None, None, found=True),
    }
    assert move_states_text(states) == "\n".join(
        [
            "Reassignment of replica bar-0-0 completed successfully.",
            "Reassignment of replica foo-0-0 is still in progress.",
            "Partition foo-1 on broker 0 is not being moved from log dir /tmp/kafka-logs0 to "
            "/tmp/kafka-logs1.",
            "Partition quux-0 cannot be found in any live log directory on broker 0.",
            "Partition quux-1 on broker 1 is being moved to log dir /tmp/kafka-logs2 instead of "
            "/tmp/kafka-logs1.",
            "Partition quux-2 is not found in any live log dir on broker 1. There is likely an "
            "offline log directory on the broker.",
        ]
    )
    assert not states[Replica.of("foo", 0, 0)].done
    assert states[Replica.of("quux", 2, 1)].done


def test_replicas_sort_by_broker_then_topic_then_partition() -> None:
    assert Replica.of("def", 0, 0) < Replica.of("abc", 0, 1)
    assert not Replica.of("def", 0, 0) < Replica.of("cde", 0, 0)
    assert str(Replica.of("foo", 1, 2)) == "foo-1-2"


def test_current_assignment_text() -> None:
    proposed = {tp("foo", 1): [1, 2, 3], tp("bar", 0): [7, 8, 9]}
    current = {
        tp("foo", 0): [1, 2, 3],
        tp("foo", 1): [4, 5, 6],
        tp("bar", 0): [7, 8],
        tp("baz", 0): [10, 11, 12],
    }
    assert current_assignment_text(proposed, current) == "\n".join(
        [
            "Current partition replica assignment",
            "",
            '{"version":1,"partitions":'
            '[{"topic":"bar","partition":0,"replicas":[7,8],"log_dirs":["any","any"]},'
            '{"topic":"foo","partition":1,"replicas":[4,5,6],"log_dirs":["any","any","any"]}]'
            "}",
            "",
            "Save this to use as the --reassignment-json-file option during rollback",
        ]
    )


def test_list_text() -> None:
    assert list_text({}) == "No partition reassignments found."
    ongoing = {
        tp("foo", 1): OngoingReassignment((1, 2, 3), (4, 5), (1, 2)),
        tp("foo", 0): OngoingReassignment((0, 1, 2), (4,), ()),
        tp("bar", 0): OngoingReassignment((2, 3, 0), (), (0,)),
    }
    assert list_text(ongoing) == "\n".join(
        [
            "Current partition reassignments:",
            "bar-0: replicas: 2,3,0. removing: 0.",
            "foo-0: replicas: 0,1,2. adding: 4.",
            "foo-1: replicas: 1,2,3. adding: 4,5. removing: 1,2.",
        ]
    )


def test_started_and_timed_out_lines() -> None:
    assert started_text([tp("foo", 1), tp("foo", 0)]) == (
        "Successfully started partition reassignments for foo-0,foo-1"
    )
    assert started_text([tp("foo", 0)]) == "Successfully started partition reassignment for foo-0"
    assert moves_timed_out_text([Replica.of("foo", 0, 2), Replica.of("bar", 0, 1)]) == (
        "Timed out before log directory moves could be started for: bar-0-1,foo-0-2"
    )


def test_clearing_lines() -> None:
    assert clearing_lines([3, 1, 2], ["foo"]) == [
        "Clearing broker-level throttles on brokers 1,2,3",
        "Clearing topic-level throttles on topic foo",
    ]
    assert clearing_lines([1], ["a", "b"])[0] == "Clearing broker-level throttles on broker 1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"version":1,"partitions":[]}', "Partition reassignment list cannot be empty"),
        (
            '{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[0,1],'
            '"log_dirs":["any","any"]},{"topic":"foo","partition":0,"replicas":[2,3,4],'
            '"log_dirs":["any","any","any"]}]}',
            "Partition reassignment contains duplicate topic partitions: foo-0",
        ),
        (
            '{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[0,0],'
            '"log_dirs":["/abc","/def"]},{"topic":"foo","partition":1,"replicas":[2,3],'
            '"log_dirs":["/abc","/def"]}]}',
            "Partition replica lists may not contain duplicate entries: foo-0 contains multiple "
            "entries for 0",
        ),
        (
            '{"partitions":[{"topic":"foo","partition":0,"replicas":[]}]}',
            "Partition replica list cannot be empty",
        ),
        (
            '{"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
            "Size of replicas list [1, 2] is different from size of log dirs list [any] for "
            "partition foo-0",
        ),
        ('{"version":2,"partitions":[]}', "Not supported version field value 2"),
    ],
)
def test_execute_file_refusals(text: str, message: str) -> None:
    with pytest.raises(ReassignFailure) as caught:
        parse_execute(text)
    assert caught.value.text == message
    assert caught.value.printed == f"Error: {message}"


def test_execute_file_with_log_dirs() -> None:
    targets = parse_execute(
        '{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2,3],'
        '"log_dirs":["/tmp/a","/tmp/b","/tmp/c"]}]}'
    )
    assert targets.partitions == ((tp("foo", 0), (1, 2, 3)),)
    assert dict(targets.log_dirs) == {
        Replica.of("foo", 0, 1): "/tmp/a",
        Replica.of("foo", 0, 2): "/tmp/b",
        Replica.of("foo", 0, 3): "/tmp/c",
    }
    assert not parse_targets('{"partitions":[{"topic":"f","partition":0,"replicas":[1]}]}').log_dirs


def test_generate_arguments_as_kafkas_test() -> None:
    topics = '{"topics": [{"topic": "foo"}], "version":1}'
    for brokers in ("1,1,2", "5,2,3,4,5"):
        with pytest.raises(ReassignFailure, match=r"^Broker list contains duplicate entries"):
            parse_generate(topics, brokers)
    assert parse_generate(topics, "5,2,3,4") == ([5, 2, 3, 4], ["foo"])
    with pytest.raises(ReassignFailure) as caught:
        parse_generate('{"topics": [{"topic": "foo"},{"topic": "foo"}], "version":1}', "5,2,3,4")
    assert caught.value.text == "List of topics to reassign contains duplicate entries: [foo]"
    two = '{"topics": [{"topic": "foo"},{"topic": "bar"}], "version":1}'
    assert parse_generate(two, "5,3,4") == ([5, 3, 4], ["foo", "bar"])
    with pytest.raises(ReassignFailure, match=r'^For input string: "x"$'):
        parse_generate(topics, "1,x")
