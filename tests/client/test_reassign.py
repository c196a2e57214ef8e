"""The reassignment calls against a stand-in transport: the requests they send, how they read
the answers, KIP-113's retries of REPLICA_NOT_AVAILABLE, and ``--generate``'s own placement
where the cluster does not serve CreateReplicaPlacement (Kafka's rack check and message)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace as Ns
from typing import Any

import pytest

from rackwise.client import reassign as calls
from rackwise.client import reassign_command as command
from rackwise.client.group_values import GroupsError
from rackwise.client.reassign_text import ReassignFailure, Replica, throttle_configs
from rackwise.common import TopicPartition
from rackwise.common.error_codes import (
    NONE,
    REPLICA_NOT_AVAILABLE,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNSUPPORTED_VERSION,
)
from rackwise.protocol import ApiKey


class StandIn:
    """Answers by api key; records every request."""

    def __init__(self, racks: dict[int, str | None], *, placement: bool = False) -> None:
        self.racks = racks
        self.placement = placement
        self.sent: list[tuple[int, Any, dict[str, Any]]] = []
        self.log_dir_answers: list[int] = []
        self.ongoing = False

    async def send(self, node: Any, api_key: int, values: Any, **_: Any) -> Any:
        self.sent.append((api_key, node, dict(values)))
        if api_key == ApiKey.DESCRIBE_CLUSTER:
            brokers = [Ns(broker_id=b, host="h", port=b, rack=r) for b, r in self.racks.items()]
            return Ns(error_code=NONE, brokers=brokers)
        if api_key == ApiKey.METADATA:
            parts = [Ns(partition_index=p, replica_nodes=[1, 2]) for p in range(4)]
            topics = [Ns(name="foo", error_code=NONE, partitions=parts)]
            asked = {t["name"] for t in values["topics"]} - {"foo"}
            topics += [
                Ns(name=t, error_code=UNKNOWN_TOPIC_OR_PARTITION, partitions=[]) for t in asked
            ]
            return Ns(topics=topics)
        if api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
            ongoing = [
                Ns(
                    name="foo",
                    partitions=[
                        Ns(
                            partition_index=1,
                            replicas=[1, 2, 3],
                            adding_replicas=[3],
                            removing_replicas=[2],
                        )
                    ],
                )
            ]
            return Ns(error_code=NONE, error_message=None, topics=ongoing if self.ongoing else [])
        if api_key == ApiKey.DESCRIBE_LOG_DIRS:
            part = Ns(partition_index=0, is_future_key=False)
            future = Ns(partition_index=0, is_future_key=True)
            results = [
                Ns(log_dir="/d/1", error_code=NONE, topics=[Ns(name="foo", partitions=[part])]),
                Ns(log_dir="/d/2", error_code=NONE,
                   topics=[Ns(name="foo", partitions=[future] if self.ongoing else [])]),
                Ns(log_dir="/d/3", error_code=56, topics=[]),
            ]  # fmt: skip
            return Ns(error_code=NONE, results=results)
        if api_key == ApiKey.CREATE_REPLICA_PLACEMENT:
            if not self.placement:
                raise GroupsError(UNSUPPORTED_VERSION, "h:1 does not support it")
            n = values["num_partitions"]
            placed = [Ns(partition_id=p, replicas=[3, 1]) for p in range(n)]
            return Ns(error_code=NONE, error_message=None, replica_placement=placed)
        if api_key == ApiKey.ALTER_REPLICA_LOG_DIRS:
            code = self.log_dir_answers.pop(0) if self.log_dir_answers else NONE
            results = [
                Ns(topic_name=t["name"], partitions=[Ns(partition_index=p, error_code=code)
                                                      for p in t["partitions"]])
                for d in values["dirs"]
                for t in d["topics"]
            ]  # fmt: skip
            return Ns(results=results)
        if api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
            responses = [
                Ns(name=t["name"], partitions=[
                    Ns(partition_index=p["partition_index"],
                       error_code=UNKNOWN_TOPIC_OR_PARTITION if t["name"] == "quux" else NONE,
                       error_message=None)
                    for p in t["partitions"]])
                for t in values["topics"]
            ]  # fmt: skip
            return Ns(error_code=NONE, error_message=None, responses=responses)
        if api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS:
            return Ns(
                responses=[Ns(error_code=NONE, error_message=None) for _ in values["resources"]]
            )
        raise AssertionError(api_key)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def generate(
    stand_in: StandIn, *, rack_aware: bool
) -> tuple[dict[TopicPartition, tuple[int, ...]], str]:
    lines: list[str] = []
    proposed = run(
        command.generate(
            stand_in,  # type: ignore[arg-type]
            '{"topics":[{"topic":"foo"}]}',
            "1,2,3",
            lambda text, end="\n": lines.append(text),
            rack_aware=rack_aware,
        )
    )
    return proposed, "\n".join(lines)


def test_generate_asks_the_clusters_placer() -> None:
    stand_in = StandIn({1: "a", 2: "b", 3: "c"}, placement=True)
    proposed, text = generate(stand_in, rack_aware=False)
    assert proposed == {TopicPartition("foo", p): (3, 1) for p in range(4)}
    (request,) = [v for key, _, v in stand_in.sent if key == ApiKey.CREATE_REPLICA_PLACEMENT]
    assert request["num_partitions"] == 4 and request["replication_factor"] == 2
    assert request["force_simple_placement"] is True and request["node_id"] == [1, 2, 3]
    assert text.splitlines()[3] == "Proposed partition reassignment configuration"


def test_generate_places_itself_where_the_cluster_does_not_serve_placement() -> None:
    proposed, _ = generate(StandIn({1: "a", 2: "b", 3: "c", 4: "c"}), rack_aware=True)
    assert sorted(proposed) == [TopicPartition("foo", p) for p in range(4)]
    racks = {1: "a", 2: "b", 3: "c"}
    assert all(len({racks[b] for b in r}) == 2 for r in proposed.values())


def test_generate_refuses_some_brokers_without_racks_as_kafka_does() -> None:
    with pytest.raises(ReassignFailure) as caught:
        generate(StandIn({1: "a", 2: None, 3: "c"}), rack_aware=True)
    assert caught.value.printed == (
        "Error: Not all brokers have rack information. Add --disable-rack-aware in command line "
        "to make replica assignment without rack information."
    )
    proposed, _ = generate(StandIn({1: "a", 2: None, 3: "c"}), rack_aware=False)
    assert all(set(r) <= {1, 2, 3} and len(set(r)) == 2 for r in proposed.values())


def test_alter_replica_log_dirs_retries_replica_not_available() -> None:
    stand_in = StandIn({1: None, 2: None})
    stand_in.log_dir_answers = [REPLICA_NOT_AVAILABLE, REPLICA_NOT_AVAILABLE, NONE]
    moves = {Replica.of("foo", 0, 1): "/d/2"}
    started: list[dict[Replica, str]] = []
    pending = run(calls.alter_replica_log_dirs(stand_in, moves, 5000, on_started=started.append))  # type: ignore[arg-type]
    assert pending == set() and started == [moves]
    sent = [v for key, _, v in stand_in.sent if key == ApiKey.ALTER_REPLICA_LOG_DIRS]
    assert len(sent) == 3
    assert sent[0] == {"dirs": [{"path": "/d/2", "topics": [{"name": "foo", "partitions": [0]}]}]}


def test_alter_replica_log_dirs_gives_up_at_the_timeout_and_on_other_errors() -> None:
    stand_in = StandIn({1: None})
    stand_in.log_dir_answers = [REPLICA_NOT_AVAILABLE] * 100
    moves = {Replica.of("foo", 0, 1): "/d/2"}
    assert run(calls.alter_replica_log_dirs(stand_in, moves, 250)) == set(moves)  # type: ignore[arg-type]
    stand_in.log_dir_answers = [56]
    with pytest.raises(calls.LogDirMoveError, match=r"^Failed to alter dir for foo-0-1$"):
        run(calls.alter_replica_log_dirs(stand_in, moves, 250))  # type: ignore[arg-type]


def test_alter_reassignments_maps_each_partitions_error() -> None:
    stand_in = StandIn({1: None})
    targets = {TopicPartition("foo", 0): [1, 2], TopicPartition("quux", 0): None}
    errors = run(calls.alter_reassignments(stand_in, targets))  # type: ignore[arg-type]
    assert list(errors) == [TopicPartition("quux", 0)]
    assert str(errors[TopicPartition("quux", 0)]) == (
        "This server does not host this topic-partition."
    )
    (request,) = [v for key, _, v in stand_in.sent if key == ApiKey.ALTER_PARTITION_REASSIGNMENTS]
    assert request["topics"] == [
        {"name": "foo", "partitions": [{"partition_index": 0, "replicas": [1, 2]}]},
        {"name": "quux", "partitions": [{"partition_index": 0, "replicas": None}]},
    ]


def test_set_throttles_sends_kafkas_configs_each_broker_to_itself() -> None:
    stand_in = StandIn({1: None, 2: None, 3: None})
    throttles = throttle_configs({TopicPartition("t", 0): [1, 2]}, {TopicPartition("t", 0): [2, 3]})
    run(calls.set_throttles(stand_in, throttles, rate=1000))  # type: ignore[arg-type]
    sent = [(n, v) for key, n, v in stand_in.sent if key == ApiKey.INCREMENTAL_ALTER_CONFIGS]
    topic_ops = sent[0][1]["resources"][0]["configs"]
    assert {(o["name"], o["value"]) for o in topic_ops} == {
        ("leader.replication.throttled.replicas", "0:1,0:2"),
        ("follower.replication.throttled.replicas", "0:3"),
    }
    assert [n.id for n, _ in sent[1:]] == [1, 2, 3]
    assert {o["name"] for o in sent[1][1]["resources"][0]["configs"]} == {
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
    }


PLAN = (
    '{"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["/d/2","any"]},'
    '{"topic":"foo","partition":1,"replicas":[1,3]},'
    '{"topic":"quux","partition":0,"replicas":[1,2,3]}]}'
)


def verify(stand_in: StandIn) -> tuple[bool, list[str]]:
    lines: list[str] = []

    def out(text: str, end: str = "\n") -> None:
        lines.extend((text + end).splitlines())

    done = run(command.verify(stand_in, PLAN, out))  # type: ignore[arg-type]
    return done, lines


def test_verify_while_moves_are_in_flight_clears_nothing() -> None:
    stand_in = StandIn({1: None, 2: None})
    stand_in.ongoing = True
    done, lines = verify(stand_in)
    assert not done
    assert lines == [
        "Status of partition reassignment:",
        "Reassignment of partition foo-0 is completed.",
        "Reassignment of partition foo-1 is still in progress.",
        "There is no active reassignment of partition quux-0, but replica set is  rather than "
        "1,2,3.",
        "Reassignment of replica foo-0-1 is still in progress.",
    ]
    assert not any(key == ApiKey.INCREMENTAL_ALTER_CONFIGS for key, _, _ in stand_in.sent)


def test_verify_once_done_clears_every_brokers_and_topics_throttles() -> None:
    stand_in = StandIn({1: None, 2: None, 3: None, 4: None})
    done, lines = verify(stand_in)
    assert done
    assert lines[2:] == [
        "There is no active reassignment of partition foo-1, but replica set is 1,2 rather than "
        "1,3.",
        "There is no active reassignment of partition quux-0, but replica set is  rather than "
        "1,2,3.",
        "Partition foo-0 on broker 1 is not being moved from log dir /d/1 to /d/2.",
        "Clearing broker-level throttles on brokers 1,2,3,4",
        "Clearing topic-level throttles on topics quux,foo",
    ]
    cleared = [v for key, _, v in stand_in.sent if key == ApiKey.INCREMENTAL_ALTER_CONFIGS]
    names = [r["resource_name"] for v in cleared for r in v["resources"]]
    assert sorted(names) == ["1", "2", "3", "4", "foo", "quux"]
    ops = {(o["name"], o["config_operation"]) for v in cleared for r in v["resources"]
           for o in r["configs"]}  # fmt: skip
    assert ops == {
        ("leader.replication.throttled.rate", 1),
        ("follower.replication.throttled.rate", 1),
        ("replica.alter.log.dirs.io.max.bytes.per.second", 1),
        ("leader.replication.throttled.replicas", 1),
        ("follower.replication.throttled.replicas", 1),
    }
