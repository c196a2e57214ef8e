"""The broker's replication quotas follow the metadata image: the throttled-replica lists of the
topics (this broker's entries only, ``*``, a list removed or its topic deleted), and the two
rates from the dynamic configuration (the broker's own value over the cluster default), apart
from the log-directory mover's throttle."""

from __future__ import annotations

import uuid

from rackwise.broker.replication_quotas import ReplicationQuotas
from rackwise.image import MetadataImage, replay
from rackwise.node.data_config import DataPathConfig
from rackwise.node.dynamic_config import DynamicBrokerConfig
from rackwise.records.metadata import ConfigRecord, RemoveTopicRecord, TopicRecord

LEADER = "leader.replication.throttled.replicas"
FOLLOWER = "follower.replication.throttled.replicas"


def topic_config(topic: str, key: str, value: str | None) -> ConfigRecord:
    return ConfigRecord(resource_type=2, resource_name=topic, name=key, value=value)


def broker_config(name: str, key: str, value: str) -> ConfigRecord:
    return ConfigRecord(resource_type=4, resource_name=name, name=key, value=value)


def test_the_lists_follow_the_image() -> None:
    ids = {t: uuid.uuid4() for t in ("a", "b", "c")}
    records: list[object] = [TopicRecord(name=t, topic_id=i) for t, i in ids.items()]
    records += [
        topic_config("a", LEADER, "0:2,1:3,2:2"),
        topic_config("a", FOLLOWER, "0:3"),
        topic_config("b", FOLLOWER, "*"),
    ]
    image = replay(records)
    quotas = ReplicationQuotas(2, lambda: DataPathConfig.from_properties({}))
    quotas.apply(image)
    assert dict(quotas.leader.throttled_topics) == {"a": frozenset({0, 2})}
    assert dict(quotas.follower.throttled_topics) == {"a": frozenset(), "b": frozenset({-1})}
    assert quotas.follower.is_throttled("b", 7) and not quotas.follower.is_throttled("a", 0)
    quotas.apply(image)  # the same configs: nothing read again
    later = replay([topic_config("a", LEADER, None), RemoveTopicRecord(topic_id=ids["b"])], image)
    quotas.apply(later)
    assert dict(quotas.leader.throttled_topics) == {}
    assert dict(quotas.follower.throttled_topics) == {"a": frozenset()}


def test_the_rates_come_from_the_dynamic_configuration_apart_from_the_movers() -> None:
    static = DataPathConfig.from_properties({"follower.replication.throttled.rate": "5000"})
    images = [MetadataImage()]
    dynamic = DynamicBrokerConfig(
        1, {"follower.replication.throttled.rate": "5000"}, lambda: images[-1]
    )
    quotas = ReplicationQuotas(1, lambda: static.with_dynamic(dynamic))
    assert (quotas.leader.bound(), quotas.follower.bound()) == (2**63 - 1, 5000)
    images.append(
        replay(
            [
                broker_config("", "leader.replication.throttled.rate", "1000"),
                broker_config("1", "leader.replication.throttled.rate", "2000"),
                broker_config("", "replica.alter.log.dirs.io.max.bytes.per.second", "300"),
            ]
        )
    )
    assert (quotas.leader.bound(), quotas.follower.bound()) == (2000, 5000)
    live = static.with_dynamic(dynamic)
    assert live.replica_alter_log_dirs_io_max_bytes_per_second == 300
    assert (quotas.leader.rate.samples, quotas.leader.rate.window_ms) == (11, 1000)
