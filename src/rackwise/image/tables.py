"""The image as rows: what the metadata shell shows and ``rackwise metadata dump`` exports.

One list of plain dicts per table, JSON-ready (uuids in Kafka's base64 form), with the column
names the fleet pipeline uses (``broker_id``, ``rack``, ``topic``, ``partition``, ``replicas``,
``leader``, ``isr``). The column lists and their meaning are in :data:`COLUMNS`.
"""

from __future__ import annotations

from typing import Any, Final

from rackwise.image.model import MetadataImage
from rackwise.records.jsonform import kafka_uuid

Row = dict[str, Any]

COLUMNS: Final = {
    "brokers": {
        "broker_id": "the broker's node id",
        "rack": "broker.rack as registered, null without one",
        "incarnation_id": "the broker process's incarnation (Kafka uuid string)",
        "broker_epoch": "the registration's epoch (the offset of its RegisterBrokerRecord)",
        "fenced": "whether the broker is fenced",
        "in_controlled_shutdown": "whether the broker is shutting down",
        "listeners": "its endpoints as NAME://host:port",
        "log_dirs": "the ids of its online log directories (Kafka uuid strings)",
    },
    "topics": {
        "topic": "the topic name",
        "topic_id": "the topic id (Kafka uuid string)",
        "partitions": "the number of partitions",
        "replication_factor": "the largest replica count among its partitions",
    },
    "partitions": {
        "topic": "the topic name",
        "topic_id": "the topic id",
        "partition": "the partition index",
        "replicas": "replica broker ids, the preferred leader first",
        "isr": "in-sync replica broker ids",
        "leader": "the leader's broker id, -1 for none",
        "leader_epoch": "the leader epoch",
        "partition_epoch": "the partition epoch",
        "directories": "each replica's log directory id, in replica order",
        "removing_replicas": "replicas a reassignment is removing",
        "adding_replicas": "replicas a reassignment is adding",
        "leader_recovery_state": "1 while an unclean leader recovers, else 0",
        "eligible_leader_replicas": "KIP-966's ELR, null when unset",
    },
    "configs": {
        "resource_type": "Kafka's ConfigResource type id: 2 topic, 4 broker, 8 broker logger",
        "resource_name": "the topic, the broker id, or '' for the cluster-wide broker default",
        "name": "the configuration key",
        "value": "its value",
    },
}
"""Every table's columns, in order, with what each holds."""


def broker_rows(image: MetadataImage) -> list[Row]:
    rows = []
    for broker_id in sorted(image.brokers):
        b = image.brokers[broker_id]
        rows.append(
            {
                "broker_id": b.broker_id,
                "rack": b.rack,
                "incarnation_id": kafka_uuid(b.incarnation_id),
                "broker_epoch": b.broker_epoch,
                "fenced": b.fenced,
                "in_controlled_shutdown": b.in_controlled_shutdown,
                "listeners": [f"{e.name}://{e.host}:{e.port}" for e in b.end_points],
                "log_dirs": [kafka_uuid(d) for d in b.log_dirs],
            }
        )
    return rows


def topic_rows(image: MetadataImage) -> list[Row]:
    rows = []
    for name in sorted(image.topics_by_name):
        topic = image.topics_by_name[name]
        counts = [len(p.replicas) for p in topic.partitions.values()]
        rows.append(
            {
                "topic": name,
                "topic_id": kafka_uuid(topic.topic_id),
                "partitions": len(topic.partitions),
                "replication_factor": max(counts, default=0),
            }
        )
    return rows


def partition_rows(image: MetadataImage) -> list[Row]:
    rows = []
    for topic, p in image.iter_partitions():
        elr = p.eligible_leader_replicas
        rows.append(
            {
                "topic": topic.name,
                "topic_id": kafka_uuid(topic.topic_id),
                "partition": p.partition_id,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "partition_epoch": p.partition_epoch,
                "directories": [kafka_uuid(d) for d in p.directories],
                "removing_replicas": list(p.removing_replicas),
                "adding_replicas": list(p.adding_replicas),
                "leader_recovery_state": p.leader_recovery_state,
                "eligible_leader_replicas": None if elr is None else list(elr),
            }
        )
    return rows


def config_rows(image: MetadataImage) -> list[Row]:
    rows: list[Row] = []
    for resource in sorted(image.configs, key=lambda r: (r.resource_type, r.name)):
        keys = image.configs[resource]
        rows.extend(
            {
                "resource_type": resource.resource_type,
                "resource_name": resource.name,
                "name": key,
                "value": keys[key],
            }
            for key in sorted(keys)
        )
    return rows


def image_tables(image: MetadataImage) -> dict[str, list[Row]]:
    """Every table of the image, by name."""
    return {
        "brokers": broker_rows(image),
        "topics": topic_rows(image),
        "partitions": partition_rows(image),
        "configs": config_rows(image),
    }
