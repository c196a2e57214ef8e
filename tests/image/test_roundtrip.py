"""The image written out as records (a snapshot) and replayed is the same image: for any
sequence of valid records, whichever record versions it used, through bytes and in pieces."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.image import MetadataDelta, replay
from rackwise.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    encode_batch,
    encode_frames,
    iter_batches,
)
from rackwise.records.constants import DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED
from rackwise.records.metadata import PartitionRecordV0, RegisterBrokerRecordV1

DIRS = [DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED, *(uuid.UUID(int=n) for n in range(100, 104))]


class _Cluster:
    """Just enough state to draw records the image must accept."""

    def __init__(self) -> None:
        self.brokers: dict[int, int] = {}
        self.topics: dict[str, tuple[uuid.UUID, int]] = {}
        self.next_epoch = 1
        self.next_topic = 0


def _replicas(draw: st.DrawFn, cluster: _Cluster) -> tuple[int, ...]:
    pool = sorted(cluster.brokers) or [0]
    return tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True)))


def _register(draw: st.DrawFn, cluster: _Cluster) -> list[Any]:
    broker_id = draw(st.integers(0, 6))
    epoch = cluster.next_epoch
    cluster.next_epoch += 1
    cluster.brokers[broker_id] = epoch
    endpoint = RegisterBrokerRecord.BrokerEndpoint(
        name="PLAINTEXT", host="localhost", port=9000 + broker_id, security_protocol=0
    )
    common: dict[str, Any] = {
        "broker_id": broker_id,
        "incarnation_id": draw(st.uuids()),
        "broker_epoch": epoch,
        "features": (),
        "rack": draw(st.one_of(st.none(), st.sampled_from(["/dc1/r1", "/dc2/r1", "r3"]))),
        "fenced": draw(st.booleans()),
    }
    if draw(st.booleans()):
        return [
            RegisterBrokerRecordV1(
                end_points=(RegisterBrokerRecordV1.BrokerEndpoint(**vars_of(endpoint)),), **common
            )
        ]
    dirs = tuple(draw(st.lists(st.sampled_from(DIRS[2:]), max_size=2, unique=True)))
    return [RegisterBrokerRecord(end_points=(endpoint,), log_dirs=dirs, **common)]


def vars_of(record: Any) -> dict[str, Any]:
    return {f.python_name: getattr(record, f.python_name) for f in type(record).__fields__}


def _change_broker(draw: st.DrawFn, cluster: _Cluster) -> list[Any]:
    if not cluster.brokers:
        return []
    broker_id = draw(st.sampled_from(sorted(cluster.brokers)))
    epoch = cluster.brokers[broker_id]
    kind = draw(st.sampled_from(["fence", "unfence", "change", "unregister"]))
    if kind == "fence":
        return [FenceBrokerRecord(id=broker_id, epoch=epoch)]
    if kind == "unfence":
        return [UnfenceBrokerRecord(id=broker_id, epoch=epoch)]
    if kind == "unregister":
        del cluster.brokers[broker_id]
        return [UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=epoch)]
    return [
        BrokerRegistrationChangeRecord(
            broker_id=broker_id,
            broker_epoch=epoch,
            fenced=draw(st.sampled_from([-1, 0, 1])),
            in_controlled_shutdown=draw(st.sampled_from([0, 1])),
            log_dirs=tuple(draw(st.lists(st.sampled_from(DIRS[2:]), max_size=2, unique=True))),
        )
    ]


def _create_topic(draw: st.DrawFn, cluster: _Cluster) -> list[Any]:
    name = f"topic-{cluster.next_topic}"
    cluster.next_topic += 1
    topic_id = draw(st.uuids())
    count = draw(st.integers(0, 4))
    cluster.topics[name] = (topic_id, count)
    records: list[Any] = [TopicRecord(name=name, topic_id=topic_id)]
    for p in range(count):
        replicas = _replicas(draw, cluster)
        isr = tuple(draw(st.lists(st.sampled_from(replicas), max_size=3, unique=True)))
        common: dict[str, Any] = {
            "partition_id": p,
            "topic_id": topic_id,
            "replicas": replicas,
            "isr": isr,
            "removing_replicas": (),
            "adding_replicas": (),
            "leader": isr[0] if isr else -1,
            "leader_epoch": draw(st.integers(0, 5)),
            "partition_epoch": draw(st.integers(0, 5)),
        }
        if draw(st.booleans()):
            records.append(PartitionRecordV0(**common))
        else:
            dirs = draw(
                st.one_of(
                    st.just(()),
                    st.lists(st.sampled_from(DIRS), min_size=len(replicas), max_size=len(replicas)),
                )
            )
            records.append(PartitionRecord(directories=tuple(dirs), **common))
    return records


def _change_partition(draw: st.DrawFn, cluster: _Cluster) -> list[Any]:
    candidates = [(n, t) for n, t in cluster.topics.items() if t[1] > 0]
    if not candidates:
        return []
    _, (topic_id, count) = draw(st.sampled_from(candidates))
    partition_id = draw(st.integers(0, count - 1))
    replicas = draw(st.one_of(st.none(), st.just(_replicas(draw, cluster))))
    # A change of replicas carries their directories, as Kafka's controller writes it: a
    # partition placed in directories cannot keep them when its replica count changes.
    directories = None
    if replicas is not None:
        directories = tuple(draw(st.sampled_from(DIRS)) for _ in replicas)
    elr = draw(st.one_of(st.none(), st.lists(st.integers(0, 6), max_size=2).map(tuple)))
    return [
        PartitionChangeRecord(
            partition_id=partition_id,
            topic_id=topic_id,
            isr=draw(st.one_of(st.none(), st.lists(st.integers(0, 6), max_size=3).map(tuple))),
            leader=draw(st.sampled_from([-2, -1, 0, 1, 2])),
            replicas=replicas,
            directories=directories if replicas is not None else None,
            leader_recovery_state=draw(st.sampled_from([-1, 0, 1])),
            eligible_leader_replicas=elr,
        )
    ]


def _remove_topic(draw: st.DrawFn, cluster: _Cluster) -> list[Any]:
    if not cluster.topics:
        return []
    name = draw(st.sampled_from(sorted(cluster.topics)))
    topic_id, _ = cluster.topics.pop(name)
    return [RemoveTopicRecord(topic_id=topic_id)]


def _config(draw: st.DrawFn, cluster: _Cluster) -> list[Any]:
    names = sorted(cluster.topics) or ["absent"]
    resource_type, resource_name = draw(
        st.one_of(
            st.tuples(st.just(2), st.sampled_from(names)),
            st.tuples(st.just(4), st.sampled_from(["", "1", "2"])),
        )
    )
    return [
        ConfigRecord(
            resource_type=resource_type,
            resource_name=resource_name,
            name=draw(st.sampled_from(["retention.ms", "cleanup.policy", "x"])),
            value=draw(st.one_of(st.none(), st.text(max_size=5))),
        )
    ]


def _feature(draw: st.DrawFn, cluster: _Cluster) -> list[Any]:
    name = draw(st.sampled_from(["metadata.version", "kraft.version", "group.version"]))
    return [FeatureLevelRecord(name=name, feature_level=draw(st.integers(0, 25)))]


OPERATIONS = [
    _register,
    _change_broker,
    _create_topic,
    _change_partition,
    _remove_topic,
    _config,
    _feature,
]


@st.composite
def record_histories(draw: st.DrawFn) -> list[Any]:
    cluster = _Cluster()
    records: list[Any] = []
    for _ in range(draw(st.integers(0, 25))):
        operation = draw(st.sampled_from(OPERATIONS))
        records.extend(operation(draw, cluster))
    return records


@settings(max_examples=150, deadline=None)
@given(record_histories(), st.integers(1, 7))
def test_snapshot_records_replay_to_the_same_image(records: list[Any], pieces: int) -> None:
    image = replay(records)
    snapshot = image.to_records()
    assert replay(snapshot) == image
    assert replay(snapshot).to_records() == snapshot
    data = encode_batch(0, 1, 0, encode_frames(snapshot)) if snapshot else b""
    decoded = [r for batch in iter_batches(data) for r in batch.records]
    assert replay(decoded) == image
    delta = MetadataDelta()
    step = max(1, len(records) // pieces)
    for start in range(0, len(records), step):
        delta.replay_all(records[start : start + step])
        delta.apply()
    assert delta.image == image
