"""Shared by the protocol tests: kafka-python's class for an API, hypothesis strategies for any
message class, and "future" versions of a class that carry a tagged field it does not know."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Final

import kafka.protocol.admin as kafka_admin
import kafka.protocol.consumer as kafka_consumer
import kafka.protocol.metadata as kafka_metadata
import kafka.protocol.producer as kafka_producer
import kafka.protocol.sasl as kafka_sasl
from hypothesis import strategies as st
from kio.static.primitive import Records

from rackwise.protocol import SUPPORTED, message_class
from rackwise.protocol.specs import OWN_APIS
from tests.records.strategies import records_of

# kio types its record batches as ``Records`` (bytes) without a strategy of its own.
st.register_type_strategy(Records, st.binary(max_size=64).map(Records))

FUTURE_TAG: Final = 90
"""The tag of the field a "future" class adds: no message we serve uses it."""

KAFKA_APIS: Final = tuple(spec for key, spec in SUPPORTED.items() if key not in OWN_APIS)
OWN_API_SPECS: Final = tuple(spec for key, spec in SUPPORTED.items() if key in OWN_APIS)


def every_class(specs: tuple[Any, ...] = tuple(SUPPORTED.values())) -> list[tuple[str, type]]:
    """(id, class) of the request and response of every version of ``specs``."""
    return [
        (f"{spec.name}-v{version}-{kind}", message_class(spec.api_key, version, kind))
        for spec in specs
        for version in spec.versions
        for kind in ("request", "response")
    ]


def kafka_python_class(api_name: str, kind: str) -> Any:
    """kafka-python's class of an API (``CreateTopics``, ``request``), or None if it has none."""
    name = api_name + ("Request" if kind == "request" else "Response")
    for module in (kafka_admin, kafka_metadata, kafka_producer, kafka_consumer, kafka_sasl):
        found = getattr(module, name, None)
        if found is not None:
            return found
    return None


def messages_of(cls: type) -> st.SearchStrategy[Any]:
    """Instances of a message class: kio's through hypothesis' type inference (kio registers
    its value types), our own from their schema."""
    if hasattr(cls, "__fields__"):
        return records_of(cls)
    return st.from_type(cls)


@functools.cache
def future_class(cls: type) -> type:
    """``cls`` (flexible) as a later version might define it: every struct, at every depth,
    has one more tagged field, ``future`` (tag FUTURE_TAG, bytes)."""
    fields: list[tuple[str, Any, Any]] = []
    for field in dataclasses.fields(cls):
        default: Any = field.default
        spec = dataclasses.field(metadata=field.metadata, default=default)
        fields.append((field.name, _future_type(field.type), spec))
    extra = dataclasses.field(metadata={"kafka_type": "bytes", "tag": FUTURE_TAG}, default=b"")
    fields.append(("future", bytes, extra))
    namespace = {
        name: getattr(cls, name)
        for name in ("__type__", "__version__", "__flexible__", "__api_key__")
        if hasattr(cls, name)
    }
    return dataclasses.make_dataclass(
        cls.__name__, fields, namespace=namespace, frozen=True, slots=True, kw_only=True
    )


def _future_type(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        inner = [_future_type(a) for a in typing.get_args(annotation)]
        return functools.reduce(lambda a, b: a | b, inner)
    if origin is tuple:
        return tuple[_future_type(typing.get_args(annotation)[0]), ...]  # type: ignore[misc]
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return future_class(annotation)
    return annotation


def to_future(message: Any, payload: bytes) -> Any:
    """``message`` as an instance of its future class, with ``payload`` in every ``future``."""
    if message is None:
        return None
    if isinstance(message, tuple):
        return tuple(to_future(item, payload) for item in message)
    if not (dataclasses.is_dataclass(message) and not isinstance(message, type)):
        return message
    values = {
        f.name: to_future(getattr(message, f.name), payload) for f in dataclasses.fields(message)
    }
    return future_class(type(message))(**values, future=payload)
