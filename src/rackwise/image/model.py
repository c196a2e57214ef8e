"""The metadata image: the cluster as the records so far describe it, as immutable values.

Modelled on Kafka's ``org.apache.kafka.image.MetadataImage``: features, the cluster (brokers),
topics (by id and by name, each with its partitions), configs, the start of the next block
of producer ids (Kafka's ``ProducerIdsImage``) and the ACLs (``AclsImage``). Every part is
written back out as records by :meth:`MetadataImage.to_records`, which is what a snapshot
holds; replaying those records onto the empty image gives an equal image.

A broker's registration is kept as the ``RegisterBrokerRecord`` that would recreate it (fencing,
controlled shutdown and log directories already applied), and a partition as the
``PartitionRecord`` that would, as Kafka's ``BrokerRegistration.toRecord`` and
``PartitionRegistration.toRecord`` produce them: the image and its snapshot share one shape, and
loading a snapshot of a million partitions builds no second object per partition. Both are the
latest version's classes whatever version was replayed.

The image holds no soft state: heartbeat times, leases and sessions live in the controller and
never enter the log.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from rackwise.image.acls import record_of
from rackwise.records.constants import (
    METADATA_VERSION_FEATURE,
    NO_BROKER,
    NO_BROKER_EPOCH,
    NO_NEXT_PRODUCER_ID,
    TOPIC_RESOURCE,
)
from rackwise.records.metadata import (
    ConfigRecord,
    FeatureLevelRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UserScramCredentialRecord,
)
from rackwise.security.acl import AclBinding

BrokerRegistration = RegisterBrokerRecord
"""A broker as the image holds it: its current registration, as a record."""


def endpoint_on(broker: BrokerRegistration, listener_name: str) -> Any | None:
    """The broker's endpoint on the listener named ``listener_name``, or None when it has none
    (Kafka's ``BrokerRegistration.node(listenerName)``)."""
    for endpoint in broker.end_points:
        if endpoint.name == listener_name:
            return endpoint
    return None


PartitionRegistration = PartitionRecord
"""A partition as the image holds it: its whole current state, as a record."""


def _empty() -> Mapping[Any, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ConfigResource:
    """A configured resource: Kafka's ``ConfigResource`` type id (2 topic, 4 broker) and name
    (a topic name, a broker id, "" for the cluster-wide broker default)."""

    resource_type: int
    name: str


@dataclass(frozen=True, slots=True)
class TopicImage:
    """A topic: its name, its id and its partitions by partition id."""

    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=_empty)

    def partition_ids(self) -> list[int]:
        return sorted(self.partitions)


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """The whole image. Built only by :class:`~rackwise.image.delta.MetadataDelta`; the maps
    are read-only views of maps nothing else holds."""

    features: Mapping[str, int] = field(default_factory=_empty)
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=_empty)
    topics_by_id: Mapping[uuid.UUID, TopicImage] = field(default_factory=_empty)
    topics_by_name: Mapping[str, TopicImage] = field(default_factory=_empty)
    configs: Mapping[ConfigResource, Mapping[str, str]] = field(default_factory=_empty)
    next_producer_id: int = NO_NEXT_PRODUCER_ID
    """The first producer id of the next block the controller hands out;
    :data:`~rackwise.records.constants.NO_NEXT_PRODUCER_ID` before the first (which starts
    at 0)."""
    acls: Mapping[uuid.UUID, AclBinding] = field(default_factory=_empty)
    """The ACLs by id (AccessControlEntryRecord); the same map object from one image to the
    next until an ACL changes, so what is built from it can be kept as long as it is."""
    scram_credentials: Mapping[tuple[str, int], UserScramCredentialRecord] = field(
        default_factory=_empty
    )
    """Users' SCRAM credentials by (user name, mechanism type), as the records that would
    recreate them: salts and keys, never a password (Kafka's ``ScramImage``)."""

    @property
    def num_partitions(self) -> int:
        return sum(len(t.partitions) for t in self.topics_by_id.values())

    def topic(self, name: str) -> TopicImage | None:
        return self.topics_by_name.get(name)

    def topic_configs(self, name: str) -> Mapping[str, str]:
        """The configuration keys set on topic ``name`` (none: an empty map)."""
        return self.configs.get(ConfigResource(TOPIC_RESOURCE, name), MappingProxyType({}))

    def iter_partitions(self) -> Iterator[tuple[TopicImage, PartitionRegistration]]:
        """Every partition with its topic, topics by name, partitions by id."""
        for name in sorted(self.topics_by_name):
            topic = self.topics_by_name[name]
            for partition_id in topic.partition_ids():
                yield topic, topic.partitions[partition_id]

    def to_records(self) -> list[Any]:
        """The image as records, in the order a snapshot holds them (Kafka's): features
        (``metadata.version`` first), brokers by id, each topic by name followed by its
        partitions by id, configs by resource and key, then the next producer id block's start
        (a ProducerIdsRecord of no broker, once a block has been handed out), then the ACLs
        by id, then the users' SCRAM credentials by user and mechanism."""
        records: list[Any] = []
        for name in sorted(self.features, key=lambda n: (n != METADATA_VERSION_FEATURE, n)):
            records.append(FeatureLevelRecord(name=name, feature_level=self.features[name]))
        records.extend(self.brokers[broker_id] for broker_id in sorted(self.brokers))
        for name in sorted(self.topics_by_name):
            topic = self.topics_by_name[name]
            records.append(TopicRecord(name=topic.name, topic_id=topic.topic_id))
            partitions = topic.partitions
            records.extend(partitions[p] for p in sorted(partitions))
        for resource in sorted(self.configs, key=lambda r: (r.resource_type, r.name)):
            keys = self.configs[resource]
            records.extend(
                ConfigRecord(
                    resource_type=resource.resource_type,
                    resource_name=resource.name,
                    name=key,
                    value=keys[key],
                )
                for key in sorted(keys)
            )
        if self.next_producer_id != NO_NEXT_PRODUCER_ID:
            records.append(
                ProducerIdsRecord(
                    broker_id=NO_BROKER,
                    broker_epoch=NO_BROKER_EPOCH,
                    next_producer_id=self.next_producer_id,
                )
            )
        if self.acls:
            records.extend(record_of(i, self.acls[i]) for i in sorted(self.acls))
        records.extend(self.scram_credentials[key] for key in sorted(self.scram_credentials))
        return records
