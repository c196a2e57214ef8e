"""Ids, values and errors shared by every layer (pure: no I/O, no global randomness)."""

from rackwise.common.errors import (
    AdminOperationException,
    IllegalArgumentException,
    InvalidFormatException,
    InvalidPartitionsException,
    InvalidReplicationFactorException,
    InvalidRequestException,
    PlacerPluginException,
    RackwiseError,
    UnknownBrokerException,
)
from rackwise.common.java import JavaRandom, MockRandom, RandomSource, draw_ints
from rackwise.common.types import NO_BROKER, TopicPartition

__all__ = [
    "NO_BROKER",
    "AdminOperationException",
    "IllegalArgumentException",
    "InvalidFormatException",
    "InvalidPartitionsException",
    "InvalidReplicationFactorException",
    "InvalidRequestException",
    "JavaRandom",
    "MockRandom",
    "PlacerPluginException",
    "RackwiseError",
    "RandomSource",
    "TopicPartition",
    "UnknownBrokerException",
    "draw_ints",
]
