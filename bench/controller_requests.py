"""The requests the controller benchmarks send (``bench/controller.py`` and
``bench/controller_quorum.py``): brokers registered and heartbeated unfenced, the log's end
offset, a topic created."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey

PARTITIONS_PER_TOPIC = 100
REPLICATION_FACTOR = 3


async def register_brokers(conn: KafkaConnection, num_brokers: int) -> dict[int, int]:
    """Register ``num_brokers`` brokers (ten racks) and heartbeat them unfenced."""
    epochs: dict[int, int] = {}
    for broker_id in range(1, num_brokers + 1):
        response = await conn.request(
            ApiKey.BROKER_REGISTRATION,
            broker_id=broker_id,
            cluster_id="",
            incarnation_id=uuid.uuid4(),
            listeners=[
                {
                    "name": "PLAINTEXT",
                    "host": "127.0.0.1",
                    "port": 10_000 + broker_id,
                    "security_protocol": 0,
                }
            ],
            features=[],
            rack=f"/dc{broker_id % 2}/r{broker_id % 10}",
            is_migrating_zk_broker=False,
            log_dirs=[uuid.uuid4()],
            previous_broker_epoch=-1,
        )
        assert int(response.error_code) == 0, response
        epochs[broker_id] = int(response.broker_epoch)
    end = await end_offset(conn)
    replies = await asyncio.gather(*(heartbeat(conn, b, e, end - 1) for b, e in epochs.items()))
    assert not any(r.is_fenced for r in replies)
    return epochs


async def end_offset(conn: KafkaConnection) -> int:
    """The committed end of the log: the leader's high watermark, as DescribeQuorum gives it."""
    response = await conn.request(
        ApiKey.DESCRIBE_QUORUM,
        version=2,
        topics=[{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}],
    )
    return int(response.topics[0].partitions[0].high_watermark)


async def heartbeat(conn: KafkaConnection, broker_id: int, epoch: int, offset: int) -> Any:
    return await conn.request(
        ApiKey.BROKER_HEARTBEAT,
        broker_id=broker_id,
        broker_epoch=epoch,
        current_metadata_offset=offset,
        want_fence=False,
        want_shut_down=False,
        offline_log_dirs=[],
    )


async def create_topic(conn: KafkaConnection, name: str) -> None:
    response = await conn.request(
        ApiKey.CREATE_TOPICS,
        topics=[
            {
                "name": name,
                "num_partitions": PARTITIONS_PER_TOPIC,
                "replication_factor": REPLICATION_FACTOR,
                "assignments": [],
                "configs": [],
            }
        ],
        timeout=60_000,
        validate_only=False,
    )
    error = int(response.topics[0].error_code)
    if error != 0:
        raise SystemExit(f"CreateTopics {name} failed with error {error}")
