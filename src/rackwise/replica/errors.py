"""The errors a partition's replica answers with, each carrying Kafka's error code (the storage
layer's own errors, CORRUPT_MESSAGE and the like, come from :mod:`rackwise.storage.errors`).
OFFSET_OUT_OF_RANGE and UNKNOWN_TOPIC_OR_PARTITION are :mod:`rackwise.common.errors`' classes,
the same the log and the controller raise; ``OffsetOutOfRangeError`` is the name the replica
code knows Kafka's ``OffsetOutOfRangeException`` by."""

from __future__ import annotations

from rackwise.common import error_codes as codes
from rackwise.common.errors import (
    FencedLeaderEpochException,
    OffsetOutOfRangeException,
    PolicyViolationException,
    RackwiseError,
    ReplicaNotAvailableException,
    UnknownTopicOrPartitionException,
)

OffsetOutOfRangeError = OffsetOutOfRangeException


class NotLeaderOrFollowerException(RackwiseError):
    """NOT_LEADER_OR_FOLLOWER: the request needs the leader (or a replica) and this broker is
    not it."""

    error_code = codes.NOT_LEADER_OR_FOLLOWER
    retriable = True


class NotEnoughReplicasException(RackwiseError):
    """NOT_ENOUGH_REPLICAS: fewer in-sync replicas than ``min.insync.replicas``, so an acks=all
    write is refused before it is appended."""

    error_code = codes.NOT_ENOUGH_REPLICAS
    retriable = True


class NotEnoughReplicasAfterAppendException(RackwiseError):
    """NOT_ENOUGH_REPLICAS_AFTER_APPEND: the write was appended, but the ISR shrank below
    ``min.insync.replicas`` before it was replicated."""

    error_code = codes.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    retriable = True


class UnknownLeaderEpochException(RackwiseError):
    """UNKNOWN_LEADER_EPOCH: the request's leader epoch is newer than this replica knows."""

    error_code = codes.UNKNOWN_LEADER_EPOCH
    retriable = True


class OffsetNotAvailableException(RackwiseError):
    """OFFSET_NOT_AVAILABLE: a new leader's high watermark is not yet known to be past the
    previous leader's (ListOffsets for the latest offset)."""

    error_code = codes.OFFSET_NOT_AVAILABLE
    retriable = True


__all__ = [
    "FencedLeaderEpochException",
    "NotEnoughReplicasAfterAppendException",
    "NotEnoughReplicasException",
    "NotLeaderOrFollowerException",
    "OffsetNotAvailableException",
    "OffsetOutOfRangeError",
    "PolicyViolationException",
    "ReplicaNotAvailableException",
    "UnknownLeaderEpochException",
    "UnknownTopicOrPartitionException",
]
