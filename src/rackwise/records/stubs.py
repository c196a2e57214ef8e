"""The type stub of :mod:`rackwise.records.metadata`, rendered from the schemas.

The record classes are built at import time, so a type checker cannot see them; ``metadata.pyi``
declares them. It is generated, never edited: a test renders it again and compares. To
regenerate after changing a schema::

    .venv/bin/python -c "from rackwise.records.stubs import render_stub; \\
        print(render_stub(), end='')" > src/rackwise/records/metadata.pyi
"""

from __future__ import annotations

import dataclasses
from typing import Final

from rackwise.records.classes import field_default
from rackwise.records.registry import RECORD_TYPES
from rackwise.records.spec import FieldSpec

_TYPES: Final = {
    "bool": "bool",
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "int",
    "uint16": "int",
    "uint32": "int",
    "float64": "float",
    "string": "str",
    "bytes": "bytes",
    "uuid": "uuid.UUID",
}
_HEADER: Final = '''"""Generated from the schemas by rackwise.records.stubs; do not edit."""

import uuid
from dataclasses import dataclass
from typing import ClassVar

from rackwise.records.spec import FieldSpec
'''


def render_stub() -> str:
    """The text of ``metadata.pyi``."""
    parts = [_HEADER]
    names: list[str] = []
    for api_key in sorted(RECORD_TYPES):
        record_type = RECORD_TYPES[api_key]
        for version in sorted(record_type.classes):
            name = f"{record_type.name}V{version}"
            lines = _class_lines(name, record_type.spec.fields, version, 0)
            parts.append("\n" + "\n".join(lines) + "\n")
            names.append(name)
        parts.append(f"\n{record_type.name} = {record_type.name}V{record_type.latest_version}\n")
        names.append(record_type.name)
    parts.append("\n__all__ = [\n" + "".join(f'    "{n}",\n' for n in sorted(names)) + "]\n")
    return "".join(parts)


def _class_lines(name: str, fields: tuple[FieldSpec, ...], version: int, depth: int) -> list[str]:
    pad = "    " * depth
    lines = [
        f"{pad}@dataclass(frozen=True, slots=True, kw_only=True)",
        f"{pad}class {name}:",
        f"{pad}    __version__: ClassVar[int]",
        f"{pad}    __api_key__: ClassVar[int]",
        f"{pad}    __flexible__: ClassVar[bool]",
        f"{pad}    __fields__: ClassVar[tuple[FieldSpec, ...]]",
    ]
    present = [f for f in fields if f.in_version(version)]
    for f in present:
        if f.struct is not None:
            lines.extend(_class_lines(f.struct.name, f.struct.fields, version, depth + 1))
            lines.append("")
    for f in present:
        element = f.struct.name if f.struct is not None else _TYPES[f.element_type]
        annotation = f"tuple[{element}, ...]" if f.is_array else element
        if f.is_nullable(version):
            annotation += " | None"
        has_default = field_default(f, version) is not dataclasses.MISSING
        lines.append(f"{pad}    {f.python_name}: {annotation}{' = ...' if has_default else ''}")
    return lines
