"""Records for log tests: a topic with partitions, small and valid."""

from __future__ import annotations

import uuid
from typing import Any

from rackwise.records import PartitionRecord, RegisterBrokerRecord, TopicRecord


def broker(broker_id: int, epoch: int = 0) -> Any:
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=uuid.UUID(int=broker_id + 1),
        broker_epoch=epoch,
        end_points=(
            RegisterBrokerRecord.BrokerEndpoint(
                name="PLAINTEXT", host="127.0.0.1", port=9092 + broker_id, security_protocol=0
            ),
        ),
        features=(),
        rack=f"/dc{broker_id % 2}/r{broker_id}",
        log_dirs=(uuid.UUID(int=1000 + broker_id),),
    )


def topic(name: str, partitions: int, brokers: int = 3) -> list[Any]:
    """A TopicRecord and its PartitionRecords, replicas striped over ``brokers`` brokers."""
    topic_id = uuid.uuid5(uuid.NAMESPACE_DNS, name)
    records: list[Any] = [TopicRecord(name=name, topic_id=topic_id)]
    for p in range(partitions):
        replicas = tuple((p + i) % brokers for i in range(min(3, brokers)))
        records.append(
            PartitionRecord(
                partition_id=p,
                topic_id=topic_id,
                replicas=replicas,
                isr=replicas,
                removing_replicas=(),
                adding_replicas=(),
                leader=replicas[0],
                leader_epoch=0,
                partition_epoch=0,
                directories=tuple(uuid.UUID(int=1000 + b) for b in replicas),
            )
        )
    return records
