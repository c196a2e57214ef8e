"""Hierarchical rack ids (KIP-879).

A rack id is a path from the root of the failure-domain tree: ``/dc1/rack2`` or
``/eu-west-1/az-b/rack-07/host-3``. It starts with ``/``; its components are non-empty and carry no
leading or trailing blanks. A broker without ``broker.rack`` has no path and sits directly under
the root, as its own failure domain.
"""

from __future__ import annotations

from rackwise.common import InvalidRequestException


class InvalidRackPathException(InvalidRequestException):
    """A rack id that is not a well-formed path."""


def parse_rack_path(rack: str | None, *, broker_id: int) -> tuple[str, ...]:
    """The components of ``rack`` (``()`` for a broker without a rack).

    >>> parse_rack_path("/dc1/rack2", broker_id=7)
    ('dc1', 'rack2')
    """
    if rack is None:
        return ()
    problem = rack_path_problem(rack)
    if problem:
        raise InvalidRackPathException(
            f"Broker {broker_id} has a malformed rack path {rack!r}: {problem}"
        )
    return tuple(rack[1:].split("/"))


def as_rack_path(rack: str | None) -> str | None:
    """A rack id as a path: ``rack1`` (a one-level name, as KIP-36 racks are) becomes ``/rack1``."""
    if rack is None or rack.startswith("/"):
        return rack
    return "/" + rack


def rack_path_problem(rack: str) -> str:
    """What makes ``rack`` not a rack path, or ``""`` if it is one."""
    if not rack.startswith("/"):
        return "a rack path must start with '/'"
    if rack == "/":
        return "the path names no rack"
    for component in rack[1:].split("/"):
        if not component:
            return "empty component (a doubled or trailing '/')"
        if component != component.strip():
            return f"component {component!r} has leading or trailing blanks"
    return ""
