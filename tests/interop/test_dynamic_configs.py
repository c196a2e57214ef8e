"""Dynamic broker configurations through any broker, with real Kafka clients: changed with
IncrementalAlterConfigs (librdkafka) and AlterConfigs (kafka-python, aiokafka), refused in
Kafka's words, described with every key, and taking effect on the running brokers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AioConfigResourceType
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType

from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey
from tests.interop.conftest import Cluster, eventually

THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
NO_THROTTLE = str(2**63 - 1)
SET, DELETE = 0, 1


def address(cluster: Cluster, broker_id: int) -> str:
    (broker,) = [b for b in cluster.brokers if b["id"] == broker_id]
    return f"{broker['host']}:{broker['port']}"


def raw_incremental(cluster: Cluster, broker_id: int, name: str, op: int, value: str | None) -> Any:
    """IncrementalAlterConfigs of BROKER ``name`` sent to broker ``broker_id`` as is (the
    cluster default "" is a name kafka-python and confluent-kafka will not send)."""

    async def send() -> Any:
        host, port = address(cluster, broker_id).split(":")
        async with await KafkaConnection.connect(host, int(port)) as connection:
            await connection.negotiate_versions()
            return await connection.request(
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                resources=[
                    {
                        "resource_type": 4,
                        "resource_name": name,
                        "configs": [{"name": THROTTLE, "config_operation": op, "value": value}],
                    }
                ],
                validate_only=False,
            )

    (result,) = asyncio.run(asyncio.wait_for(send(), 60)).responses
    return result


def describe(admin: AdminClient, broker_id: int) -> dict[str, Any]:
    futures = admin.describe_configs([ConfigResource(ResourceType.BROKER, str(broker_id))])
    (future,) = futures.values()
    return dict(future.result(timeout=30))


def test_librdkafka_changes_a_brokers_throttle_through_that_broker(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    change = ConfigResource(
        ResourceType.BROKER,
        "2",
        incremental_configs=[
            ConfigEntry(THROTTLE, "104857600", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    try:
        (future,) = admin.incremental_alter_configs([change]).values()
        assert future.result(timeout=30) is None
        entry = describe(admin, 2)[THROTTLE]
        assert (entry.value, entry.source, entry.is_read_only) == (
            "104857600",
            ConfigSource.DYNAMIC_BROKER_CONFIG.value,
            False,
        )
        assert THROTTLE not in describe(admin, 3)  # another broker's value is its own
    finally:
        undo = ConfigResource(
            ResourceType.BROKER,
            "2",
            incremental_configs=[
                ConfigEntry(THROTTLE, None, incremental_operation=AlterConfigOpType.DELETE)
            ],
        )
        (future,) = admin.incremental_alter_configs([undo]).values()
        future.result(timeout=30)
    assert THROTTLE not in describe(admin, 2)


def test_librdkafka_gets_kafkas_refusal_of_a_read_only_key(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    change = ConfigResource(
        ResourceType.BROKER,
        "1",
        incremental_configs=[
            ConfigEntry("log.dirs", "/elsewhere", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    (future,) = admin.incremental_alter_configs([change]).values()
    with pytest.raises(KafkaException) as caught:
        future.result(timeout=30)
    error = caught.value.args[0]
    assert error.name() == "INVALID_REQUEST"
    assert error.str() == "Cannot update these configs dynamically: Set(log.dirs)"


def test_librdkafka_describes_every_broker_key(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    entries = describe(admin, 4)
    assert len(entries) > 280
    rack = entries["broker.rack"]
    assert (rack.value, rack.source, rack.is_read_only) == (
        "/dc2/r2",
        ConfigSource.STATIC_BROKER_CONFIG.value,
        True,
    )
    threads = entries["num.replica.alter.log.dirs.threads"]
    assert (threads.value, threads.source, threads.is_read_only) == (
        None,
        ConfigSource.DEFAULT_CONFIG.value,
        True,
    )
    delay = entries["log.segment.delete.delay.ms"]
    assert (delay.value, delay.is_read_only) == ("60000", False)


def test_kafka_python_alter_configs_replaces_a_brokers_set(cluster: Cluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:

        def alter(configs: dict[str, str]) -> Any:
            return admin.alter_configs(
                [KpConfigResource(KpConfigResourceType.BROKER, "3", configs=configs)],
                raise_on_unknown=False,
                incremental=False,
            )

        assert alter({THROTTLE: "1048576", "log.cleaner.backoff.ms": "500"}) == {
            "broker": {"3": "OK"}
        }
        described = admin.describe_configs(
            [KpConfigResource(KpConfigResourceType.BROKER, "3")], config_filter="all"
        )
        entries = described["broker"]["3"]
        assert entries[THROTTLE]["value"] == "1048576"
        assert entries[THROTTLE]["config_source"] == "DYNAMIC_BROKER_CONFIG"
        refused = alter({"num.partitions": "3"})
        assert "Cannot update these configs dynamically: Set(num.partitions)" in str(refused)
    finally:
        # kafka-python adds back the keys it finds set: clear them one by one.
        admin.alter_configs(
            [
                KpConfigResource(
                    KpConfigResourceType.BROKER,
                    "3",
                    configs={
                        THROTTLE: ("DELETE", None),
                        "log.cleaner.backoff.ms": ("DELETE", None),
                    },
                )
            ],
            raise_on_unknown=False,
            incremental=True,
        )
        admin.close()


def test_aiokafka_alter_configs_through_any_broker(cluster: Cluster) -> None:
    async def scenario() -> Any:
        admin = AIOKafkaAdminClient(bootstrap_servers=address(cluster, 5))
        await admin.start()
        try:
            resource = AioConfigResource(
                AioConfigResourceType.BROKER, "5", configs={THROTTLE: "2097152"}
            )
            altered = await admin.alter_configs([resource])
            described = await admin.describe_configs(
                [AioConfigResource(AioConfigResourceType.BROKER, "5")]
            )
            await admin.alter_configs(
                [AioConfigResource(AioConfigResourceType.BROKER, "5", configs={})]
            )
            return altered, described
        finally:
            await admin.close()

    altered, described = asyncio.run(scenario())
    # aiokafka sends the topic resources (here none) and each broker's on their own.
    results = [tuple(r) for response in altered for r in response.resources]
    assert [(r[0], r[3]) for r in results] == [(0, "5")]
    (resource,) = described[0].resources
    entries = {c[0]: c[1] for c in resource[4]}
    assert entries[THROTTLE] == "2097152"


def test_the_cluster_default_reaches_every_running_broker(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    result = raw_incremental(cluster, 6, "", SET, NO_THROTTLE)
    assert (int(result.error_code), result.error_message) == (0, None)
    try:
        for broker in cluster.brokers:
            broker_id = int(str(broker["id"]))
            entry = eventually(lambda b=broker_id: describe(admin, b).get(THROTTLE))
            assert (entry.value, entry.source) == (
                NO_THROTTLE,
                ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
            )
            log = Path(cluster.dir) / f"broker-{broker_id}" / "server.log"
            eventually(
                lambda log=log: (
                    f"dynamic broker configuration changed: {THROTTLE}"
                    in log.read_text(encoding="utf-8")
                )
            )
        refused = raw_incremental(cluster, 6, "", SET, "-1")
        assert (int(refused.error_code), refused.error_message) == (
            42,
            f"Invalid value -1 for configuration {THROTTLE}: Value must be at least 0",
        )
    finally:
        raw_incremental(cluster, 6, "", DELETE, None)


def test_kafka_python_lists_the_config_resources(cluster: Cluster) -> None:
    topic = "listed-config-resources"
    creator = AdminClient({"bootstrap.servers": cluster.bootstrap})
    creator.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        brokers = [str(b["id"]) for b in sorted(cluster.brokers, key=lambda b: int(b["id"]))]
        listed = eventually(
            lambda: (found := admin.list_config_resources()) and topic in found["topic"] and found
        )
        assert listed["broker"] == listed["broker_logger"] == brokers
        assert listed["topic"] == sorted(listed["topic"])
        assert set(listed) == {"broker", "broker_logger", "topic"}  # no group has configs
        assert admin.list_config_resources(["BROKER"]) == {"broker": brokers}
    finally:
        admin.close()
