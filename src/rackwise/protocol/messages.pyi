"""Generated from the schemas by rackwise.protocol.stubs; do not edit."""

from dataclasses import dataclass
from typing import ClassVar

from rackwise.records.spec import FieldSpec

@dataclass(frozen=True, slots=True, kw_only=True)
class CreateReplicaPlacementRequestV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    num_partitions: int
    replication_factor: int
    force_simple_placement: bool = ...
    node_id: tuple[int, ...]
    timeout_ms: int = ...

CreateReplicaPlacementRequest = CreateReplicaPlacementRequestV0

@dataclass(frozen=True, slots=True, kw_only=True)
class CreateReplicaPlacementResponseV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    @dataclass(frozen=True, slots=True, kw_only=True)
    class ReplicaPlacement:
        __version__: ClassVar[int]
        __api_key__: ClassVar[int]
        __flexible__: ClassVar[bool]
        __fields__: ClassVar[tuple[FieldSpec, ...]]
        partition_id: int
        replicas: tuple[int, ...]

    replica_placement: tuple[ReplicaPlacement, ...]
    error_code: int = ...
    error_message: str | None = ...
    throttle_time_ms: int = ...

CreateReplicaPlacementResponse = CreateReplicaPlacementResponseV0

@dataclass(frozen=True, slots=True, kw_only=True)
class FetchMetadataLogRequestV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    cluster_id: str | None = ...
    replica_id: int = ...
    broker_epoch: int = ...
    fetch_offset: int
    last_fetched_epoch: int = ...
    max_wait_ms: int = ...
    max_bytes: int = ...

FetchMetadataLogRequest = FetchMetadataLogRequestV0

@dataclass(frozen=True, slots=True, kw_only=True)
class FetchMetadataLogResponseV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    throttle_time_ms: int
    error_code: int
    error_message: str | None = ...
    high_watermark: int = ...
    log_start_offset: int = ...
    snapshot_end_offset: int = ...
    snapshot_epoch: int = ...
    records: bytes

FetchMetadataLogResponse = FetchMetadataLogResponseV0

@dataclass(frozen=True, slots=True, kw_only=True)
class FetchMetadataSnapshotRequestV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    cluster_id: str | None = ...
    replica_id: int = ...
    snapshot_end_offset: int
    snapshot_epoch: int
    position: int
    max_bytes: int = ...

FetchMetadataSnapshotRequest = FetchMetadataSnapshotRequestV0

@dataclass(frozen=True, slots=True, kw_only=True)
class FetchMetadataSnapshotResponseV0:
    __version__: ClassVar[int]
    __api_key__: ClassVar[int]
    __flexible__: ClassVar[bool]
    __fields__: ClassVar[tuple[FieldSpec, ...]]
    throttle_time_ms: int
    error_code: int
    error_message: str | None = ...
    snapshot_end_offset: int
    snapshot_epoch: int
    size: int = ...
    position: int = ...
    bytes: bytes

FetchMetadataSnapshotResponse = FetchMetadataSnapshotResponseV0

__all__ = [
    "CreateReplicaPlacementRequest",
    "CreateReplicaPlacementRequestV0",
    "CreateReplicaPlacementResponse",
    "CreateReplicaPlacementResponseV0",
    "FetchMetadataLogRequest",
    "FetchMetadataLogRequestV0",
    "FetchMetadataLogResponse",
    "FetchMetadataLogResponseV0",
    "FetchMetadataSnapshotRequest",
    "FetchMetadataSnapshotRequestV0",
    "FetchMetadataSnapshotResponse",
    "FetchMetadataSnapshotResponseV0",
]
