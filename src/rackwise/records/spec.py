"""Kafka's message-spec JSON, parsed and checked: the schema every metadata record starts from.

A schema file is what Kafka keeps under ``common/metadata/*.json``: ``apiKey``, ``type``
(``"metadata"``), ``name``, ``validVersions``, ``flexibleVersions`` and ``fields``; each field
has ``name``, ``type``, ``versions`` and ``about``, and may have ``default``,
``nullableVersions``, ``taggedVersions`` with ``tag``, ``entityType``, ``mapKey``, ``ignorable``
and, for an array of structs, its own ``fields``. Whole-line ``//`` comments are allowed, as in
Kafka's files, and carry the version history.

Parsing is strict, because a schema mistake would otherwise surface as wrong bytes on disk: an
unknown key, a field without ``about``, a version range outside ``validVersions``, a tag on a
version that is not flexible, a repeated tag or a ``default`` that does not fit the type all
raise :class:`~rackwise.records.errors.SchemaError` naming the schema and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rackwise.records.errors import SchemaError

PRIMITIVE_SIZES: Final = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint16": 2,
    "uint32": 4,
    "float64": 8,
    "uuid": 16,
}
"""Fixed-width primitive types and their size in bytes on the wire."""

VARIABLE_TYPES: Final = frozenset({"string", "bytes"})
"""Primitive types written with a length prefix."""

INT_RANGES: Final = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}

_MESSAGE_KEYS: Final = frozenset(
    {
        "apiKey",
        "type",
        "name",
        "validVersions",
        "flexibleVersions",
        "fields",
        "latestVersionUnstable",
    }
)
_FIELD_KEYS: Final = frozenset(
    {
        "name",
        "type",
        "versions",
        "about",
        "default",
        "nullableVersions",
        "taggedVersions",
        "tag",
        "entityType",
        "mapKey",
        "ignorable",
        "fields",
        "zeroCopy",
    }
)
_NAME: Final = re.compile(r"[A-Z][A-Za-z0-9]*")
_CAMEL_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range of versions; ``highest`` is None for an open range (``"3+"``) and the
    empty range (``"none"``) has ``lowest`` > ``highest``."""

    lowest: int
    highest: int | None

    @staticmethod
    def parse(text: str) -> Versions:
        """Kafka's version range syntax: ``"none"``, ``"3"``, ``"0-2"`` or ``"1+"``."""
        text = text.strip()
        if text == "none":
            return Versions(1, 0)
        try:
            if text.endswith("+"):
                return Versions(int(text[:-1]), None)
            if "-" in text:
                low, high = text.split("-", 1)
                return Versions(int(low), int(high))
            return Versions(int(text), int(text))
        except ValueError:
            raise SchemaError(f"{text!r} is not a version range") from None

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        return self.lowest <= version and (self.highest is None or version <= self.highest)

    def is_empty(self) -> bool:
        return self.highest is not None and self.lowest > self.highest

    def within(self, other: Versions) -> bool:
        """Whether this range starts in ``other`` and ends in it or is open as ``other`` is or
        runs past a closed ``other`` (``"0+"`` of a message valid in ``"0-2"``, as Kafka writes
        it). The empty range is within everything."""
        if self.is_empty():
            return True
        if self.lowest not in other:
            return False
        return self.highest is None or self.highest in other

    def __str__(self) -> str:
        if self.is_empty():
            return "none"
        if self.highest is None:
            return f"{self.lowest}+"
        if self.highest == self.lowest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


NO_VERSIONS: Final = Versions(1, 0)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a message or struct. ``type`` is Kafka's spelling (``int32``, ``[]uuid``,
    ``[]BrokerEndpoint``); ``struct`` holds the fields of an array of structs."""

    name: str
    type: str
    versions: Versions
    about: str
    default: str | None = None
    nullable_versions: Versions = NO_VERSIONS
    tagged_versions: Versions = NO_VERSIONS
    tag: int | None = None
    entity_type: str | None = None
    struct: StructSpec | None = None

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        """The type of one element of an array, or the type itself."""
        return self.type[2:] if self.is_array else self.type

    @property
    def python_name(self) -> str:
        """The attribute name on a record: ``BrokerId`` becomes ``broker_id``."""
        return snake_case(self.name)

    @property
    def json_name(self) -> str:
        """The key in Kafka's JSON form of a record: ``BrokerId`` becomes ``brokerId``."""
        return self.name[0].lower() + self.name[1:]

    def in_version(self, version: int) -> bool:
        return version in self.versions

    def is_tagged(self, version: int) -> bool:
        return version in self.tagged_versions

    def is_nullable(self, version: int) -> bool:
        return version in self.nullable_versions


@dataclass(frozen=True, slots=True)
class StructSpec:
    """A named struct: the element type of an array of structs."""

    name: str
    fields: tuple[FieldSpec, ...]


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A whole schema file."""

    api_key: int
    type: str
    name: str
    valid_versions: Versions
    flexible_versions: Versions
    fields: tuple[FieldSpec, ...]

    @property
    def versions(self) -> range:
        """Every valid version, lowest first."""
        highest = self.valid_versions.highest
        if highest is None:
            raise SchemaError(f"{self.name}: validVersions must be a closed range")
        return range(self.valid_versions.lowest, highest + 1)

    @property
    def type_name(self) -> str:
        """Kafka's ``MetadataRecordType`` constant: ``REGISTER_BROKER_RECORD``."""
        return snake_case(self.name).upper()

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions


def snake_case(name: str) -> str:
    """``BrokerId`` -> ``broker_id``, ``LastKnownElr`` -> ``last_known_elr``."""
    return _CAMEL_BOUNDARY.sub("_", name).lower()


def strip_comments(text: str) -> str:
    """The JSON text with whole-line ``//`` comments blanked (line numbers are kept)."""
    return "\n".join("" if line.lstrip().startswith("//") else line for line in text.splitlines())


def parse_message_spec(text: str, source: str = "schema") -> MessageSpec:
    """Parse and check one schema file's text; ``source`` names it in error messages."""
    try:
        document = json.loads(strip_comments(text))
    except json.JSONDecodeError as e:
        raise SchemaError(f"{source}: not JSON: {e}") from None
    if not isinstance(document, dict):
        raise SchemaError(f"{source}: the document must be a JSON object")
    _check_keys(document, _MESSAGE_KEYS, source)
    name = _string(document, "name", source)
    where = f"{source} ({name})"
    if not _NAME.fullmatch(name):
        raise SchemaError(f"{where}: name must be CamelCase")
    api_key = document.get("apiKey")
    if not isinstance(api_key, int) or isinstance(api_key, bool) or not 0 <= api_key <= 32767:
        raise SchemaError(f"{where}: apiKey must be an integer from 0 to 32767, not {api_key!r}")
    kind = _string(document, "type", where)
    if kind != "metadata":
        raise SchemaError(f"{where}: type must be 'metadata', not {kind!r}")
    valid = Versions.parse(_string(document, "validVersions", where))
    if valid.highest is None or valid.is_empty():
        raise SchemaError(f"{where}: validVersions must be a closed, non-empty range")
    flexible = Versions.parse(_string(document, "flexibleVersions", where))
    fields = _fields(document.get("fields"), valid, flexible, f"{where}.fields", set())
    return MessageSpec(api_key, kind, name, valid, flexible, fields)


def _fields(
    raw: object, valid: Versions, flexible: Versions, where: str, struct_names: set[str]
) -> tuple[FieldSpec, ...]:
    if not isinstance(raw, list):
        raise SchemaError(f"{where}: must be a list of fields")
    parsed = tuple(
        _field(item, valid, flexible, f"{where}[{i}]", struct_names) for i, item in enumerate(raw)
    )
    _check_unique(parsed, where)
    return parsed


def _field(
    raw: object, valid: Versions, flexible: Versions, where: str, struct_names: set[str]
) -> FieldSpec:
    if not isinstance(raw, dict):
        raise SchemaError(f"{where}: a field must be a JSON object")
    _check_keys(raw, _FIELD_KEYS, where)
    name = _string(raw, "name", where)
    where = f"{where} ({name})"
    if not _NAME.fullmatch(name):
        raise SchemaError(f"{where}: name must be CamelCase")
    kind = _string(raw, "type", where)
    about = _string(raw, "about", where)
    if not about.strip():
        raise SchemaError(f"{where}: about must say what the field holds")
    versions = Versions.parse(_string(raw, "versions", where))
    if not versions.within(valid):
        raise SchemaError(f"{where}: versions {versions} are outside validVersions {valid}")
    nullable = Versions.parse(raw.get("nullableVersions", "none"))
    tagged = Versions.parse(raw.get("taggedVersions", "none"))
    tag = _tag(raw, tagged, versions, flexible, where)
    struct = _struct(raw, kind, valid, flexible, where, struct_names)
    if not nullable.is_empty():
        if not (kind.startswith("[]") or kind in VARIABLE_TYPES):
            raise SchemaError(f"{where}: only strings, bytes and arrays can be nullable")
        if not nullable.within(versions):
            raise SchemaError(f"{where}: nullableVersions {nullable} are outside {versions}")
    default = raw.get("default")
    if default is not None:
        default = _check_default(str(default), kind, nullable, where)
    entity = raw.get("entityType")
    return FieldSpec(name, kind, versions, about, default, nullable, tagged, tag, entity, struct)


def _tag(
    raw: Mapping[str, object], tagged: Versions, versions: Versions, flexible: Versions, where: str
) -> int | None:
    if "tag" not in raw:
        if not tagged.is_empty():
            raise SchemaError(f"{where}: taggedVersions needs a tag")
        return None
    try:
        tag = int(str(raw["tag"]))
    except ValueError:
        raise SchemaError(f"{where}: tag {raw['tag']!r} is not an integer") from None
    if tag < 0:
        raise SchemaError(f"{where}: tag {tag} is negative")
    if tagged.is_empty():
        raise SchemaError(f"{where}: a tag needs taggedVersions")
    if not tagged.within(versions) or not tagged.within(flexible):
        raise SchemaError(
            f"{where}: taggedVersions {tagged} must be flexible versions of {versions}"
        )
    return tag


def _struct(
    raw: Mapping[str, object],
    kind: str,
    valid: Versions,
    flexible: Versions,
    where: str,
    struct_names: set[str],
) -> StructSpec | None:
    element = kind[2:] if kind.startswith("[]") else kind
    if element in PRIMITIVE_SIZES or element in VARIABLE_TYPES:
        if "fields" in raw:
            raise SchemaError(f"{where}: a field of type {kind!r} cannot have fields")
        return None
    if not _NAME.fullmatch(element):
        raise SchemaError(f"{where}: unknown type {kind!r}")
    if not kind.startswith("[]"):
        raise SchemaError(f"{where}: a struct field must be an array ([]{kind})")
    if element in struct_names:
        raise SchemaError(f"{where}: struct {element} is defined twice")
    struct_names.add(element)
    fields = _fields(raw.get("fields"), valid, flexible, f"{where}.fields", struct_names)
    return StructSpec(element, fields)


def _check_default(default: str, kind: str, nullable: Versions, where: str) -> str:
    if default == "null":
        if nullable.is_empty():
            raise SchemaError(f"{where}: default null needs nullableVersions")
        return default
    if kind in INT_RANGES:
        try:
            value = int(default, 0)
        except ValueError:
            raise SchemaError(f"{where}: default {default!r} is not an integer") from None
        low, high = INT_RANGES[kind]
        if not low <= value <= high:
            raise SchemaError(f"{where}: default {value} is outside the range of {kind}")
    elif kind == "bool" and default not in ("true", "false"):
        raise SchemaError(f"{where}: default {default!r} is not true or false")
    elif kind.startswith("[]") or kind in ("uuid", "bytes"):
        raise SchemaError(f"{where}: a {kind} field can only default to null")
    return default


def _check_unique(fields: tuple[FieldSpec, ...], where: str) -> None:
    names: set[str] = set()
    tags: dict[int, str] = {}
    for f in fields:
        if f.python_name in names:
            raise SchemaError(f"{where}: field {f.name} is repeated")
        names.add(f.python_name)
        if f.tag is not None:
            if f.tag in tags:
                raise SchemaError(f"{where}: tag {f.tag} is used by {tags[f.tag]} and {f.name}")
            tags[f.tag] = f.name


def _check_keys(raw: Mapping[str, object], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise SchemaError(f"{where}: unknown key(s) {', '.join(unknown)}")


def _string(raw: Mapping[str, object], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise SchemaError(f"{where}: {key} must be a string, not {value!r}")
    return value
