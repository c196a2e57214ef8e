"""rackwise's broker list: the brokers of a cluster, their racks and whether they are fenced.

This format is rackwise's own (Kafka's tools take a bare ``--broker-list 1,2,3`` and learn racks
from the cluster). It is a JSON array with one object per broker::

    [{"id":0,"rack":"/dc1/r1","fenced":false},{"id":1,"rack":"/dc1/r2"},{"id":2}]

Each object has these members and no others (an unknown member, such as a misspelt
``"fence"``, is an error rather than silently ignored):

``id``
    Required. The broker id: an integer from 0 to 2147483647. No two entries share an id.
``rack``
    Optional. The broker's ``broker.rack``: a string, or ``null`` (the same as leaving it out)
    for a broker without one. Any string is accepted; rackwise reads ``/``-separated racks
    such as ``/dc1/r1`` as a path through the topology.
``fenced``
    Optional. ``true`` for a fenced broker, which may keep followers but never leads a new
    partition; ``false`` (the default) otherwise.

Brokers keep the order of the file. The writer prints compact JSON (no whitespace) with every
member spelled out, in the order ``id``, ``rack``, ``fenced``, so its output reads back to the
same entries and prints back to the same text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from rackwise.formats._json import (
    JsonValue,
    dumps,
    expect_array,
    expect_int,
    expect_object,
    expect_optional_str,
    fail,
    join,
    loads,
    preview,
    require,
)

_DOCUMENT: Final = "broker list JSON"
_MEMBERS: Final = ("id", "rack", "fenced")


def _check_fenced(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        fail(_DOCUMENT, path, f"expected true or false, got {preview(value)}")
    return value


@dataclass(frozen=True, slots=True)
class BrokerEntry:
    """One broker of a broker list: its id, its rack (``None`` if it has none) and whether it
    is fenced."""

    id: int
    rack: str | None = None
    fenced: bool = False

    def __post_init__(self) -> None:
        where = f"broker {self.id!r}"
        expect_int(self.id, _DOCUMENT, join(where, "id"), minimum=0)
        expect_optional_str(self.rack, _DOCUMENT, join(where, "rack"))
        _check_fenced(self.fenced, join(where, "fenced"))


def _parse_entry(item: object, path: str) -> BrokerEntry:
    fields = expect_object(item, _DOCUMENT, path)
    unknown = [key for key in fields if key not in _MEMBERS]
    if unknown:
        fail(
            _DOCUMENT,
            join(path, unknown[0]),
            f'unknown member {preview(unknown[0])}; expected only "id", "rack" and "fenced"',
        )
    broker_id = expect_int(
        require(fields, "id", _DOCUMENT, path), _DOCUMENT, join(path, "id"), minimum=0
    )
    rack = expect_optional_str(fields.get("rack"), _DOCUMENT, join(path, "rack"))
    fenced = _check_fenced(fields.get("fenced", False), join(path, "fenced"))
    return BrokerEntry(broker_id, rack, fenced)


def parse_broker_list(text: str) -> tuple[BrokerEntry, ...]:
    """Read a broker list, in file order.

    Raises :class:`~rackwise.common.errors.InvalidFormatException` naming the offending entry
    (``[2].id``) and value.
    """
    items = expect_array(loads(text, _DOCUMENT), _DOCUMENT, "")
    brokers: list[BrokerEntry] = []
    first_seen: dict[int, int] = {}
    for index, item in enumerate(items):
        path = f"[{index}]"
        broker = _parse_entry(item, path)
        earlier = first_seen.setdefault(broker.id, index)
        if earlier != index:
            fail(
                _DOCUMENT, join(path, "id"), f"broker id {broker.id} is already used by [{earlier}]"
            )
        brokers.append(broker)
    return tuple(brokers)


def format_broker_list(brokers: Iterable[BrokerEntry]) -> str:
    """Print a broker list: compact, in the order given, every member written out."""
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
        entries.append({"id": broker.id, "rack": broker.rack, "fenced": broker.fenced})
    return dumps(entries)


__all__ = ["BrokerEntry", "format_broker_list", "parse_broker_list"]
