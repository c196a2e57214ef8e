"""Replica placer plug-ins used by the plug-in tests."""

from __future__ import annotations

from typing import Any, ClassVar


class DeferringPlacer:
    def place(self, spec: Any, cluster: Any, broker_ids: Any = None) -> None:
        return None


class FixedPlacer:
    """Returns whatever ``answer`` holds, to exercise the checks."""

    answer: ClassVar[list[list[int]]] = []

    def place(self, spec: Any, cluster: Any, broker_ids: Any = None) -> list[list[int]]:
        return self.answer


class SeededPlacer:
    def __init__(self, random: Any = None) -> None:
        self.random = random

    def place(self, spec: Any, cluster: Any, broker_ids: Any = None) -> list[list[int]]:
        ids = [b.id for b in cluster.brokers]
        return [ids[: spec.replication_factor] for _ in range(spec.num_partitions)]
