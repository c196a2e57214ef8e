"""Frozen dataclasses built from a record schema: one class per version, as kio models messages.

Each class is what kio's code generator would write for that version: ``frozen``, ``slots``,
``kw_only``; class variables ``__type__`` (kio's ``EntityType.data``, ``nested`` for structs),
``__version__``, ``__flexible__`` and ``__api_key__``; one field per schema field present in the
version, named in snake case, with ``metadata={"kafka_type": ...}`` (plus ``"tag"`` where the
field is tagged in that version). So ``kio.serial.entity_writer`` and ``entity_reader`` accept
them as they accept kio's own message classes. The structs of a version hang off its class by
name: ``RegisterBrokerRecordV3.BrokerEndpoint``.

Defaults follow kio: a field with a ``default`` in the schema has it, a tagged field has its
implicit default (0, false, "", the zero uuid, the empty array) unless the schema gives one, and
every other field is required. ``__fields__`` holds the schema of the fields present, in order.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any, Final

from kio.static.constants import EntityType

from rackwise.records.errors import SchemaError
from rackwise.records.spec import INT_RANGES, FieldSpec, MessageSpec

ZERO_UUID: Final = uuid.UUID(int=0)
"""Kafka's ``Uuid.ZERO_UUID``: the default of a uuid field (and ``DirectoryId.MIGRATING``)."""

CLASS_MODULE: Final = "rackwise.records.metadata"
"""The module the classes are published in."""

_PYTHON_TYPES: Final[dict[str, type]] = {
    "bool": bool,
    "int8": int,
    "int16": int,
    "int32": int,
    "int64": int,
    "uint16": int,
    "uint32": int,
    "float64": float,
    "string": str,
    "bytes": bytes,
    "uuid": uuid.UUID,
}


def build_message_classes(spec: MessageSpec) -> dict[int, type]:
    """One frozen dataclass per valid version of ``spec``, keyed by version."""
    return {
        version: _build(
            f"{spec.name}V{version}",
            spec.fields,
            version,
            flexible=spec.is_flexible(version),
            kind=EntityType.data,
            api_key=spec.api_key,
            qualname=f"{spec.name}V{version}",
        )
        for version in spec.versions
    }


def field_default(f: FieldSpec, version: int) -> Any:
    """The Python default of ``f`` in ``version``, or ``dataclasses.MISSING`` if required."""
    if f.default is not None:
        return _parse_default(f, f.default)
    if not f.is_tagged(version):
        return dataclasses.MISSING
    if f.is_array:
        return ()
    return implicit_default(f.type)


def _build(
    name: str,
    fields: tuple[FieldSpec, ...],
    version: int,
    *,
    flexible: bool,
    kind: EntityType,
    api_key: int,
    qualname: str,
) -> type:
    present = tuple(f for f in fields if f.in_version(version))
    nested: dict[str, type] = {}
    specs: list[tuple[str, Any, Any]] = []
    for f in present:
        element: Any
        if f.struct is not None:
            element = _build(
                f.struct.name,
                f.struct.fields,
                version,
                flexible=flexible,
                kind=EntityType.nested,
                api_key=api_key,
                qualname=f"{qualname}.{f.struct.name}",
            )
            nested[f.struct.name] = element
            metadata: dict[str, Any] = {}
        else:
            element = _PYTHON_TYPES[f.element_type]
            metadata = {"kafka_type": f.element_type}
        if f.is_tagged(version):
            if not flexible:
                raise SchemaError(f"{name}.{f.name}: tagged in version {version}, not flexible")
            metadata["tag"] = f.tag
        annotation: Any = tuple[element, ...] if f.is_array else element
        if f.is_nullable(version):
            annotation = annotation | None
        default = field_default(f, version)
        spec = dataclasses.field(metadata=metadata, default=default)
        specs.append((f.python_name, annotation, spec))
    namespace = {
        "__type__": kind,
        "__version__": version,
        "__flexible__": flexible,
        "__api_key__": api_key,
        "__fields__": present,
        **nested,
    }
    cls = dataclasses.make_dataclass(
        name, specs, namespace=namespace, frozen=True, slots=True, kw_only=True
    )
    cls.__module__ = CLASS_MODULE
    cls.__qualname__ = qualname
    return cls


def implicit_default(kind: str) -> Any:
    if kind in INT_RANGES:
        return 0
    if kind == "bool":
        return False
    if kind == "float64":
        return 0.0
    if kind == "string":
        return ""
    if kind == "bytes":
        return b""
    if kind == "uuid":
        return ZERO_UUID
    raise SchemaError(f"no implicit default for type {kind!r}")


def _parse_default(f: FieldSpec, text: str) -> Any:
    if text == "null":
        return None
    if f.type in INT_RANGES:
        return int(text, 0)
    if f.type == "bool":
        return text == "true"
    if f.type == "float64":
        return float(text)
    if f.type == "string":
        return text
    raise SchemaError(f"{f.name}: default {text!r} is not supported for type {f.type}")


def fields_of(cls: type) -> tuple[tuple[FieldSpec, bool, bool, Any, type | None], ...]:
    """(spec, tagged, nullable, default, struct class) for each field of ``cls``."""
    version = int(cls.__version__)  # type: ignore[attr-defined]
    dc_fields = {f.name: f for f in dataclasses.fields(cls)}
    out = []
    for spec in cls.__fields__:  # type: ignore[attr-defined]
        dc = dc_fields[spec.python_name]
        nested = getattr(cls, spec.struct.name) if spec.struct is not None else None
        out.append((spec, spec.is_tagged(version), spec.is_nullable(version), dc.default, nested))
    return tuple(out)
