"""Failure domains at one level of the rack tree, and leader preferences over them (pure).

Goals
    * :func:`domain_at`: the domain a rack lies in at a level of the tree: level 1 of
      ``/dc1/r2`` is ``/dc1``, level 2 is ``/dc1/r2``; a level past the path's depth is the
      whole path. A flat rack name (``r1``, a KIP-36 rack) is its own domain (``/r1``); a
      broker without a rack is a domain of its own, keyed by its id, as it sits directly
      under the root of the tree. :func:`count_domains` counts the distinct domains of a set
      of brokers: what ``min.insync.racks`` is checked against.
    * :class:`LeadersPreference`: Redpanda's ``leaders.preference`` syntax on rack paths.
      ``none``; ``racks:/dc1,/dc2`` (any of them); ``ordered_racks:/dc1,/dc2`` (the first one
      that has an in-sync replica). A path matches every rack under it, at any level of the
      tree (a prefix by components: ``/dc1`` matches ``/dc1/r2`` but not ``/dc10``).
      :meth:`LeadersPreference.rank` says how preferred a rack is (0 best; outside every path:
      the number of ranks); :meth:`LeadersPreference.order` sorts replicas by rank, keeping
      their order within a rank, so the first of them is where leadership should go.

Constraints
    A value that is not in this syntax raises :class:`InvalidLeadersPreferenceException`
    saying why; the controller answers it as INVALID_CONFIG in Kafka's words, naming the value
    ("Invalid value racks: for configuration leaders.preference: bad rack path ''...").

Worked example
    Replicas [4, 1, 2, 3] on racks ``/dc2/a``, ``/dc1/a``, ``/dc1/b``, ``/dc2/b``:
    ``count_domains`` at level 1 is 2 (``/dc1``, ``/dc2``), at level 2 it is 4. With
    ``ordered_racks:/dc1/b,/dc2``, the ranks are 1, 2, 0, 1 and the order is [2, 4, 3, 1].
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from rackwise.topology.rackpath import as_rack_path, rack_path_problem

NONE: Final = "none"
RACKS: Final = "racks"
ORDERED_RACKS: Final = "ordered_racks"


class InvalidLeadersPreferenceException(ValueError):
    """A ``leaders.preference`` value outside Redpanda's syntax."""


def domain_at(rack: str | None, level: int, *, broker_id: int) -> str:
    """The domain of a broker on ``rack`` at ``level`` (1: the first component).

    >>> domain_at("/dc1/r2", 1, broker_id=3), domain_at("r7", 1, broker_id=3)
    ('/dc1', '/r7')
    >>> domain_at(None, 1, broker_id=3)
    'broker 3'
    """
    path = as_rack_path(rack)
    if path is None or rack_path_problem(path):
        return f"broker {broker_id}"
    components = path[1:].split("/")
    return "/" + "/".join(components[:level])


def domains_of(
    brokers: Iterable[int], racks: Mapping[int, str | None], level: int
) -> dict[int, str]:
    """Each broker's domain at ``level`` (a broker unknown to ``racks`` has no rack)."""
    return {b: domain_at(racks.get(b), level, broker_id=b) for b in brokers}


def count_domains(brokers: Iterable[int], racks: Mapping[int, str | None], level: int) -> int:
    """How many distinct domains at ``level`` ``brokers`` lie in."""
    return len(set(domains_of(brokers, racks, level).values()))


def _matches(path: str, rack: str | None) -> bool:
    full = as_rack_path(rack)
    return full is not None and (full == path or full.startswith(path + "/"))


@dataclass(frozen=True, slots=True)
class LeadersPreference:
    """A parsed ``leaders.preference`` (module docstring)."""

    kind: str
    paths: tuple[str, ...] = ()

    @property
    def is_none(self) -> bool:
        return self.kind == NONE

    @property
    def ranks(self) -> int:
        """How many ranks a rack in a preferred domain can have (``racks``: all are 0)."""
        return len(self.paths) if self.kind == ORDERED_RACKS else 1

    def rank(self, rack: str | None) -> int:
        """0 for the most preferred domain; :attr:`ranks` for a rack outside all of them (and
        for every rack under ``none``, which then rank alike)."""
        if self.kind == NONE:
            return 0
        for i, path in enumerate(self.paths):
            if _matches(path, rack):
                return i if self.kind == ORDERED_RACKS else 0
        return self.ranks

    def is_preferred(self, rack: str | None) -> bool:
        """Whether a leader on ``rack`` sits inside the preference (always, under ``none``)."""
        return self.kind == NONE or self.rank(rack) < self.ranks

    def order(self, replicas: Sequence[int], rack_of: Callable[[int], str | None]) -> list[int]:
        """``replicas`` by rank, in their own order within a rank."""
        return sorted(replicas, key=lambda r: self.rank(rack_of(r)))

    def __str__(self) -> str:
        return NONE if self.kind == NONE else f"{self.kind}:{','.join(self.paths)}"


NO_PREFERENCE: Final = LeadersPreference(NONE)


def parse_leaders_preference(value: str) -> LeadersPreference:
    """A ``leaders.preference`` value (module docstring); a flat rack name stands for its
    one-level path (``rack1`` is ``/rack1``).

    >>> str(parse_leaders_preference("ordered_racks: /dc1 , dc2"))
    'ordered_racks:/dc1,/dc2'
    """
    text = value.strip()
    if text == NONE:
        return NO_PREFERENCE
    kind, colon, rest = text.partition(":")
    kind = kind.strip()
    if not colon or kind not in (RACKS, ORDERED_RACKS):
        raise InvalidLeadersPreferenceException(
            "Expected 'none', 'racks:<path>,...' or 'ordered_racks:<path>,...'"
        )
    paths: list[str] = []
    for item in rest.split(","):
        path = as_rack_path(item.strip()) or ""
        problem = rack_path_problem(path) if path else "an empty rack path"
        if problem:
            raise InvalidLeadersPreferenceException(f"bad rack path {item.strip()!r}: {problem}")
        if path not in paths:
            paths.append(path)
    return LeadersPreference(kind, tuple(paths))
