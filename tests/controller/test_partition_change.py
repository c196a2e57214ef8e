"""PartitionChangeRecords as Kafka's PartitionChangeBuilder writes them; the cases are those of
Kafka's PartitionChangeBuilderTest (version 2, the record this controller writes)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from rackwise.controller import Election, build_partition_change
from rackwise.image import replay
from rackwise.records import PartitionChangeRecord, PartitionRecord, TopicRecord
from rackwise.records.constants import DIRECTORY_MIGRATING, LEADER_RECOVERING

TOPIC = uuid.UUID(int=99)


def _partition(
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    leader: int,
    elr: tuple[int, ...] | None = None,
    last_known: tuple[int, ...] | None = None,
) -> Any:
    record = PartitionRecord(
        partition_id=0,
        topic_id=TOPIC,
        replicas=replicas,
        isr=isr,
        removing_replicas=(),
        adding_replicas=(),
        leader=leader,
        leader_epoch=100,
        partition_epoch=200,
        directories=(DIRECTORY_MIGRATING,) * len(replicas),
        eligible_leader_replicas=elr or None,
        last_known_elr=last_known or None,
    )
    image = replay([TopicRecord(name="t", topic_id=TOPIC), record])
    return image.topics_by_id[TOPIC].partitions[0]


def _change(**fields: Any) -> Any:
    return PartitionChangeRecord(partition_id=0, topic_id=TOPIC, **fields)


FOO = _partition((2, 1, 3), (2, 1, 3), 1)
BAZ = _partition((2, 1, 3), (1, 3), 3)
OFFLINE = _partition((2, 1, 3), (), -1, elr=(3,), last_known=(2,))


def _not(broker: int) -> Callable[[int], bool]:
    return lambda r: r != broker


def test_nothing_changes_no_record() -> None:
    assert build_partition_change(FOO, TOPIC, _not(3), elr_enabled=True, min_isr=2) is None


def test_isr_shrink_keeps_the_leader_and_its_epoch() -> None:
    record = build_partition_change(FOO, TOPIC, _not(3), target_isr=[2, 1], min_isr=2)
    assert record == _change(isr=(2, 1))  # no leader field: the leader epoch stays


def test_elections_of_kafkas_test() -> None:
    def leader(partition: Any, acceptable: Callable[[int], bool], **kw: Any) -> int:
        record = build_partition_change(partition, TOPIC, acceptable, min_isr=2, **kw)
        return partition.leader if record is None or record.leader == -2 else record.leader

    assert leader(FOO, _not(3), election=Election.PREFERRED) == 2
    assert leader(FOO, _not(3)) == 1
    assert leader(FOO, _not(3), election=Election.UNCLEAN) == 1
    assert leader(FOO, _not(3), target_isr=[1, 3]) == 1
    assert leader(FOO, _not(3), target_isr=[3]) == -1
    assert leader(FOO, _not(3), target_isr=[3], election=Election.UNCLEAN) == 2
    assert leader(BAZ, lambda r: True, election=Election.PREFERRED) == 3
    assert leader(BAZ, lambda r: True) == 3


def test_unclean_election_makes_the_leader_the_isr_and_recovering() -> None:
    record = build_partition_change(
        FOO, TOPIC, _not(3), target_isr=[3], election=Election.UNCLEAN, min_isr=2
    )
    assert record == _change(isr=(2,), leader=2, leader_recovery_state=LEADER_RECOVERING)
    offline = build_partition_change(
        OFFLINE, TOPIC, lambda r: r == 1, election=Election.UNCLEAN, elr_enabled=True, min_isr=2
    )
    assert offline == _change(
        isr=(1,),
        leader=1,
        leader_recovery_state=LEADER_RECOVERING,
        eligible_leader_replicas=(),
        last_known_elr=(),
    )


def test_elr_isr_shrink_below_min_isr() -> None:
    partition = _partition((1, 2, 3, 4), (1, 2, 3, 4), 1)
    record = build_partition_change(
        partition,
        TOPIC,
        _not(3),
        target_isr=[1, 2],
        election=Election.PREFERRED,
        elr_enabled=True,
        min_isr=3,
    )
    assert record == _change(isr=(1, 2), eligible_leader_replicas=(3, 4))


def test_elr_isr_expand_above_min_isr_clears_the_elr() -> None:
    partition = _partition((1, 2, 3, 4), (1, 2), 1, elr=(3,))
    record = build_partition_change(
        partition, TOPIC, _not(3), target_isr=[1, 2, 3], elr_enabled=True, min_isr=3
    )
    assert record == _change(isr=(1, 2, 3), eligible_leader_replicas=())


def test_elr_unclean_shutdown_replica_leaves_the_elr() -> None:
    partition = _partition((1, 2, 3, 4), (1,), 1, elr=(2, 3))
    record = build_partition_change(
        partition, TOPIC, _not(3), elr_enabled=True, min_isr=3, unclean_shutdown_replicas=[3]
    )
    assert record == _change(eligible_leader_replicas=(2,))


def test_elr_member_is_elected_when_the_isr_is_gone() -> None:
    partition = _partition((1, 2, 3, 4), (1,), 1, elr=(3,))
    record = build_partition_change(
        partition,
        TOPIC,
        _not(1),
        target_isr=[],
        election=Election.PREFERRED,
        elr_enabled=True,
        min_isr=3,
    )
    assert record == _change(isr=(3,), leader=3, eligible_leader_replicas=(1,))


def test_elr_isr_can_shrink_to_zero_and_remembers_the_last_leader() -> None:
    partition = _partition((1, 2, 3, 4), (1, 2, 3, 4), 1)
    record = build_partition_change(
        partition, TOPIC, lambda r: False, target_isr=[], elr_enabled=True, min_isr=3
    )
    assert record == _change(
        isr=(), leader=-1, eligible_leader_replicas=(1, 2, 3, 4), last_known_elr=(1,)
    )


def test_elr_last_known_leader_is_elected_only_if_acceptable() -> None:
    lost = _partition((1, 2, 3, 4), (), -1, last_known=(1,))
    record = build_partition_change(lost, TOPIC, lambda r: True, elr_enabled=True, min_isr=3)
    assert record == _change(
        isr=(1,), leader=1, leader_recovery_state=LEADER_RECOVERING, last_known_elr=()
    )
    assert build_partition_change(lost, TOPIC, _not(1), elr_enabled=True, min_isr=3) is None
    with_elr = _partition((1, 2, 3, 4), (), -1, elr=(3,), last_known=(1,))
    assert build_partition_change(with_elr, TOPIC, _not(3), elr_enabled=True, min_isr=3) is None


def test_without_elr_the_isr_never_empties() -> None:
    partition = _partition((1, 2), (1,), 1)
    record = build_partition_change(partition, TOPIC, _not(1), target_isr=[], min_isr=1)
    assert record == _change(leader=-1)  # Kafka keeps the last in-sync replica in the ISR


def test_elr_order_is_javas_hash_set_order() -> None:
    partition = _partition((40, 17, 1, 33), (40, 17, 1, 33), 40)
    record = build_partition_change(
        partition, TOPIC, lambda r: False, target_isr=[], elr_enabled=True, min_isr=2
    )
    assert record is not None
    # A HashSet<Integer> of 16 buckets iterates by value mod 16: 1 and 17 and 33 share
    # bucket 1 (in insertion order), 40 is in bucket 8.
    assert record.eligible_leader_replicas == (17, 1, 33, 40)


def test_replaying_the_record_bumps_the_epochs() -> None:
    record = build_partition_change(FOO, TOPIC, _not(1), target_isr=[2, 3], min_isr=2)
    assert record == _change(isr=(2, 3), leader=2)
    image = replay(
        [
            TopicRecord(name="t", topic_id=TOPIC),
            PartitionRecord(
                partition_id=0,
                topic_id=TOPIC,
                replicas=(2, 1, 3),
                isr=(2, 1, 3),
                removing_replicas=(),
                adding_replicas=(),
                leader=1,
                leader_epoch=100,
                partition_epoch=200,
                directories=(DIRECTORY_MIGRATING,) * 3,
            ),
            record,
        ]
    )
    after = image.topics_by_id[TOPIC].partitions[0]
    assert (after.leader, after.isr, after.leader_epoch, after.partition_epoch) == (
        2,
        (2, 3),
        101,
        201,
    )
