"""The sentinels and enumerations the metadata records use, with Kafka's values."""

from __future__ import annotations

import uuid
from typing import Final

from rackwise.records.classes import ZERO_UUID

DIRECTORY_MIGRATING: Final = ZERO_UUID
"""Kafka's ``DirectoryId.MIGRATING``: the replica's directory is not known to the controller
(written by brokers or versions that predate directory ids)."""
DIRECTORY_UNASSIGNED: Final = uuid.UUID(int=1)
"""Kafka's ``DirectoryId.UNASSIGNED``: the replica has not been placed in a directory yet."""
DIRECTORY_LOST: Final = uuid.UUID(int=2)
"""Kafka's ``DirectoryId.LOST``: the replica's directory is offline."""

NO_LEADER: Final = -1
"""``leader`` of a partition without a leader."""
NO_LEADER_CHANGE: Final = -2
"""``PartitionChangeRecord.leader`` when the leader did not change."""

LEADER_RECOVERED: Final = 0
"""``leader_recovery_state``: the leader was elected from the ISR, or has recovered."""
LEADER_RECOVERING: Final = 1
"""``leader_recovery_state``: an unclean election's leader is still recovering."""
NO_RECOVERY_STATE_CHANGE: Final = -1
"""``PartitionChangeRecord.leader_recovery_state`` when it did not change."""

FENCE: Final = 1
"""``BrokerRegistrationChangeRecord.fenced``: the broker is now fenced."""
UNFENCE: Final = -1
"""``BrokerRegistrationChangeRecord.fenced``: the broker is now unfenced."""
NO_FENCING_CHANGE: Final = 0
"""``BrokerRegistrationChangeRecord.fenced`` (and ``in_controlled_shutdown``): no change."""
IN_CONTROLLED_SHUTDOWN: Final = 1
"""``BrokerRegistrationChangeRecord.in_controlled_shutdown``: the shutdown has begun."""

TOPIC_RESOURCE: Final = 2
"""Kafka's ``ConfigResource.Type.TOPIC`` id, for ``ConfigRecord.resource_type``."""
BROKER_RESOURCE: Final = 4
"""Kafka's ``ConfigResource.Type.BROKER`` id; resource name "" is the cluster-wide default."""
BROKER_LOGGER_RESOURCE: Final = 8
"""Kafka's ``ConfigResource.Type.BROKER_LOGGER`` id."""

METADATA_VERSION_FEATURE: Final = "metadata.version"
"""The feature whose level says which record versions the log may hold."""

NO_BROKER: Final = -1
"""``ProducerIdsRecord.broker_id`` (with ``broker_epoch`` :data:`NO_BROKER_EPOCH`) as a snapshot
writes it: the next block's start, handed to no broker."""
NO_BROKER_EPOCH: Final = -1
"""``ProducerIdsRecord.broker_epoch`` in a snapshot."""
NO_NEXT_PRODUCER_ID: Final = -1
"""The image's next producer id before any block was handed out (Kafka's
``ProducerIdsImage.EMPTY``): the first block starts at 0."""
PRODUCER_ID_BLOCK_SIZE: Final = 1000
"""Producer ids per block (Kafka's ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``)."""
