"""What the controller's commands take and answer: frozen values, named after Kafka's request and
response data (``BrokerRegistrationRequestData``, ``CreateTopicsRequestData``...), holding only
the fields the controller reads or writes. The network layer builds them from wire messages and
turns the answers back into wire messages; nothing here knows about bytes.

Sentinels follow Kafka: ``-1`` for "use the default" partition count or replication factor
(:data:`USE_DEFAULT`), ``None`` for "no manual assignment".
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from rackwise.controller.errors import SUCCESS, ApiError
from rackwise.image import ConfigResource
from rackwise.records import ZERO_UUID

USE_DEFAULT: Final = -1
"""``num_partitions`` / ``replication_factor`` of a CreateTopics topic: use ``num.partitions`` /
``default.replication.factor`` (and the value a manual assignment requires)."""

PLAINTEXT: Final = 0
"""Kafka's ``SecurityProtocol.PLAINTEXT`` id."""


# ---- brokers ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Listener:
    """One listener a broker advertises: name (``PLAINTEXT``), host, port and Kafka's
    security protocol id (0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL)."""

    name: str
    host: str
    port: int
    security_protocol: int = PLAINTEXT


@dataclass(frozen=True, slots=True)
class FeatureRange:
    """A feature the broker software supports, from ``min_version`` to ``max_version``."""

    name: str
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class BrokerRegistrationRequest:
    """A broker's BrokerRegistration: its id, the incarnation id its process drew at start-up,
    its listeners, ``broker.rack`` (None without one), the ids of its log directories and the
    feature ranges it supports (none: it supports the controller's levels)."""

    broker_id: int
    incarnation_id: uuid.UUID
    listeners: tuple[Listener, ...]
    rack: str | None = None
    log_dirs: tuple[uuid.UUID, ...] = ()
    features: tuple[FeatureRange, ...] = ()


@dataclass(frozen=True, slots=True)
class BrokerRegistrationResponse:
    """The epoch of the registration: the log offset of the batch that holds it."""

    broker_epoch: int


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatRequest:
    """A BrokerHeartbeat: who (id and registration epoch), the offset of the last metadata
    record the broker has applied (-1 for none), and whether it asks to be fenced or to shut
    down."""

    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool = False
    want_shut_down: bool = False
    offline_log_dirs: tuple[uuid.UUID, ...] = ()


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatResponse:
    """Kafka's ``BrokerHeartbeatReply``: whether the broker has caught up with its own
    registration, is fenced, is in controlled shutdown, and should shut down now."""

    is_caught_up: bool
    is_fenced: bool
    is_in_controlled_shutdown: bool
    should_shut_down: bool


# ---- topics ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreatableTopic:
    """One topic of a CreateTopics request. With ``assignments`` (replica lists by partition
    index) both counts must be :data:`USE_DEFAULT`. ``configs`` are topic config overrides;
    a None value is refused, as Kafka does."""

    name: str
    num_partitions: int = USE_DEFAULT
    replication_factor: int = USE_DEFAULT
    assignments: Mapping[int, tuple[int, ...]] | None = None
    configs: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))


class ConfigSource(enum.IntEnum):
    """Kafka's ``DescribeConfigsResponse.ConfigSource`` ids: where a value comes from."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One configuration value as DescribeConfigs (and CreateTopics) report it. ``value`` is
    None for a sensitive value, or for a key without a value."""

    name: str
    value: str | None
    source: ConfigSource
    is_read_only: bool = False
    is_sensitive: bool = False

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


@dataclass(frozen=True, slots=True)
class CreatableTopicResult:
    """The outcome of one topic: its error (SUCCESS) and, on success, its id, partition count,
    replication factor and effective configuration."""

    name: str
    error: ApiError = SUCCESS
    topic_id: uuid.UUID = ZERO_UUID
    num_partitions: int = USE_DEFAULT
    replication_factor: int = USE_DEFAULT
    configs: tuple[ConfigEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class CreatePartitionsTopic:
    """One topic of a CreatePartitions request: the new total ``count`` and, optionally, the
    replica list of each new partition."""

    name: str
    count: int
    assignments: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True, slots=True)
class CreatePartitionsTopicResult:
    name: str
    error: ApiError = SUCCESS


@dataclass(frozen=True, slots=True)
class DeletableTopicResult:
    """The outcome of deleting one topic, named by ``name`` or by ``topic_id`` (or both once
    resolved)."""

    name: str | None
    topic_id: uuid.UUID
    error: ApiError = SUCCESS


# ---- configs ---------------------------------------------------------------------------------


class AlterConfigOp(enum.IntEnum):
    """Kafka's ``AlterConfigOp.OpType`` ids."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class AlterableConfig:
    """One key of an IncrementalAlterConfigs resource."""

    name: str
    op: AlterConfigOp
    value: str | None = None


@dataclass(frozen=True, slots=True)
class AlterConfigsResourceResult:
    resource: ConfigResource
    error: ApiError = SUCCESS


@dataclass(frozen=True, slots=True)
class DescribeConfigsResult:
    """The configuration of one resource, or its error."""

    resource: ConfigResource
    error: ApiError = SUCCESS
    entries: tuple[ConfigEntry, ...] = ()


# ---- placement (KIP-879) ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateReplicaPlacementRequest:
    """KIP-879's CreateReplicaPlacement: ``num_partitions`` partitions of
    ``replication_factor`` replicas, placed with the configured placer (the rack-unaware one with
    ``force_simple_placement``) over ``node_ids`` (every usable broker when empty)."""

    num_partitions: int
    replication_factor: int
    force_simple_placement: bool = False
    node_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class CreateReplicaPlacementResponse:
    """The replica list of each partition, partition 0 first, or the error that prevented it."""

    error: ApiError = SUCCESS
    placements: tuple[tuple[int, ...], ...] = ()


# ---- partition reassignment (KIP-455) --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReassignablePartition:
    """One partition of an AlterPartitionReassignments: its target replicas, or None to cancel
    the reassignment in progress."""

    partition_index: int
    replicas: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class ReassignableTopic:
    name: str
    partitions: tuple[ReassignablePartition, ...]


@dataclass(frozen=True, slots=True)
class ReassignablePartitionResult:
    partition_index: int
    error: ApiError = SUCCESS


@dataclass(frozen=True, slots=True)
class ReassignableTopicResult:
    name: str
    partitions: tuple[ReassignablePartitionResult, ...]


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsTopic:
    """A topic a ListPartitionReassignments names, with the partitions it asks about."""

    name: str
    partition_indexes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class OngoingPartitionReassignment:
    """A partition being reassigned: its replicas (the target first, then those being
    removed), and the replicas being added and removed."""

    partition_index: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class OngoingTopicReassignment:
    name: str
    partitions: tuple[OngoingPartitionReassignment, ...]
