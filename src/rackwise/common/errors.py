"""The error taxonomy.

Every error rackwise raises on purpose is a :class:`RackwiseError` with the Kafka error code a
server would put in its response and a ``retriable`` flag. Where Kafka throws a named exception
for the same condition, the class carries Kafka's name and the message is Kafka's, word for word,
so that an operator searching for it finds Kafka's documentation too.
"""

from __future__ import annotations

from typing import ClassVar

from rackwise.common import error_codes as codes


class RackwiseError(Exception):
    """Base of rackwise's errors. ``error_code`` is Kafka's protocol error code."""

    error_code: ClassVar[int] = codes.UNKNOWN_SERVER_ERROR
    retriable: ClassVar[bool] = False

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidPartitionsException(RackwiseError, ValueError):
    """Kafka's INVALID_PARTITIONS: the number of partitions is not acceptable."""

    error_code = codes.INVALID_PARTITIONS


class InvalidReplicationFactorException(RackwiseError, ValueError):
    """Kafka's INVALID_REPLICATION_FACTOR: the replication factor cannot be met."""

    error_code = codes.INVALID_REPLICATION_FACTOR


class InvalidRequestException(RackwiseError, ValueError):
    """Kafka's INVALID_REQUEST: the request itself is malformed (bad broker ids, bad options)."""

    error_code = codes.INVALID_REQUEST


class AdminOperationException(RackwiseError):
    """Kafka's AdminOperationException: an admin operation that cannot proceed as asked
    (partial rack information for rack-aware assignment)."""


class IllegalArgumentException(RackwiseError, ValueError):
    """Java's IllegalArgumentException, raised where Kafka's code raises it."""


class UnknownBrokerException(InvalidRequestException):
    """A broker id that the cluster does not have."""


class PlacerPluginException(RackwiseError):
    """A replica placer plug-in that cannot be loaded or whose answer is refused."""


class InvalidFormatException(RackwiseError, ValueError):
    """Input in one of Kafka's file formats that does not parse or has an unknown version."""

    error_code = codes.INVALID_REQUEST


class OffsetOutOfRangeException(RackwiseError, ValueError):
    """Kafka's OFFSET_OUT_OF_RANGE: an offset outside what a log holds or a replica may serve
    (outside [log start offset, log end offset], past the high watermark, or below a metadata
    log's start, where the records exist only in a snapshot now)."""

    error_code = codes.OFFSET_OUT_OF_RANGE


class CorruptRecordException(RackwiseError, ValueError):
    """Kafka's CorruptRecordException (CORRUPT_MESSAGE, retriable): a record batch whose framing
    (length fields), CRC32C, magic or offsets do not check out, or records in it that do not
    decode."""

    error_code = codes.CORRUPT_MESSAGE
    retriable = True


class UnknownTopicOrPartitionException(RackwiseError, LookupError):
    """Kafka's UNKNOWN_TOPIC_OR_PARTITION (retriable): no topic of that name, or no replica of
    the partition on this broker."""

    error_code = codes.UNKNOWN_TOPIC_OR_PARTITION
    retriable = True
    default_message: ClassVar[str] = "This server does not host this topic-partition."


class FencedLeaderEpochException(RackwiseError):
    """Kafka's FENCED_LEADER_EPOCH (retriable): a leader epoch older than the one the log or
    replica has (an append to a metadata log, a request to a replica)."""

    error_code = codes.FENCED_LEADER_EPOCH
    retriable = True


class InvalidConfigurationException(RackwiseError, ValueError):
    """Kafka's INVALID_CONFIG: a setting that cannot be used (an unknown key, a value its type
    refuses, a topic setting the log cannot use, a quorum setting); the message names it."""

    error_code = codes.INVALID_CONFIG


class InvalidTopicException(RackwiseError, ValueError):
    """Kafka's INVALID_TOPIC_EXCEPTION: a topic name Kafka does not allow, or one whose log
    directory name would pass 255 characters."""

    error_code = codes.INVALID_TOPIC_EXCEPTION


class PolicyViolationException(RackwiseError):
    """Kafka's POLICY_VIOLATION: a request a configured policy refused (a create-topic
    policy, a replica's)."""

    error_code = codes.POLICY_VIOLATION


class ReplicaNotAvailableException(RackwiseError):
    """Kafka's REPLICA_NOT_AVAILABLE (retriable): the replica is in the metadata but not (yet)
    on this broker."""

    error_code = codes.REPLICA_NOT_AVAILABLE
    retriable = True
