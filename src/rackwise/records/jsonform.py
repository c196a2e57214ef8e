"""Records as JSON, the way Kafka's ``kafka-dump-log --cluster-metadata-decoder`` prints them:
``{"type": "PARTITION_RECORD", "version": 2, "data": {...}}`` with the schema's field names in
lower camel case (``partitionId``), uuids in Kafka's base64 form, tagged fields only when they
differ from their default (as Kafka's generated JSON converters do)."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from rackwise.records.control import CONTROL_RECORD_CLASSES, control_json
from rackwise.records.registry import record_type_of

JsonObject = dict[str, Any]


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """The inverse of :func:`kafka_uuid` (Kafka's ``Uuid.fromString``)."""
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except ValueError:
        raise ValueError(f"{text!r} is not a Kafka uuid") from None
    if len(raw) != 16 or len(text) != 22:
        raise ValueError(f"{text!r} is not a Kafka uuid")
    return uuid.UUID(bytes=raw)


def record_json(record: Any) -> JsonObject:
    """The envelope Kafka's metadata record decoder prints: type, version, data (for a
    control record, its control type's name)."""
    if isinstance(record, CONTROL_RECORD_CLASSES):
        return control_json(record)
    record_type = record_type_of(record)
    return {
        "type": record_type.type_name,
        "version": int(type(record).__version__),
        "data": record_data_json(record),
    }


def record_data_json(record: Any) -> JsonObject:
    """The record's fields as Kafka's JSON converter writes them."""
    cls = type(record)
    version = int(cls.__version__)
    out: JsonObject = {}
    for spec in cls.__fields__:
        value = getattr(record, spec.python_name)
        if spec.is_tagged(version):
            default = cls.__dataclass_fields__[spec.python_name].default
            if value == default:
                continue
        out[spec.json_name] = _value_json(value)
    return out


def _value_json(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return kafka_uuid(value)
    if isinstance(value, tuple | list):
        return [_value_json(item) for item in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if hasattr(type(value), "__fields__") and hasattr(value, "__dataclass_fields__"):
        return record_data_json(value)
    return value
