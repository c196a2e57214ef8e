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

__all__ = [
    "CreateReplicaPlacementRequest",
    "CreateReplicaPlacementRequestV0",
    "CreateReplicaPlacementResponse",
    "CreateReplicaPlacementResponseV0",
]
