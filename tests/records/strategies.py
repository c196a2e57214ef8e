"""Hypothesis strategies for record instances, derived from the schemas themselves."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from hypothesis import strategies as st

from rackwise.records.spec import INT_RANGES, FieldSpec

_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
_UUIDS = st.one_of(
    st.just(uuid.UUID(int=0)),
    st.integers(1, 3).map(lambda n: uuid.UUID(int=n)),
    st.uuids(),
)


def _scalar(kind: str) -> st.SearchStrategy[Any]:
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        return st.one_of(
            st.integers(low, high),
            st.sampled_from([low, -1, 0, 1, high]).filter(lambda v: low <= v <= high),
        )
    if kind == "bool":
        return st.booleans()
    if kind == "string":
        return _TEXT
    if kind == "bytes":
        return st.binary(max_size=8)
    if kind == "uuid":
        return _UUIDS
    raise AssertionError(f"no strategy for {kind}")


def _field(cls: type, spec: FieldSpec) -> st.SearchStrategy[Any]:
    version = int(cls.__version__)  # type: ignore[attr-defined]
    if spec.struct is not None:
        element: st.SearchStrategy[Any] = records_of(getattr(cls, spec.struct.name))
    else:
        element = _scalar(spec.element_type)
    value = st.lists(element, max_size=4).map(tuple) if spec.is_array else element
    if spec.is_nullable(version):
        value = st.one_of(st.none(), value)
    default = next(f.default for f in dataclasses.fields(cls) if f.name == spec.python_name)
    if spec.is_tagged(version):
        value = st.one_of(st.just(default), value)
    return value


def records_of(cls: type) -> st.SearchStrategy[Any]:
    """Instances of one record (or struct) class, with every field drawn from its type."""
    fields = {spec.python_name: _field(cls, spec) for spec in cls.__fields__}  # type: ignore[attr-defined]
    return st.fixed_dictionaries(fields).map(lambda values: cls(**values))
