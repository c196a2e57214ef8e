"""Generated from the schemas by rackwise.records.stubs; do not edit."""

import uuid
from dataclasses import dataclass
from typing import ClassVar

from rackwise.records.spec import FieldSpec

@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    @dataclass(frozen=True, slots=True, kw_only=True)
    class BrokerEndpoint:
        __version__: ClassVar[int]
        __api_key__: ClassVar[int]
        __flexible__: ClassVar[bool]
        __fields__: ClassVar[tuple[FieldSpec, ...]]
        name: str
        host: str
        port: int
        security_protocol: int

    @dataclass(frozen=True, slots=True, kw_only=True)
    class BrokerFeature:
        __version__: ClassVar[int]
        __api_key__: ClassVar[int]
        __flexible__: ClassVar[bool]
        __fields__: ClassVar[tuple[FieldSpec, ...]]
        name: str
        min_supported_version: int
        max_supported_version: int

    broker_id: int
    incarnation_id: uuid.UUID
    broker_epoch: int
    end_points: tuple[BrokerEndpoint, ...]
    features: tuple[BrokerFeature, ...]
    rack: str | None
    fenced: bool = ...

@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV1:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    @dataclass(frozen=True, slots=True, kw_only=True)
    class BrokerEndpoint:
        __version__: ClassVar[int]
        __api_key__: ClassVar[int]
        __flexible__: ClassVar[bool]
        __fields__: ClassVar[tuple[FieldSpec, ...]]
        name: str
        host: str
        port: int
        security_protocol: int

    @dataclass(frozen=True, slots=True, kw_only=True)
    class BrokerFeature:
        __version__: ClassVar[int]
        __api_key__: ClassVar[int]
        __flexible__: ClassVar[bool]
        __fields__: ClassVar[tuple[FieldSpec, ...]]
        name: str
        min_supported_version: int
        max_supported_version: int

    broker_id: int
    incarnation_id: uuid.UUID
    broker_epoch: int
    end_points: tuple[BrokerEndpoint, ...]
    features: tuple[BrokerFeature, ...]
    rack: str | None
    fenced: bool = ...
    in_controlled_shutdown: bool = ...

@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV2:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    @dataclass(frozen=True, slots=True, kw_only=True)
    class BrokerEndpoint:
        __version__: ClassVar[int]
        __api_key__: ClassVar[int]
        __flexible__: ClassVar[bool]
        __fields__: ClassVar[tuple[FieldSpec, ...]]
        name: str
        host: str
        port: int
        security_protocol: int

    @dataclass(frozen=True, slots=True, kw_only=True)
    class BrokerFeature:
        __version__: ClassVar[int]
        __api_key__: ClassVar[int]
        __flexible__: ClassVar[bool]
        __fields__: ClassVar[tuple[FieldSpec, ...]]
        name: str
        min_supported_version: int
        max_supported_version: int

    broker_id: int
    is_migrating_zk_broker: bool = ...
    incarnation_id: uuid.UUID
    broker_epoch: int
    end_points: tuple[BrokerEndpoint, ...]
    features: tuple[BrokerFeature, ...]
    rack: str | None
    fenced: bool = ...
    in_controlled_shutdown: bool = ...

@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterBrokerRecordV3:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    @dataclass(frozen=True, slots=True, kw_only=True)
    class BrokerEndpoint:
        __version__: ClassVar[int]
        __api_key__: ClassVar[int]
        __flexible__: ClassVar[bool]
        __fields__: ClassVar[tuple[FieldSpec, ...]]
        name: str
        host: str
        port: int
        security_protocol: int

    @dataclass(frozen=True, slots=True, kw_only=True)
    class BrokerFeature:
        __version__: ClassVar[int]
        __api_key__: ClassVar[int]
        __flexible__: ClassVar[bool]
        __fields__: ClassVar[tuple[FieldSpec, ...]]
        name: str
        min_supported_version: int
        max_supported_version: int

    broker_id: int
    is_migrating_zk_broker: bool = ...
    incarnation_id: uuid.UUID
    broker_epoch: int
    end_points: tuple[BrokerEndpoint, ...]
    features: tuple[BrokerFeature, ...]
    rack: str | None
    fenced: bool = ...
    in_controlled_shutdown: bool = ...
    log_dirs: tuple[uuid.UUID, ...] = ...

RegisterBrokerRecord = RegisterBrokerRecordV3

@dataclass(frozen=True, slots=True, kw_only=True)
class UnregisterBrokerRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    broker_id: int
    broker_epoch: int

UnregisterBrokerRecord = UnregisterBrokerRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class TopicRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    name: str
    topic_id: uuid.UUID

TopicRecord = TopicRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    partition_id: int = ...
    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int = ...
    leader_recovery_state: int = ...
    leader_epoch: int = ...
    partition_epoch: int = ...

@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecordV1:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    partition_id: int = ...
    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int = ...
    leader_recovery_state: int = ...
    leader_epoch: int = ...
    partition_epoch: int = ...
    directories: tuple[uuid.UUID, ...]

@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRecordV2:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    partition_id: int = ...
    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int = ...
    leader_recovery_state: int = ...
    leader_epoch: int = ...
    partition_epoch: int = ...
    directories: tuple[uuid.UUID, ...]
    eligible_leader_replicas: tuple[int, ...] | None = ...
    last_known_elr: tuple[int, ...] | None = ...

PartitionRecord = PartitionRecordV2

@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    resource_type: int
    resource_name: str
    name: str
    value: str | None

ConfigRecord = ConfigRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    partition_id: int = ...
    topic_id: uuid.UUID
    isr: tuple[int, ...] | None = ...
    leader: int = ...
    replicas: tuple[int, ...] | None = ...
    removing_replicas: tuple[int, ...] | None = ...
    adding_replicas: tuple[int, ...] | None = ...
    leader_recovery_state: int = ...

@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecordV1:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    partition_id: int = ...
    topic_id: uuid.UUID
    isr: tuple[int, ...] | None = ...
    leader: int = ...
    replicas: tuple[int, ...] | None = ...
    removing_replicas: tuple[int, ...] | None = ...
    adding_replicas: tuple[int, ...] | None = ...
    leader_recovery_state: int = ...
    directories: tuple[uuid.UUID, ...] | None = ...

@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionChangeRecordV2:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    partition_id: int = ...
    topic_id: uuid.UUID
    isr: tuple[int, ...] | None = ...
    leader: int = ...
    replicas: tuple[int, ...] | None = ...
    removing_replicas: tuple[int, ...] | None = ...
    adding_replicas: tuple[int, ...] | None = ...
    leader_recovery_state: int = ...
    directories: tuple[uuid.UUID, ...] | None = ...
    eligible_leader_replicas: tuple[int, ...] | None = ...
    last_known_elr: tuple[int, ...] | None = ...

PartitionChangeRecord = PartitionChangeRecordV2

@dataclass(frozen=True, slots=True, kw_only=True)
class FenceBrokerRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    id: int
    epoch: int

FenceBrokerRecord = FenceBrokerRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class UnfenceBrokerRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    id: int
    epoch: int

UnfenceBrokerRecord = UnfenceBrokerRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveTopicRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    topic_id: uuid.UUID

RemoveTopicRecord = RemoveTopicRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class UserScramCredentialRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

UserScramCredentialRecord = UserScramCredentialRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureLevelRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    name: str
    feature_level: int

FeatureLevelRecord = FeatureLevelRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerIdsRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    broker_id: int
    broker_epoch: int = ...
    next_producer_id: int

ProducerIdsRecord = ProducerIdsRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    broker_id: int
    broker_epoch: int
    fenced: int = ...

@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecordV1:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    broker_id: int
    broker_epoch: int
    fenced: int = ...
    in_controlled_shutdown: int = ...

@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerRegistrationChangeRecordV2:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    broker_id: int
    broker_epoch: int
    fenced: int = ...
    in_controlled_shutdown: int = ...
    log_dirs: tuple[uuid.UUID, ...] = ...

BrokerRegistrationChangeRecord = BrokerRegistrationChangeRecordV2

@dataclass(frozen=True, slots=True, kw_only=True)
class AccessControlEntryRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    id: uuid.UUID
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

AccessControlEntryRecord = AccessControlEntryRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveAccessControlEntryRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    id: uuid.UUID

RemoveAccessControlEntryRecord = RemoveAccessControlEntryRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class NoOpRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]

NoOpRecord = NoOpRecordV0

@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveUserScramCredentialRecordV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    name: str
    mechanism: int

RemoveUserScramCredentialRecord = RemoveUserScramCredentialRecordV0

__all__ = [
    "AccessControlEntryRecord",
    "AccessControlEntryRecordV0",
    "BrokerRegistrationChangeRecord",
    "BrokerRegistrationChangeRecordV0",
    "BrokerRegistrationChangeRecordV1",
    "BrokerRegistrationChangeRecordV2",
    "ConfigRecord",
    "ConfigRecordV0",
    "FeatureLevelRecord",
    "FeatureLevelRecordV0",
    "FenceBrokerRecord",
    "FenceBrokerRecordV0",
    "NoOpRecord",
    "NoOpRecordV0",
    "PartitionChangeRecord",
    "PartitionChangeRecordV0",
    "PartitionChangeRecordV1",
    "PartitionChangeRecordV2",
    "PartitionRecord",
    "PartitionRecordV0",
    "PartitionRecordV1",
    "PartitionRecordV2",
    "ProducerIdsRecord",
    "ProducerIdsRecordV0",
    "RegisterBrokerRecord",
    "RegisterBrokerRecordV0",
    "RegisterBrokerRecordV1",
    "RegisterBrokerRecordV2",
    "RegisterBrokerRecordV3",
    "RemoveAccessControlEntryRecord",
    "RemoveAccessControlEntryRecordV0",
    "RemoveTopicRecord",
    "RemoveTopicRecordV0",
    "RemoveUserScramCredentialRecord",
    "RemoveUserScramCredentialRecordV0",
    "TopicRecord",
    "TopicRecordV0",
    "UnfenceBrokerRecord",
    "UnfenceBrokerRecordV0",
    "UnregisterBrokerRecord",
    "UnregisterBrokerRecordV0",
    "UserScramCredentialRecord",
    "UserScramCredentialRecordV0",
]
