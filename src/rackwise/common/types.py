"""Identifiers used across rackwise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

NO_BROKER: Final = -1
"""Sentinel broker id: "no broker" (Kafka's -1, as for the leader of a leaderless partition)."""


@dataclass(frozen=True, order=True, slots=True)
class TopicPartition:
    """A topic name and a partition index, ordered by topic then partition."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
