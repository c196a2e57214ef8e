"""Topic names as Kafka allows them (``org.apache.kafka.common.internals.Topic``)."""

from __future__ import annotations

from typing import Final

from rackwise.common.errors import InvalidTopicException

MAX_NAME_LENGTH: Final = 249
"""The longest topic name Kafka allows."""
CLUSTER_METADATA_TOPIC: Final = "__cluster_metadata"
"""The metadata log's own name; no topic may take it."""
_LEGAL: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def invalid_topic_reason(name: str) -> str | None:
    """Why Kafka refuses ``name`` as a topic name, or None if it does not."""
    if not name:
        return "the empty string is not allowed"
    if name == ".":
        return "'.' is not allowed"
    if name == "..":
        return "'..' is not allowed"
    if len(name) > MAX_NAME_LENGTH:
        return f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    if not _LEGAL.issuperset(name):
        return (
            f"'{name}' contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def validate_topic_name(name: str) -> None:
    """Raise Kafka's InvalidTopicException, with Kafka's message, for a name it refuses."""
    reason = invalid_topic_reason(name)
    if reason is not None:
        raise InvalidTopicException(f"Topic name is invalid: {reason}")


def has_collision_chars(name: str) -> bool:
    """Whether the name has '.' or '_', which Kafka's metric names cannot tell apart."""
    return "." in name or "_" in name


def unify_collision_chars(name: str) -> str:
    """Kafka's ``Topic.unifyCollisionChars``: '.' and '_' made the same."""
    return name.replace(".", "_")
