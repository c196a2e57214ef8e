"""The errors a partition's replica answers with, each carrying Kafka's error code (the storage
layer's own errors, CORRUPT_MESSAGE and the like, come from :mod:`rackwise.storage.errors`)."""

from __future__ import annotations

from rackwise.common.errors import RackwiseError


class OffsetOutOfRangeError(RackwiseError):
    """OFFSET_OUT_OF_RANGE: an offset outside what the replica may serve."""

    error_code = 1


class UnknownTopicOrPartitionException(RackwiseError):
    """UNKNOWN_TOPIC_OR_PARTITION: this broker holds no replica of the partition."""

    error_code = 3
    retriable = True


class NotLeaderOrFollowerException(RackwiseError):
    """NOT_LEADER_OR_FOLLOWER: the request needs the leader (or a replica) and this broker is
    not it."""

    error_code = 6
    retriable = True


class RequestTimedOutException(RackwiseError):
    """REQUEST_TIMED_OUT: acks=all could not complete within the request's timeout."""

    error_code = 7
    retriable = True


class ReplicaNotAvailableException(RackwiseError):
    """REPLICA_NOT_AVAILABLE: the replica exists in metadata but not (yet) on this broker."""

    error_code = 9
    retriable = True


class NotEnoughReplicasException(RackwiseError):
    """NOT_ENOUGH_REPLICAS: fewer in-sync replicas than ``min.insync.replicas``, so an acks=all
    write is refused before it is appended."""

    error_code = 19
    retriable = True


class NotEnoughReplicasAfterAppendException(RackwiseError):
    """NOT_ENOUGH_REPLICAS_AFTER_APPEND: the write was appended, but the ISR shrank below
    ``min.insync.replicas`` before it was replicated."""

    error_code = 20
    retriable = True


class PolicyViolationException(RackwiseError):
    """POLICY_VIOLATION."""

    error_code = 44


class FencedLeaderEpochException(RackwiseError):
    """FENCED_LEADER_EPOCH: the request's leader epoch is older than this replica's."""

    error_code = 74
    retriable = True


class UnknownLeaderEpochException(RackwiseError):
    """UNKNOWN_LEADER_EPOCH: the request's leader epoch is newer than this replica knows."""

    error_code = 75
    retriable = True


class OffsetNotAvailableException(RackwiseError):
    """OFFSET_NOT_AVAILABLE: a new leader's high watermark is not yet known to be past the
    previous leader's (ListOffsets for the latest offset)."""

    error_code = 78
    retriable = True
