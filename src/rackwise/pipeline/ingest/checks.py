"""What both validators share: the rules that need no engine, and what the driver holds.

The Spark validator (:mod:`rackwise.pipeline.ingest._validate`) and the in-process one
(:mod:`rackwise.pipeline.ingest._local_validate`) check the same rules with the same messages
(a test runs both on the same inputs). The parts here are plain Python over small inputs, used
by both as they are: the racks checked with the topology package's own parser, and the brokers
and log directories the checks learn as they go.

Goals
    One definition of a well-formed rack and of a broker's known directories, whichever engine
    runs.
Constraints
    The racks and directories are metadata (thousands of rows where the replicas are
    millions): they are held on the driver, in one process.
Algorithm
    :func:`rack_problems` parses each distinct rack once; :class:`Directories` gathers, in this
    order, the brokers the broker list names and keeps, their declared directories, the
    directories ``kafka-log-dirs`` reports, and, for a broker of which neither says anything,
    the directories the assignment names.
Worked example
    ``rack_problems(["dc1", "/dc1//r2"])`` is ``{"/dc1//r2": ("/dc1//r2", "has a malformed rack
    path '/dc1//r2': empty component (a doubled or trailing '/')"), "dc1": ("/dc1", None)}``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from rackwise.records.jsonform import kafka_uuid
from rackwise.topology.rackpath import as_rack_path, parse_rack_path

ABSOLUTE_PATH: Final = r"^(/|[A-Za-z]:[\\/]|\\\\)"
"""A log directory path is absolute when it matches this (POSIX, a drive letter, or UNC)."""
MAX_REPLICA_INDEX: Final = 62
"""The largest replica index accepted: ``1 << replica_index`` must fit in a 64-bit integer."""

RESERVED_DIRECTORY_IDS: Final = 100
"""Kafka's ``DirectoryId.reserved``: ids whose high 64 bits are 0 and low 64 bits below 100
(``UNASSIGNED``, ``LOST``, ``MIGRATING``, ...): a metadata export's replica in one of them has
an unknown directory."""
RESERVED_DIRECTORIES: Final = tuple(
    kafka_uuid(uuid.UUID(int=i)) for i in range(RESERVED_DIRECTORY_IDS)
)
"""The reserved ids in Kafka's base64 form, as the export writes them."""

BrokerKey = tuple[str, int]
DirKey = tuple[str, int, str]


def rack_problems(racks: Iterable[str | None]) -> dict[str, tuple[str, str | None]]:
    """Each distinct rack's path (``rack1`` is ``/rack1``) and, for a malformed one, the rest
    of :func:`parse_rack_path`'s message after the broker id.

    The racks are few (thousands in a large fleet), so they are checked on the driver with the
    topology package's own parser.
    """
    checked: dict[str, tuple[str, str | None]] = {}
    for rack in sorted({r for r in racks if r is not None}):
        path = as_rack_path(rack)
        assert path is not None
        problem = None
        try:
            parse_rack_path(path, broker_id=0)
        except ValueError as error:
            message = str(error)
            prefix = "Broker 0 "
            if not message.startswith(prefix):
                raise AssertionError(f"BUG: unexpected rack path message {message!r}") from error
            problem = message[len(prefix) :]
        checked[rack] = (path, problem)
    return checked


LookupRow = tuple[str, int, bool, list[str] | None]
"""What the row checks know of a broker: cluster, id, whether it was kept, its known log
directories (``None`` when none is known)."""


@dataclass
class Directories:
    """What the driver holds after the small checks: which brokers the broker list names and
    which it kept, and every known log directory with its capacity and liveness."""

    listed: set[BrokerKey] = field(default_factory=set)
    kept: set[BrokerKey] = field(default_factory=set)
    dirs: dict[DirKey, tuple[int | None, bool]] = field(default_factory=dict)

    def lookup_rows(self) -> list[LookupRow]:
        """Each listed broker, whether it was kept, and its known directories (``None`` when
        none is known), sorted."""
        known: dict[BrokerKey, list[str]] = {}
        for cluster, broker, path in self.dirs:
            known.setdefault((cluster, broker), []).append(path)
        return [(c, b, (c, b) in self.kept, known.get((c, b))) for c, b in sorted(self.listed)]

    def add(self, key: DirKey, total_bytes: int | None, is_live: bool) -> None:
        """Record a directory; a capacity already known stays, and it is live only if every
        source says so."""
        known_total, known_live = self.dirs.get(key, (None, True))
        total = known_total if known_total is not None else total_bytes
        self.dirs[key] = (total, known_live and is_live)

    def without_dirs(self) -> set[BrokerKey]:
        """Kept brokers of which no directory is known."""
        return self.kept - {(c, b) for c, b, _ in self.dirs}

    def rows(self) -> list[tuple[str, int, str, int | None, bool]]:
        """The ``log_dirs`` table's rows, sorted."""
        return [(c, b, p, total, live) for (c, b, p), (total, live) in sorted(self.dirs.items())]
