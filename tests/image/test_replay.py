"""Replay, record type by record type, and the loud failures of records that do not fit."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from rackwise.image import ConfigResource, MetadataDelta, MetadataImage, ReplayError, replay
from rackwise.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from rackwise.records.constants import DIRECTORY_MIGRATING
from rackwise.records.metadata import FenceBrokerRecordV0, PartitionRecordV0
from rackwise.records.registry import build_record_types

T = uuid.UUID(int=9)
D1, D2, D3 = (uuid.UUID(int=n) for n in (101, 102, 103))


def register(broker_id: int, epoch: int, **changes: Any) -> Any:
    values: dict[str, Any] = {
        "broker_id": broker_id,
        "incarnation_id": uuid.UUID(int=broker_id + 1000),
        "broker_epoch": epoch,
        "end_points": (),
        "features": (),
        "rack": f"/dc1/r{broker_id}",
    }
    values.update(changes)
    return RegisterBrokerRecord(**values)


def partition(partition_id: int = 0, **changes: Any) -> Any:
    values: dict[str, Any] = {
        "partition_id": partition_id,
        "topic_id": T,
        "replicas": (1, 2),
        "isr": (1, 2),
        "removing_replicas": (),
        "adding_replicas": (),
        "leader": 1,
        "leader_epoch": 0,
        "partition_epoch": 0,
        "directories": (D1, D2),
    }
    values.update(changes)
    return PartitionRecord(**values)


BASE = [register(1, 10), register(2, 11), TopicRecord(name="t", topic_id=T), partition()]


def test_worked_example_from_the_docstring() -> None:
    image = replay(
        [
            register(1, 10),
            BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=-1),
            TopicRecord(name="t", topic_id=T),
            partition(replicas=(1,), isr=(1,), directories=()),
            PartitionChangeRecord(partition_id=0, topic_id=T, isr=(), leader=-1),
        ]
    )
    assert image.brokers[1].fenced is False
    p = image.topics_by_name["t"].partitions[0]
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (-1, (), 1, 1)
    assert p.directories == (DIRECTORY_MIGRATING,)
    assert image.topics_by_id[T] is image.topics_by_name["t"]


def test_registration_changes() -> None:
    image = replay(BASE)
    assert image.brokers[1].fenced is True  # brokers register fenced
    image = replay(
        [
            UnfenceBrokerRecord(id=1, epoch=10),
            BrokerRegistrationChangeRecord(
                broker_id=2, broker_epoch=11, in_controlled_shutdown=1, log_dirs=(D3,)
            ),
        ],
        image,
    )
    assert image.brokers[1].fenced is False
    assert image.brokers[2].in_controlled_shutdown and image.brokers[2].log_dirs == (D3,)
    image = replay([FenceBrokerRecord(id=1, epoch=10)], image)
    assert image.brokers[1].fenced is True
    image = replay([register(1, 20, fenced=False)], image)  # a new incarnation replaces
    assert (image.brokers[1].broker_epoch, image.brokers[1].fenced) == (20, False)
    image = replay([UnregisterBrokerRecord(broker_id=2, broker_epoch=11)], image)
    assert sorted(image.brokers) == [1]


def test_partition_changes_follow_kafkas_merge() -> None:
    image = replay(BASE)
    image = replay(
        [PartitionChangeRecord(partition_id=0, topic_id=T, isr=(1,))], image
    )  # leader unchanged (-2): only the partition epoch moves
    p = image.topics_by_name["t"].partitions[0]
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1,), 1, 0, 1)
    image = replay(
        [
            PartitionChangeRecord(
                partition_id=0,
                topic_id=T,
                replicas=(2, 3, 1),
                directories=(D2, D3, D1),
                leader=2,
                leader_recovery_state=1,
                eligible_leader_replicas=(3,),
            )
        ],
        image,
    )
    p = image.topics_by_name["t"].partitions[0]
    assert (p.replicas, p.directories, p.leader) == ((2, 3, 1), (D2, D3, D1), 2)
    assert (p.leader_epoch, p.partition_epoch, p.leader_recovery_state) == (1, 2, 1)
    assert p.eligible_leader_replicas == (3,)


def test_migrating_directories_follow_the_replica_count() -> None:
    image = replay([*BASE[:3], partition(directories=())])
    image = replay([PartitionChangeRecord(partition_id=0, topic_id=T, replicas=(1, 2, 3))], image)
    assert image.topics_by_name["t"].partitions[0].directories == (DIRECTORY_MIGRATING,) * 3


def test_older_record_versions_replay_as_the_latest() -> None:
    old = PartitionRecordV0(
        partition_id=0,
        topic_id=T,
        replicas=(1,),
        isr=(1,),
        removing_replicas=(),
        adding_replicas=(),
        leader=1,
        leader_epoch=0,
        partition_epoch=0,
    )
    image = replay([*BASE[:3], old, FenceBrokerRecordV0(id=1, epoch=10)])
    stored = image.topics_by_name["t"].partitions[0]
    assert type(stored) is PartitionRecord and stored.directories == (DIRECTORY_MIGRATING,)


def test_topics_configs_and_features() -> None:
    image = replay(
        [
            *BASE,
            ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value="5"),
            ConfigRecord(resource_type=4, resource_name="", name="a", value="1"),
            ConfigRecord(resource_type=4, resource_name="", name="b", value="2"),
            ConfigRecord(resource_type=4, resource_name="", name="a", value=None),
            FeatureLevelRecord(name="metadata.version", feature_level=21),
            FeatureLevelRecord(name="kraft.version", feature_level=1),
            FeatureLevelRecord(name="kraft.version", feature_level=0),
            NoOpRecord(),
        ]
    )
    assert image.topic_configs("t") == {"retention.ms": "5"}
    assert image.configs[ConfigResource(4, "")] == {"b": "2"}
    assert image.features == {"metadata.version": 21}
    image = replay(
        [
            RemoveTopicRecord(topic_id=T),
            ConfigRecord(resource_type=4, resource_name="", name="b", value=None),
        ],
        image,
    )
    assert image.topics_by_id == {} and image.topics_by_name == {}
    assert image.configs == {}  # the topic's configs went with it, the empty default too
    image = replay([TopicRecord(name="t", topic_id=uuid.UUID(int=10))], image)
    assert image.topic("t") is not None and image.topic_configs("t") == {}


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([UnregisterBrokerRecord(broker_id=7, broker_epoch=1)], "no broker registration found"),
        ([FenceBrokerRecord(id=1, epoch=99)], "no broker registration with that epoch found"),
        (
            [BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=2)],
            "unknown value for fenced field: 2",
        ),
        ([TopicRecord(name="u", topic_id=T)], "topic id is already topic 't'"),
        ([TopicRecord(name="t", topic_id=uuid.UUID(int=77))], "a topic of that name already"),
        ([partition(topic_id=uuid.UUID(int=77))], "no such topic"),
        ([partition(partition_id=-1)], "a partition id cannot be negative"),
        ([partition(directories=(D1,))], "lengths for replicas and directories do not match"),
        ([PartitionChangeRecord(partition_id=5, topic_id=T)], "no such partition"),
        (
            [PartitionChangeRecord(partition_id=0, topic_id=T, replicas=(1, 2, 3))],
            "lengths for replicas and directories do not match",
        ),
        ([RemoveTopicRecord(topic_id=uuid.UUID(int=77))], "no such topic found"),
        ([register(-1, 1)], "a broker id cannot be negative"),
    ],
)
def test_records_that_do_not_fit_are_bugs(records: list[Any], message: str) -> None:
    base = replay(BASE)
    with pytest.raises(ReplayError, match=rf"^BUG: unable to replay .*{message}"):
        replay(records, base)


def test_unknown_record_types_hit_the_loud_default() -> None:
    with pytest.raises(ReplayError, match="BUG: no replay for dict"):
        MetadataDelta().replay({"type": "PARTITION_RECORD"})
    schema = {
        "apiKey": 90,
        "type": "metadata",
        "name": "SampleRecord",
        "validVersions": "0",
        "flexibleVersions": "0+",
        "fields": [],
    }
    sample = build_record_types({"SampleRecord.json": json.dumps(schema)})[90].classes[0]
    with pytest.raises(ReplayError, match="BUG: no replay for SampleRecordV0"):
        replay([sample()])


def test_images_are_immutable_and_deltas_copy_on_write() -> None:
    first = replay(BASE)
    second = replay([PartitionChangeRecord(partition_id=0, topic_id=T, leader=2)], first)
    assert first.topics_by_name["t"].partitions[0].leader == 1
    assert second.topics_by_name["t"].partitions[0].leader == 2
    assert second.brokers is first.brokers  # untouched parts are shared
    with pytest.raises(TypeError):
        first.brokers[5] = first.brokers[1]  # type: ignore[index]
    assert MetadataImage() == replay([])


def test_a_delta_goes_on_after_apply() -> None:
    delta = MetadataDelta()
    delta.replay_all(BASE[:3])
    first = delta.apply()
    delta.replay(BASE[3])
    second = delta.apply()
    assert first.num_partitions == 0 and second.num_partitions == 1
    assert second == replay(BASE)
