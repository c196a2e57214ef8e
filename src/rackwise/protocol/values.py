"""Building messages from plain Python values, so that handlers need neither kio's value types
nor one code path per version.

kio's classes type their fields with kio's own values: ``ErrorCode`` members for error codes,
``datetime.timedelta`` for durations (``timeout``, ``throttle_time``), one frozen dataclass per
struct and version. :func:`make` takes ints, dicts and lists instead and converts them for the
class at hand; fields the class does not have in its version are dropped (``rack`` for
Metadata v0), fields not given take their defaults. rackwise's own classes take the same
calls.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from rackwise.protocol.errors import MessageEncodeError

T = TypeVar("T")

_DURATIONS = frozenset({"timedelta_i32", "timedelta_i64"})


def make(cls: type[T], values: Mapping[str, Any] | None = None, /, **fields: Any) -> T:
    """An instance of ``cls`` from plain values (``values`` and keyword fields together).

    * a field ``cls`` lacks is dropped (so one call serves every version of a message);
    * an int for an error code becomes kio's ``ErrorCode``; an int for a duration field is
      milliseconds;
    * a mapping for a struct field, or a sequence of mappings for an array of structs, is built
      with :func:`make` for the struct's class; a list becomes a tuple.

    A required field left out, or an error code Kafka does not define, raises
    :class:`~rackwise.protocol.errors.MessageEncodeError` naming the class and version.
    """
    given = {**(values or {}), **fields}
    known = _fields(cls)  # type: ignore[arg-type]
    converted: dict[str, Any] = {}
    try:
        for name, value in given.items():
            field = known.get(name)
            if field is not None:
                converted[name] = _convert(field, value)
        return cls(**converted)
    except (TypeError, ValueError) as e:
        version = getattr(cls, "__version__", "?")
        raise MessageEncodeError(f"{cls.__qualname__} v{version}: {e}") from None


def millis(duration: datetime.timedelta) -> int:
    """A kio duration field as whole milliseconds (as it travels on the wire)."""
    return round(duration.total_seconds() * 1000)


def field_names(cls: type) -> tuple[str, ...]:
    """The fields of a message class (of its version), in wire order."""
    return tuple(_fields(cls))


@functools.cache
def _fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a message class")
    return {f.name: f for f in dataclasses.fields(cls)}


def _convert(field: dataclasses.Field[Any], value: Any) -> Any:
    if value is None:
        return None
    kind = field.metadata.get("kafka_type")
    if kind == "error_code":
        return ErrorCode(int(value))
    if kind in _DURATIONS and isinstance(value, int) and not isinstance(value, bool):
        return datetime.timedelta(milliseconds=value)
    struct = struct_of(field.type)
    if struct is not None:
        if isinstance(value, Mapping):
            return make(struct, value)
        if _is_sequence(value):
            return tuple(make(struct, v) if isinstance(v, Mapping) else v for v in value)
        return value
    if _is_sequence(value) and not isinstance(value, tuple):
        return tuple(value)
    return value


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray)


def struct_of(annotation: Any) -> type | None:
    """The struct class of a struct or array-of-struct annotation, else None."""
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        inner = [a for a in typing.get_args(annotation) if a is not types.NoneType]
        annotation = inner[0] if len(inner) == 1 else annotation
    if typing.get_origin(annotation) is tuple:
        annotation = typing.get_args(annotation)[0]
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return annotation
    return None
