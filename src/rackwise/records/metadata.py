"""The metadata record classes, by name: ``PartitionRecord`` is the latest version's class,
``PartitionRecordV0`` .. ``PartitionRecordV2`` each version's. Built at import from the schemas
(see :mod:`rackwise.records.registry`); ``metadata.pyi`` gives their types to the type checker
and a test keeps it in step with the schemas."""

from __future__ import annotations

from typing import Any

from rackwise.records.registry import RECORD_TYPES

_names: dict[str, Any] = {}
for _record_type in RECORD_TYPES.values():
    for _version, _cls in _record_type.classes.items():
        _names[f"{_record_type.name}V{_version}"] = _cls
    _names[_record_type.name] = _record_type.latest

globals().update(_names)
__all__ = sorted(_names)  # noqa: PLE0605
