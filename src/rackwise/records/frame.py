"""One metadata record in bytes, framed as Kafka's ``MetadataRecordSerde`` frames it.

A frame is three unsigned varints and the record's body::

    frame_version (1)   api_key   version   body

Frame version 0 was KRaft's 2.8 preview and is refused with Kafka's message; any other frame
version, an unknown api key or version, a body that does not decode, or bytes left over after
it raise :class:`~rackwise.records.errors.MetadataParseException`. The frame carries no length:
the container (a record batch) delimits it.
"""

from __future__ import annotations

from typing import Any, Final

from rackwise.records.codec import DECODE_ERRORS, InternCache, read_uvarint, uvarint_bytes
from rackwise.records.errors import MetadataParseException
from rackwise.records.registry import RECORD_TYPES, codec_of

FRAME_VERSION: Final = 1
"""The only frame version Kafka writes and reads."""

SHORT_MAX: Final = 32767


def encode_record(record: Any) -> bytes:
    """The frame of ``record``: header and body."""
    codec = codec_of(record)
    cls = type(record)
    header = (
        uvarint_bytes(FRAME_VERSION)
        + uvarint_bytes(int(cls.__api_key__))
        + uvarint_bytes(int(cls.__version__))
    )
    return header + codec.encode(record)


def decode_record(
    buf: bytes, pos: int = 0, end: int | None = None, uuids: InternCache | None = None
) -> Any:
    """The record framed in ``buf[pos:end]`` (to the end of ``buf`` by default); the frame must
    fill the span exactly. ``uuids`` interns uuid objects across calls."""
    end = len(buf) if end is None else end
    if uuids is None:
        uuids = {}
    try:
        frame_version, pos = _short(buf, pos, end, "frame version")
        if frame_version == 0:
            raise MetadataParseException(
                "Could not deserialize metadata record with frame version 0. Note that upgrades "
                "from the preview release of KRaft in 2.8 to newer versions are not supported."
            )
        if frame_version != FRAME_VERSION:
            raise MetadataParseException(
                "Could not deserialize metadata record due to unknown frame version "
                f"{frame_version}(only frame version {FRAME_VERSION} is supported)"
            )
        api_key, pos = _short(buf, pos, end, "type")
        version, pos = _short(buf, pos, end, "version")
    except MetadataParseException:
        raise
    except DECODE_ERRORS:
        raise MetadataParseException("Truncated metadata record frame header") from None
    return decode_body(api_key, version, buf, pos, end, uuids)


def decode_body(
    api_key: int, version: int, buf: bytes, pos: int, end: int, uuids: InternCache
) -> Any:
    """The body of a record of ``api_key`` at ``version`` in ``buf[pos:end]``."""
    record_type = RECORD_TYPES.get(api_key)
    if record_type is None:
        raise MetadataParseException(f"Unknown metadata id {api_key}")
    codec = record_type.codecs.get(version)
    if codec is None:
        raise MetadataParseException(
            f"Failed to deserialize record with type {api_key}: version {version} of "
            f"{record_type.name} is not supported (versions {record_type.spec.valid_versions})"
        )
    try:
        record, pos = codec.decode(buf, pos, uuids)
    except DECODE_ERRORS as e:
        raise MetadataParseException(
            f"Failed to deserialize record with type {api_key} ({record_type.name} "
            f"version {version}): {e}"
        ) from None
    if pos > end:
        raise MetadataParseException(
            f"Failed to deserialize record with type {api_key} ({record_type.name} "
            f"version {version}): the body runs {pos - end} byte(s) past its frame"
        )
    if pos < end:
        raise MetadataParseException(
            f"Found {end - pos} byte(s) of garbage after {api_key} ({record_type.name})"
        )
    return record


def _short(buf: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    if pos >= end:
        raise MetadataParseException(f"Error while reading {what}: no bytes left")
    value, pos = read_uvarint(buf, pos)
    if value > SHORT_MAX:
        raise MetadataParseException(f"Value for {what} was too large.")
    return value, pos
