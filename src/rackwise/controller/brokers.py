"""Questions about brokers that the image answers (Kafka's ``ClusterControlManager`` helpers):
who may lead, where a new replica's log directory is, which brokers a placer may use."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from rackwise.image import MetadataImage, PartitionRegistration
from rackwise.placement import BrokerInfo
from rackwise.records.constants import (
    DIRECTORY_LOST,
    DIRECTORY_MIGRATING,
    DIRECTORY_UNASSIGNED,
)


def is_active(image: MetadataImage, broker_id: int) -> bool:
    """Registered, unfenced and not in controlled shutdown: may lead and be in an ISR."""
    registration = image.brokers.get(broker_id)
    return (
        registration is not None
        and not registration.fenced
        and not registration.in_controlled_shutdown
    )


def is_unfenced(image: MetadataImage, broker_id: int) -> bool:
    registration = image.brokers.get(broker_id)
    return registration is not None and not registration.fenced


def has_online_dir(image: MetadataImage, broker_id: int, directory: uuid.UUID) -> bool:
    """Whether ``directory`` is online on the broker (Kafka's ``DirectoryId.isOnline``): the
    placeholder ids UNASSIGNED and MIGRATING count as online, LOST never does, and a broker
    that registered no directories is taken to have them all."""
    registration = image.brokers.get(broker_id)
    if registration is None:
        return False
    if directory in (DIRECTORY_UNASSIGNED, DIRECTORY_MIGRATING):
        return True
    if directory == DIRECTORY_LOST:
        return False
    return not registration.log_dirs or directory in registration.log_dirs


def replica_directory(partition: PartitionRegistration, broker_id: int) -> uuid.UUID:
    """The log directory of ``broker_id``'s replica of ``partition`` (UNASSIGNED if it holds
    none)."""
    for replica, directory in zip(partition.replicas, partition.directories, strict=False):
        if replica == broker_id:
            return directory
    return DIRECTORY_UNASSIGNED


def leader_acceptor(
    image: MetadataImage, partition: PartitionRegistration
) -> Callable[[int], bool]:
    """Whether a replica of ``partition`` may lead or join its ISR (Kafka's
    ``LeaderAcceptor``): its broker is active and the replica's directory is online."""

    def acceptable(broker_id: int) -> bool:
        return is_active(image, broker_id) and has_online_dir(
            image, broker_id, replica_directory(partition, broker_id)
        )

    return acceptable


def default_dir(image: MetadataImage, broker_id: int) -> uuid.UUID:
    """The directory a new replica on the broker goes to (Kafka's ``defaultDir``): its only
    directory, MIGRATING if it registered none, UNASSIGNED when it has several (the broker
    chooses) or is not registered."""
    registration = image.brokers.get(broker_id)
    if registration is None:
        return DIRECTORY_UNASSIGNED
    if not registration.log_dirs:
        return DIRECTORY_MIGRATING
    if len(registration.log_dirs) == 1:
        return registration.log_dirs[0]
    return DIRECTORY_UNASSIGNED


def usable_brokers(image: MetadataImage) -> list[BrokerInfo]:
    """The brokers a placer may use, by id: every registered broker not in controlled
    shutdown, with its rack and fencing (Kafka's ``usableBrokers``)."""
    return [
        BrokerInfo(b.broker_id, b.rack, b.fenced)
        for broker_id, b in sorted(image.brokers.items())
        if not b.in_controlled_shutdown
    ]


def all_brokers(image: MetadataImage) -> list[BrokerInfo]:
    """Every registered broker by id; one in controlled shutdown counts as fenced."""
    return [
        BrokerInfo(b.broker_id, b.rack, b.fenced or b.in_controlled_shutdown)
        for broker_id, b in sorted(image.brokers.items())
    ]
