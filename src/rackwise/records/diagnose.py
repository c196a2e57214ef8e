"""Why a record does not encode: the first field whose value does not fit its schema."""

from __future__ import annotations

import uuid
from typing import Any

from rackwise.records.classes import fields_of
from rackwise.records.spec import INT_RANGES


def describe_encode_error(record: Any, path: str = "") -> str | None:
    """The first field of ``record`` whose value does not fit its schema, as a sentence."""
    cls = type(record)
    where = path or cls.__qualname__
    for spec, _, nullable, _, nested in fields_of(cls):
        value = getattr(record, spec.python_name)
        name = f"{where}.{spec.python_name}"
        if value is None:
            if spec.type == "uuid":
                continue
            if not nullable:
                return f"{name} is null but the field is not nullable in this version"
            continue
        values = value if spec.is_array else (value,)
        if spec.is_array and not isinstance(value, tuple | list):
            return f"{name} must be a sequence, not {type(value).__name__}"
        for j, item in enumerate(values):
            at = f"{name}[{j}]" if spec.is_array else name
            problem = _describe_value(spec.element_type, item, nested, at)
            if problem:
                return problem
    return None


def _describe_value(kind: str, value: Any, nested: type | None, at: str) -> str | None:
    if nested is not None:
        if not isinstance(value, nested):
            return f"{at} must be a {nested.__qualname__}, not {type(value).__name__}"
        return describe_encode_error(value, at)
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        if not isinstance(value, int):
            return f"{at} must be an integer, not {value!r}"
        if not low <= value <= high:
            return f"{at} = {value} is outside the range of {kind} ({low} to {high})"
    expected = {"string": str, "bytes": bytes | bytearray, "uuid": uuid.UUID, "bool": bool}
    if kind in expected and not isinstance(value, expected[kind]):
        return f"{at} must be a {kind}, not {value!r}"
    return None
