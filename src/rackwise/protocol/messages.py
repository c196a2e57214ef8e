"""rackwise's own protocol messages, by name: ``CreateReplicaPlacementRequest`` is the latest
version's class, ``CreateReplicaPlacementRequestV0`` a given one's; the structs of a version
hang off its class (``CreateReplicaPlacementResponseV0.ReplicaPlacement``). Built at import
from ``schemas/*.json`` (see :mod:`rackwise.protocol.specs`); ``messages.pyi`` gives their
types to the type checker and a test keeps it in step with the schemas."""

from __future__ import annotations

from typing import Any

from rackwise.protocol.specs import OWN_APIS

_names: dict[str, Any] = {}
for _api in OWN_APIS.values():
    for _spec, _classes in (
        (_api.request, _api.request_classes),
        (_api.response, _api.response_classes),
    ):
        for _version, _cls in _classes.items():
            _names[f"{_spec.name}V{_version}"] = _cls
        _names[_spec.name] = _classes[max(_classes)]

globals().update(_names)
__all__ = sorted(_names)  # noqa: PLE0605
