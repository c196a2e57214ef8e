"""The exceptions several layers raise are one class each, carrying the code and the retriable
flag Kafka's table gives it."""

from __future__ import annotations

import pytest

from rackwise import controller, metalog, records
from rackwise.common.error_table import describe
from rackwise.common.errors import (
    CorruptRecordException,
    OffsetOutOfRangeException,
    RackwiseError,
    UnknownTopicOrPartitionException,
)
from rackwise.controller import errors as controller_errors
from rackwise.controller.errors import ApiError
from rackwise.net import NetworkException, RequestTimedOutException
from rackwise.protocol import ProtocolError, UnsupportedVersionException
from rackwise.replica import errors as replica_errors
from rackwise.storage import errors as storage_errors


def test_one_class_each_wherever_it_is_imported_from() -> None:
    assert storage_errors.OffsetOutOfRangeException is OffsetOutOfRangeException
    assert metalog.OffsetOutOfRangeException is OffsetOutOfRangeException
    assert replica_errors.OffsetOutOfRangeError is OffsetOutOfRangeException
    assert storage_errors.CorruptRecordException is CorruptRecordException
    assert records.CorruptRecordException is CorruptRecordException
    assert replica_errors.UnknownTopicOrPartitionException is UnknownTopicOrPartitionException
    assert controller_errors.UnknownTopicOrPartitionException is UnknownTopicOrPartitionException
    assert controller.UnknownTopicOrPartitionException is UnknownTopicOrPartitionException
    assert controller.UnsupportedVersionException is UnsupportedVersionException


@pytest.mark.parametrize(
    ("cls", "name"),
    [
        (OffsetOutOfRangeException, "OFFSET_OUT_OF_RANGE"),
        (CorruptRecordException, "CORRUPT_MESSAGE"),
        (UnknownTopicOrPartitionException, "UNKNOWN_TOPIC_OR_PARTITION"),
        (RequestTimedOutException, "REQUEST_TIMED_OUT"),
        (UnsupportedVersionException, "UNSUPPORTED_VERSION"),
    ],
)
def test_code_and_retriable_flag_are_kafkas(cls: type[RackwiseError], name: str) -> None:
    error = describe(cls.error_code)
    assert error is not None
    assert error.name == name
    assert cls.retriable == error.retriable


def test_the_bases_callers_catch_them_by() -> None:
    assert issubclass(OffsetOutOfRangeException, ValueError)
    assert issubclass(CorruptRecordException, ValueError)
    assert issubclass(UnknownTopicOrPartitionException, LookupError)
    assert issubclass(RequestTimedOutException, NetworkException)
    assert issubclass(UnsupportedVersionException, ProtocolError)


def test_an_unknown_topic_answers_kafkas_message() -> None:
    assert ApiError.of(UnknownTopicOrPartitionException()) == ApiError(
        3, "This server does not host this topic-partition."
    )
