"""The controller's errors, in the taxonomy of :mod:`rackwise.common.errors`: each carries Kafka's
error code (``org.apache.kafka.common.protocol.Errors``) and, where Kafka throws the same
condition, Kafka's exception name and message. UNKNOWN_TOPIC_OR_PARTITION is
:mod:`rackwise.common.errors`' class, the one the replica raises too; UNSUPPORTED_VERSION is the
protocol layer's (:class:`rackwise.protocol.errors.UnsupportedVersionException`).

:class:`ApiError` is the error of one item of a batch answer (one topic of a CreateTopics, one
resource of an AlterConfigs): a code and a message, ``NONE`` when the item succeeded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final

from rackwise.common import error_codes as codes
from rackwise.common.error_codes import NONE, UNKNOWN_SERVER_ERROR
from rackwise.common.errors import (
    InvalidConfigurationException,
    InvalidTopicException,
    PolicyViolationException,
    RackwiseError,
    UnknownTopicOrPartitionException,
)


class UnknownServerException(RackwiseError):
    """Kafka's UNKNOWN_SERVER_ERROR (-1) where Kafka throws it by name: a condition with no
    code of its own (every producer id handed out)."""

    error_code = UNKNOWN_SERVER_ERROR


class TopicExistsException(RackwiseError):
    """Kafka's TOPIC_ALREADY_EXISTS (36)."""

    error_code = codes.TOPIC_ALREADY_EXISTS


class InvalidReplicaAssignmentException(RackwiseError, ValueError):
    """Kafka's INVALID_REPLICA_ASSIGNMENT (39): a manual assignment that cannot be used."""

    error_code = codes.INVALID_REPLICA_ASSIGNMENT


class TopicDeletionDisabledException(RackwiseError):
    """Kafka's TOPIC_DELETION_DISABLED (73): ``delete.topic.enable`` is false."""

    error_code = codes.TOPIC_DELETION_DISABLED
    default_message: ClassVar[str] = "Topic deletion is disabled."


class StaleBrokerEpochException(RackwiseError):
    """Kafka's STALE_BROKER_EPOCH (77): a heartbeat, ISR change or producer id request from a
    registration that is not the current one (or from a broker that never registered)."""

    error_code = codes.STALE_BROKER_EPOCH


class UnknownTopicIdException(RackwiseError, LookupError):
    """Kafka's UNKNOWN_TOPIC_ID (100)."""

    error_code = codes.UNKNOWN_TOPIC_ID
    default_message: ClassVar[str] = "This server does not host this topic ID."


class DuplicateBrokerRegistrationException(RackwiseError):
    """Kafka's DUPLICATE_BROKER_REGISTRATION (101): another incarnation of that broker id holds
    a live lease."""

    error_code = codes.DUPLICATE_BROKER_REGISTRATION


class BrokerIdNotRegisteredException(RackwiseError, LookupError):
    """Kafka's BROKER_ID_NOT_REGISTERED (102)."""

    error_code = codes.BROKER_ID_NOT_REGISTERED


class InvalidRegistrationException(RackwiseError, ValueError):
    """Kafka's INVALID_REGISTRATION (119): a registration the controller refuses (bad log
    directories; a broker id that is a controller's node id)."""

    error_code = codes.INVALID_REGISTRATION


@dataclass(frozen=True, slots=True)
class ApiError:
    """Kafka's ``ApiError``: the outcome of one item of a batch request. ``message`` is None
    where Kafka sends a null message."""

    error_code: int = NONE
    message: str | None = None

    @property
    def is_success(self) -> bool:
        return self.error_code == NONE

    @staticmethod
    def of(error: BaseException) -> ApiError:
        """The error a response reports for ``error`` (Kafka's ``ApiError.fromThrowable``): its
        code and message for a :class:`RackwiseError`, else UNKNOWN_SERVER_ERROR with the
        exception's type and text."""
        if isinstance(error, RackwiseError):
            message = error.message or getattr(error, "default_message", None)
            return ApiError(error.error_code, message)
        return ApiError(UNKNOWN_SERVER_ERROR, f"{type(error).__name__}: {error}")


SUCCESS: Final = ApiError()


__all__ = [
    "SUCCESS",
    "ApiError",
    "BrokerIdNotRegisteredException",
    "DuplicateBrokerRegistrationException",
    "InvalidConfigurationException",
    "InvalidRegistrationException",
    "InvalidReplicaAssignmentException",
    "InvalidTopicException",
    "PolicyViolationException",
    "StaleBrokerEpochException",
    "TopicDeletionDisabledException",
    "TopicExistsException",
    "UnknownServerException",
    "UnknownTopicIdException",
    "UnknownTopicOrPartitionException",
]
