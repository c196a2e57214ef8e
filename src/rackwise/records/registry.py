"""The metadata record types: every schema under ``records/schemas/`` loaded, built and compiled.

:data:`RECORD_TYPES` maps Kafka's api key to a :class:`RecordType`: the parsed schema, one class
per version, one codec per version. Loading reads the schema files shipped inside the package
(package data, read once at import like the code itself) and is otherwise pure:
:func:`build_record_types` takes the texts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, Final

from rackwise.records.classes import build_message_classes, field_default, implicit_default
from rackwise.records.codec import Codec, compile_codec
from rackwise.records.errors import SchemaError
from rackwise.records.spec import MessageSpec, parse_message_spec


@dataclass(frozen=True, slots=True)
class RecordType:
    """One metadata record type: its schema and, per version, its class and codec."""

    spec: MessageSpec
    classes: Mapping[int, type]
    codecs: Mapping[int, Codec]

    @property
    def api_key(self) -> int:
        return self.spec.api_key

    @property
    def name(self) -> str:
        """The schema name, e.g. ``PartitionRecord``."""
        return self.spec.name

    @property
    def type_name(self) -> str:
        """Kafka's ``MetadataRecordType`` constant, e.g. ``PARTITION_RECORD``."""
        return self.spec.type_name

    @property
    def latest_version(self) -> int:
        return max(self.classes)

    @property
    def latest(self) -> type:
        """The class of the highest version: the one the controller writes."""
        return self.classes[self.latest_version]

    def upgrade(self, record: Any) -> Any:
        """``record`` as an instance of the latest version's class: fields the older version
        lacks take their defaults (an absent array is empty), structs are upgraded too."""
        if type(record) is self.latest:
            return record
        return _convert(record, self.latest)


def _convert(record: Any, target: type) -> Any:
    values: dict[str, Any] = {}
    for spec in target.__fields__:  # type: ignore[attr-defined]
        name = spec.python_name
        if hasattr(record, name):
            value = getattr(record, name)
            if spec.struct is not None and value is not None:
                nested = getattr(target, spec.struct.name)
                value = tuple(_convert(item, nested) for item in value)
            values[name] = value
            continue
        default = field_default(spec, int(target.__version__))  # type: ignore[attr-defined]
        if default is dataclasses.MISSING:
            default = () if spec.is_array else implicit_default(spec.type)
        values[name] = default
    return target(**values)


def build_record_types(texts: Mapping[str, str]) -> dict[int, RecordType]:
    """Record types from schema texts keyed by file name; api keys and names must be unique."""
    types: dict[int, RecordType] = {}
    names: set[str] = set()
    for source, text in sorted(texts.items()):
        spec = parse_message_spec(text, source)
        if spec.api_key in types:
            other = types[spec.api_key].name
            raise SchemaError(f"{source}: api key {spec.api_key} is also {other}'s")
        if spec.name in names:
            raise SchemaError(f"{source}: record name {spec.name} is defined twice")
        if source.endswith(".json") and source[: -len(".json")] != spec.name:
            raise SchemaError(f"{source}: the file must be named {spec.name}.json")
        names.add(spec.name)
        classes = build_message_classes(spec)
        codecs = {version: compile_codec(cls) for version, cls in classes.items()}
        types[spec.api_key] = RecordType(spec, MappingProxyType(classes), MappingProxyType(codecs))
    return types


def _read_packaged_schemas() -> dict[str, str]:
    folder = resources.files("rackwise.records") / "schemas"
    return {
        entry.name: entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    }


RECORD_TYPES: Final[Mapping[int, RecordType]] = MappingProxyType(
    build_record_types(_read_packaged_schemas())
)
"""Every metadata record type rackwise knows, by Kafka api key."""

RECORD_TYPES_BY_NAME: Final[Mapping[str, RecordType]] = MappingProxyType(
    {t.name: t for t in RECORD_TYPES.values()}
)


def record_type_of(record: Any) -> RecordType:
    """The record type of a record instance (any version)."""
    try:
        return RECORD_TYPES[int(type(record).__api_key__)]
    except (AttributeError, KeyError):
        raise TypeError(f"{type(record).__qualname__} is not a metadata record class") from None


def codec_of(record: Any) -> Codec:
    """The codec of a record instance's class."""
    record_type = record_type_of(record)
    version = int(type(record).__version__)
    codec = record_type.codecs.get(version)
    if codec is None or codec.cls is not type(record):
        raise TypeError(f"{type(record).__qualname__} is not a registered record class")
    return codec
