"""rackwise's broker list: the brokers of a cluster, their racks, whether they are fenced, and
their log directories.

This format is rackwise's own (Kafka's tools take a bare ``--broker-list 1,2,3`` and learn racks
from the cluster). It is a JSON array with one object per broker::

    [{"id":0,"rack":"/dc1/r1","fenced":false,
      "log_dirs":[{"path":"/data/d1","total_bytes":4000000000000},
                  {"path":"/data/d2","total_bytes":4000000000000,"is_live":false}]},
     {"id":1,"rack":"r2"},{"id":2}]

Each object has these members and no others (an unknown member, such as a misspelt
``"fence"``, is an error rather than silently ignored):

``id``
    Required. The broker id: an integer from 0 to 2147483647. No two entries share an id.
``rack``
    Optional. The broker's ``broker.rack``: a string, or ``null`` (the same as leaving it out)
    for a broker without one. Any string is accepted here; rackwise reads ``/``-separated racks
    such as ``/dc1/r1`` as a path through the topology, and a one-level name such as ``r2`` as
    the path ``/r2``.
``fenced``
    Optional. ``true`` for a fenced broker, which may keep followers but never leads a new
    partition; ``false`` (the default) otherwise.
``log_dirs``
    Optional. The broker's ``log.dirs`` (KIP-113, JBOD): an array of objects with the members
    ``path`` (required; an absolute path, as ``kafka-log-dirs`` prints it and as reassignment
    JSON names it), ``total_bytes`` (required; the capacity of the directory's volume in
    bytes, an integer from 0 to 2**63 - 1) and ``is_live`` (optional; ``false`` for a failed
    directory, ``true`` by default), and no others. No path appears twice in one broker. An
    empty array is the same as leaving the member out: the directories are not known.

Brokers keep the order of the file, and each broker its directories. The writer prints compact
JSON (no whitespace) with every member spelled out, in the order ``id``, ``rack``, ``fenced``,
``log_dirs`` (``path``, ``total_bytes``, ``is_live``), leaving ``log_dirs`` out for a broker
without directories, so its output reads back to the same entries and prints back to the same
text.

Reading one broker at a time: :func:`parse_broker_list` with ``on_invalid`` hands every entry
that fails a check (including an id already used by an earlier entry) to ``on_invalid``, with the
error, and carries on with the next, so that a caller can set bad entries aside with their
reason instead of giving up on the whole file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from rackwise.common.errors import InvalidFormatException
from rackwise.formats._json import (
    JsonValue,
    dumps,
    expect_array,
    expect_int,
    expect_object,
    expect_optional_str,
    expect_str,
    fail,
    join,
    loads,
    preview,
    require,
)

InvalidItemHandler = Callable[[object, InvalidFormatException], None]
"""Receives an entry a lenient reader set aside (as decoded JSON) and the reason."""

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

_DOCUMENT: Final = "broker list JSON"
_MEMBERS: Final = ("id", "rack", "fenced", "log_dirs")
_DIR_MEMBERS: Final = ("path", "total_bytes", "is_live")
# POSIX "/x", Windows "C:\x" or "C:/x", and UNC "\\server\share" (as reassignment JSON allows).
_ABSOLUTE_PATH: Final = re.compile(r"/|[A-Za-z]:[\\/]|\\\\")


def expect_long(value: object, document: str, path: str, *, minimum: int = INT64_MIN) -> int:
    """``value`` if it is a JSON integer in ``[minimum, 2**63 - 1]`` (a Java ``long``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        fail(document, path, f"expected an integer, got {preview(value)}")
    if value > INT64_MAX or value < INT64_MIN:
        fail(document, path, f"{value} does not fit in a 64-bit signed integer")
    if value < minimum:
        fail(document, path, f"must be at least {minimum}, got {value}")
    return value


def expect_bool(value: object, document: str, path: str) -> bool:
    """``value`` if it is ``true`` or ``false``."""
    if not isinstance(value, bool):
        fail(document, path, f"expected true or false, got {preview(value)}")
    return value


def expect_absolute_path(value: object, document: str, path: str) -> str:
    """``value`` if it is a string holding an absolute path."""
    text = expect_str(value, document, path)
    if not _ABSOLUTE_PATH.match(text):
        fail(document, path, f"{preview(text)} is not an absolute path")
    return text


def _refuse_unknown(fields: dict[str, object], known: tuple[str, ...], path: str) -> None:
    unknown = [key for key in fields if key not in known]
    if unknown:
        names = ", ".join(f'"{k}"' for k in known[:-1]) + f' and "{known[-1]}"'
        fail(
            _DOCUMENT,
            join(path, unknown[0]),
            f"unknown member {preview(unknown[0])}; expected only {names}",
        )


@dataclass(frozen=True, slots=True)
class BrokerLogDir:
    """One of a broker's log directories: its absolute ``path``, the capacity of its volume in
    bytes (``total_bytes``) and whether it is live (``False`` for a failed directory)."""

    path: str
    total_bytes: int
    is_live: bool = True

    def __post_init__(self) -> None:
        where = f"log dir {self.path!r}"
        expect_absolute_path(self.path, _DOCUMENT, join(where, "path"))
        expect_long(self.total_bytes, _DOCUMENT, join(where, "total_bytes"), minimum=0)
        expect_bool(self.is_live, _DOCUMENT, join(where, "is_live"))


def _check_dirs(log_dirs: tuple[BrokerLogDir, ...], path: str) -> None:
    first_seen: dict[str, int] = {}
    for index, log_dir in enumerate(log_dirs):
        if not isinstance(log_dir, BrokerLogDir):
            fail(_DOCUMENT, f"{path}[{index}]", f"not a BrokerLogDir: {log_dir!r}")
        earlier = first_seen.setdefault(log_dir.path, index)
        if earlier != index:
            fail(
                _DOCUMENT,
                f"{path}[{index}].path",
                f"{preview(log_dir.path)} is already listed at {path}[{earlier}]",
            )


@dataclass(frozen=True, slots=True)
class BrokerEntry:
    """One broker of a broker list: its id, its rack (``None`` if it has none), whether it is
    fenced, and its log directories (``()`` when not known)."""

    id: int
    rack: str | None = None
    fenced: bool = False
    log_dirs: tuple[BrokerLogDir, ...] = ()

    def __post_init__(self) -> None:
        where = f"broker {self.id!r}"
        expect_int(self.id, _DOCUMENT, join(where, "id"), minimum=0)
        expect_optional_str(self.rack, _DOCUMENT, join(where, "rack"))
        expect_bool(self.fenced, _DOCUMENT, join(where, "fenced"))
        log_dirs = tuple(self.log_dirs)
        _check_dirs(log_dirs, join(where, "log_dirs"))
        object.__setattr__(self, "log_dirs", log_dirs)


def _parse_dir(item: object, path: str) -> BrokerLogDir:
    fields = expect_object(item, _DOCUMENT, path)
    _refuse_unknown(fields, _DIR_MEMBERS, path)
    dir_path = expect_absolute_path(
        require(fields, "path", _DOCUMENT, path), _DOCUMENT, join(path, "path")
    )
    total = expect_long(
        require(fields, "total_bytes", _DOCUMENT, path),
        _DOCUMENT,
        join(path, "total_bytes"),
        minimum=0,
    )
    is_live = expect_bool(fields.get("is_live", True), _DOCUMENT, join(path, "is_live"))
    return BrokerLogDir(dir_path, total, is_live)


def _parse_entry(item: object, path: str) -> BrokerEntry:
    fields = expect_object(item, _DOCUMENT, path)
    _refuse_unknown(fields, _MEMBERS, path)
    broker_id = expect_int(
        require(fields, "id", _DOCUMENT, path), _DOCUMENT, join(path, "id"), minimum=0
    )
    rack = expect_optional_str(fields.get("rack"), _DOCUMENT, join(path, "rack"))
    fenced = expect_bool(fields.get("fenced", False), _DOCUMENT, join(path, "fenced"))
    dirs_path = join(path, "log_dirs")
    items = expect_array(fields.get("log_dirs", []), _DOCUMENT, dirs_path)
    log_dirs = tuple(_parse_dir(d, f"{dirs_path}[{i}]") for i, d in enumerate(items))
    _check_dirs(log_dirs, dirs_path)
    return BrokerEntry(broker_id, rack, fenced, log_dirs)


def parse_broker_list(
    text: str, *, on_invalid: InvalidItemHandler | None = None
) -> tuple[BrokerEntry, ...]:
    """Read a broker list, in file order.

    Raises :class:`~rackwise.common.errors.InvalidFormatException` naming the offending entry
    (``[2].id``) and value. With ``on_invalid``, an entry that fails is handed to it with that
    error and left out instead; only a document that is not a JSON array still raises.
    """
    items = expect_array(loads(text, _DOCUMENT), _DOCUMENT, "")
    brokers: list[BrokerEntry] = []
    first_seen: dict[int, int] = {}
    for index, item in enumerate(items):
        path = f"[{index}]"
        try:
            broker = _parse_entry(item, path)
            earlier = first_seen.setdefault(broker.id, index)
            if earlier != index:
                fail(
                    _DOCUMENT,
                    join(path, "id"),
                    f"broker id {broker.id} is already used by [{earlier}]",
                )
        except InvalidFormatException as error:
            if on_invalid is None:
                raise
            on_invalid(item, error)
            continue
        brokers.append(broker)
    return tuple(brokers)


def _dir_json(log_dir: BrokerLogDir) -> JsonValue:
    return {"path": log_dir.path, "total_bytes": log_dir.total_bytes, "is_live": log_dir.is_live}


def format_broker_list(brokers: Iterable[BrokerEntry]) -> str:
    """Print a broker list: compact, in the order given, every member written out (``log_dirs``
    only for a broker that has directories)."""
    entries: list[JsonValue] = []
    first_seen: dict[int, int] = {}
    for index, broker in enumerate(brokers):
        if not isinstance(broker, BrokerEntry):
            fail(_DOCUMENT, f"[{index}]", f"not a BrokerEntry: {broker!r}")
        earlier = first_seen.setdefault(broker.id, index)
        if earlier != index:
            fail(
                _DOCUMENT, f"[{index}].id", f"broker id {broker.id} is already used by [{earlier}]"
            )
        entry: dict[str, JsonValue] = {
            "id": broker.id,
            "rack": broker.rack,
            "fenced": broker.fenced,
        }
        if broker.log_dirs:
            entry["log_dirs"] = [_dir_json(d) for d in broker.log_dirs]
        entries.append(entry)
    return dumps(entries)


__all__ = [
    "BrokerEntry",
    "BrokerLogDir",
    "InvalidItemHandler",
    "format_broker_list",
    "parse_broker_list",
]
