"""The errors of the partition log, in the taxonomy of :mod:`rackwise.common.errors`.

Each class carries Kafka's name, its protocol error code and Kafka's retriable flag, so a
request handler answers ``error_code`` without a table of its own. Where Kafka's exception
extends another (``UnknownProducerIdException`` is an ``OutOfOrderSequenceException``), the
class here does too, so an ``except`` written against Kafka's hierarchy behaves the same.
Messages name the partition and the offending value. ``CorruptRecordException`` and
``OffsetOutOfRangeException`` are :mod:`rackwise.common.errors`' classes, which the metadata log
and the replica raise too.
"""

from __future__ import annotations

from collections.abc import Sequence

from rackwise.common import error_codes as codes
from rackwise.common.errors import (
    CorruptRecordException,
    InvalidTopicException,
    OffsetOutOfRangeException,
    RackwiseError,
    ReplicaNotAvailableException,
)


class RecordTooLargeException(RackwiseError):
    """MESSAGE_TOO_LARGE: a batch larger than the topic's ``max.message.bytes``."""

    error_code = codes.MESSAGE_TOO_LARGE


class RecordBatchTooLargeException(RackwiseError):
    """RECORD_LIST_TOO_LARGE: a request's records larger than the topic's ``segment.bytes``."""

    error_code = codes.RECORD_LIST_TOO_LARGE


class _RecordErrors(RackwiseError):
    """An error that may name the records at fault, as a ProduceResponse's ``record_errors``:
    (index of the record in its batch, message) pairs."""

    def __init__(self, message: str, record_errors: Sequence[tuple[int, str]] = ()) -> None:
        super().__init__(message)
        self.record_errors = tuple(record_errors)


class InvalidRecordException(_RecordErrors):
    """INVALID_RECORD: a batch that is well framed but breaks a rule of the log (record count
    against its offset range, offset deltas, a control batch from a client, magic)."""

    error_code = codes.INVALID_RECORD


class InvalidTimestampException(_RecordErrors):
    """INVALID_TIMESTAMP: a CreateTime timestamp outside ``message.timestamp.before.max.ms`` /
    ``message.timestamp.after.max.ms`` of the broker's clock, or a producer that set the
    LogAppendTime bit itself."""

    error_code = codes.INVALID_TIMESTAMP


def record_errors_exception(
    key_errors: Sequence[tuple[int, str]], timestamp_errors: Sequence[tuple[int, str]] = ()
) -> _RecordErrors:
    """A batch's refusal from the errors of its records (Kafka's LogValidator
    ``processRecordErrors``): INVALID_TIMESTAMP if any record's timestamp is out of range,
    else INVALID_RECORD with Kafka's count and first three errors; either way every record
    error, by index, for the client to fail those records and no others (KIP-467).

    ``key_errors`` and ``timestamp_errors`` are (index, message) pairs; a record has at most
    one error, the key's first."""
    keyed = {index for index, _ in key_errors}
    errors = sorted([*key_errors, *((i, m) for i, m in timestamp_errors if i not in keyed)])
    if any(i not in keyed for i, _ in timestamp_errors):
        return InvalidTimestampException(
            "One or more records have been rejected due to invalid timestamp", errors
        )
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    return InvalidRecordException(
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]",
        errors,
    )


class UnsupportedForMessageFormatException(RackwiseError):
    """UNSUPPORTED_FOR_MESSAGE_FORMAT: a request the log's message format cannot serve."""

    error_code = codes.UNSUPPORTED_FOR_MESSAGE_FORMAT


class KafkaStorageException(RackwiseError):
    """KAFKA_STORAGE_ERROR: the log's directory failed (an I/O error); the log refuses further
    writes until it is opened again."""

    error_code = codes.KAFKA_STORAGE_ERROR
    retriable = True


class OutOfOrderSequenceException(RackwiseError):
    """OUT_OF_ORDER_SEQUENCE_NUMBER: an idempotent producer's sequence that does not follow
    on from its last batch."""

    error_code = codes.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochException(RackwiseError):
    """INVALID_PRODUCER_EPOCH: a batch from an older epoch of an idempotent producer."""

    error_code = codes.INVALID_PRODUCER_EPOCH


class ProducerFencedException(RackwiseError):
    """PRODUCER_FENCED: a newer instance of the producer has taken over its producer id."""

    error_code = codes.PRODUCER_FENCED


class UnknownProducerIdException(OutOfOrderSequenceException):
    """UNKNOWN_PRODUCER_ID: the log no longer holds the producer's state (expired, or removed
    by retention) and its batch does not start a new sequence."""

    error_code = codes.UNKNOWN_PRODUCER_ID


class InvalidTxnStateException(RackwiseError):
    """INVALID_TXN_STATE: transactional data outside an ongoing transaction."""

    error_code = codes.INVALID_TXN_STATE


class InconsistentTopicIdException(RackwiseError):
    """INCONSISTENT_TOPIC_ID: the topic id in a partition's ``partition.metadata`` differs from
    the one the broker was given (the topic was deleted and created again under its name)."""

    error_code = codes.INCONSISTENT_TOPIC_ID
    retriable = True


class UnexpectedAppendOffsetException(RackwiseError):
    """Kafka's UnexpectedAppendOffsetException: a follower append whose first offset is below
    the log end offset. Kafka has no protocol code for it; the fetcher truncates and retries."""

    error_code = codes.UNKNOWN_SERVER_ERROR
    retriable = True


class OffsetsOutOfOrderException(RackwiseError):
    """Kafka's OffsetsOutOfOrderException: a follower append whose batches' offsets do not
    increase. Kafka has no protocol code for it."""

    error_code = codes.UNKNOWN_SERVER_ERROR


class CorruptIndexException(RackwiseError):
    """Kafka's CorruptIndexException: an index file that fails its sanity check. Never reaches
    a client: the log rebuilds the index from its segment."""

    error_code = codes.UNKNOWN_SERVER_ERROR


class LogDirNotFoundException(RackwiseError):
    """Kafka's LOG_DIR_NOT_FOUND: a path that is not one of the broker's ``log.dirs``."""

    error_code = codes.LOG_DIR_NOT_FOUND


__all__ = [
    "CorruptIndexException",
    "CorruptRecordException",
    "InconsistentTopicIdException",
    "InvalidProducerEpochException",
    "InvalidRecordException",
    "InvalidTimestampException",
    "InvalidTopicException",
    "InvalidTxnStateException",
    "KafkaStorageException",
    "LogDirNotFoundException",
    "OffsetOutOfRangeException",
    "OffsetsOutOfOrderException",
    "OutOfOrderSequenceException",
    "ProducerFencedException",
    "RecordBatchTooLargeException",
    "RecordTooLargeException",
    "ReplicaNotAvailableException",
    "UnexpectedAppendOffsetException",
    "UnknownProducerIdException",
    "UnsupportedForMessageFormatException",
]
