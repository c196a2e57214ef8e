"""rackwise's own protocol messages: request and response schemas in Kafka's message-spec JSON
(``schemas/*.json``), built into classes and compiled codecs exactly as the metadata records
are (:mod:`rackwise.records.spec`, :mod:`~rackwise.records.classes`,
:mod:`~rackwise.records.codec`).

A request or response schema is a record schema with ``"type": "request"`` or ``"response"``
and, for a request, Kafka's ``"listeners"`` (``"broker"``, ``"controller"``). The record parser
checks everything else (fields, versions, tags, defaults); this module checks the type, the
listeners and that every request has its response with the same api key and versions. Only
flexible versions are allowed, as for every message Kafka has added since KIP-482, so that a
later version can add tagged fields older peers skip.

The classes look like kio's message classes (``__type__`` is ``EntityType.request`` or
``response``, ``__header_schema__`` is kio's request header v2 or response header v1), so
kio's ``entity_writer`` / ``entity_reader`` accept them too. The compiled codec writes them
(byte for byte as kio's writer); :mod:`rackwise.protocol.tolerant` reads them, as it reads
Kafka's messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from types import MappingProxyType
from typing import Final

from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.static.constants import EntityType

from rackwise.records.classes import build_message_classes
from rackwise.records.codec import Codec, compile_codec
from rackwise.records.errors import SchemaError
from rackwise.records.spec import MessageSpec, parse_message_spec, strip_comments

LISTENERS: Final = frozenset({"broker", "controller"})
"""The listener names a request schema may list (Kafka's ``zkBroker`` has no place here)."""
CLASS_MODULE: Final = "rackwise.protocol.messages"
"""The module the classes are published in."""


@dataclass(frozen=True, slots=True)
class OwnApi:
    """One of rackwise's own APIs: both schemas, one class and one codec per version each."""

    request: MessageSpec
    response: MessageSpec
    listeners: frozenset[str]
    request_classes: Mapping[int, type]
    response_classes: Mapping[int, type]
    codecs: Mapping[type, Codec]

    @property
    def api_key(self) -> int:
        return self.request.api_key

    @property
    def name(self) -> str:
        """The API's name: the request's name without ``Request``."""
        return self.request.name.removesuffix("Request")


def parse_api_spec(text: str, source: str) -> tuple[MessageSpec, frozenset[str]]:
    """Parse one request or response schema; the listeners are empty for a response."""
    try:
        document = json.loads(strip_comments(text))
    except json.JSONDecodeError as e:
        raise SchemaError(f"{source}: not JSON: {e}") from None
    if not isinstance(document, dict):
        raise SchemaError(f"{source}: the document must be a JSON object")
    kind = document.get("type")
    if kind not in ("request", "response"):
        raise SchemaError(f"{source}: type must be 'request' or 'response', not {kind!r}")
    listeners = document.pop("listeners", None)
    if kind == "request":
        if not isinstance(listeners, list) or not listeners:
            raise SchemaError(f"{source}: a request must list its listeners")
        unknown = sorted(str(name) for name in set(listeners) - LISTENERS)
        if unknown:
            raise SchemaError(f"{source}: unknown listener(s) {', '.join(unknown)}")
    elif listeners is not None:
        raise SchemaError(f"{source}: only a request has listeners")
    # The record parser checks the rest; it knows only the type "metadata".
    document["type"] = "metadata"
    spec = parse_message_spec(json.dumps(document), source)
    if spec.flexible_versions.lowest != spec.valid_versions.lowest:
        raise SchemaError(f"{source}: every version of rackwise's own messages must be flexible")
    return replace(spec, type=kind), frozenset(listeners or ())


def build_own_apis(texts: Mapping[str, str]) -> dict[int, OwnApi]:
    """Own APIs from schema texts keyed by file name (``<Name>Request.json`` and
    ``<Name>Response.json``)."""
    requests: dict[int, tuple[MessageSpec, frozenset[str]]] = {}
    responses: dict[int, MessageSpec] = {}
    for source, text in sorted(texts.items()):
        spec, listeners = parse_api_spec(text, source)
        if source.endswith(".json") and source[: -len(".json")] != spec.name:
            raise SchemaError(f"{source}: the file must be named {spec.name}.json")
        suffix = "Request" if spec.type == "request" else "Response"
        if not spec.name.endswith(suffix):
            raise SchemaError(f"{source}: a {spec.type} name must end in {suffix}")
        table: Mapping[int, object] = requests if spec.type == "request" else responses
        if spec.api_key in table:
            raise SchemaError(f"{source}: api key {spec.api_key} has two {spec.type} schemas")
        if spec.type == "request":
            requests[spec.api_key] = (spec, listeners)
        else:
            responses[spec.api_key] = spec
    if set(requests) != set(responses):
        unmatched = sorted(set(requests) ^ set(responses))
        raise SchemaError(f"api key(s) {unmatched} lack a request or a response schema")
    return {key: _build(*requests[key], responses[key]) for key in sorted(requests)}


def _build(request: MessageSpec, listeners: frozenset[str], response: MessageSpec) -> OwnApi:
    if request.name.removesuffix("Request") != response.name.removesuffix("Response"):
        raise SchemaError(f"{request.name} and {response.name} share api key {request.api_key}")
    if request.valid_versions != response.valid_versions:
        raise SchemaError(f"{request.name} and {response.name} must have the same versions")
    request_classes = _classes(request, EntityType.request, RequestHeaderV2)
    response_classes = _classes(response, EntityType.response, ResponseHeaderV1)
    codecs = {
        cls: compile_codec(cls) for cls in (*request_classes.values(), *response_classes.values())
    }
    return OwnApi(
        request,
        response,
        listeners,
        MappingProxyType(request_classes),
        MappingProxyType(response_classes),
        MappingProxyType(codecs),
    )


def _classes(spec: MessageSpec, kind: EntityType, header: type) -> dict[int, type]:
    classes = build_message_classes(spec)
    for cls in classes.values():
        _publish(cls, kind, header)
    return classes


def _publish(cls: type, kind: EntityType, header: type) -> None:
    """Make a built class look like kio's: its entity type, its header, our module."""
    cls.__module__ = CLASS_MODULE
    cls.__header_schema__ = header  # type: ignore[attr-defined]
    if cls.__type__ is EntityType.data:  # type: ignore[attr-defined]
        cls.__type__ = kind  # type: ignore[attr-defined]
    for spec in cls.__fields__:  # type: ignore[attr-defined]
        if spec.struct is not None:
            _publish(getattr(cls, spec.struct.name), kind, header)


def _read_packaged_schemas() -> dict[str, str]:
    folder = resources.files("rackwise.protocol") / "schemas"
    return {
        entry.name: entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    }


OWN_APIS: Final[Mapping[int, OwnApi]] = MappingProxyType(build_own_apis(_read_packaged_schemas()))
"""rackwise's own APIs, by api key."""
