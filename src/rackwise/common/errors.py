"""The error taxonomy.

Every error rackwise raises on purpose is a :class:`RackwiseError` with the Kafka error code a
server would put in its response and a ``retriable`` flag. Where Kafka throws a named exception
for the same condition, the class carries Kafka's name and the message is Kafka's, word for word,
so that an operator searching for it finds Kafka's documentation too.
"""

from __future__ import annotations

from typing import ClassVar


class RackwiseError(Exception):
    """Base of rackwise's errors. ``error_code`` is Kafka's protocol error code."""

    error_code: ClassVar[int] = -1  # UNKNOWN_SERVER_ERROR
    retriable: ClassVar[bool] = False

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidPartitionsException(RackwiseError, ValueError):
    """Kafka's INVALID_PARTITIONS: the number of partitions is not acceptable."""

    error_code = 37


class InvalidReplicationFactorException(RackwiseError, ValueError):
    """Kafka's INVALID_REPLICATION_FACTOR: the replication factor cannot be met."""

    error_code = 38


class InvalidRequestException(RackwiseError, ValueError):
    """Kafka's INVALID_REQUEST: the request itself is malformed (bad broker ids, bad options)."""

    error_code = 42


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

    error_code = 42
