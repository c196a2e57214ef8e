"""Errors of the metadata record layer, in the taxonomy of :mod:`rackwise.common.errors`."""

from __future__ import annotations

from rackwise.common import error_codes as codes
from rackwise.common.errors import RackwiseError


class SchemaError(RackwiseError, ValueError):
    """A record schema (message-spec JSON) that is malformed; the message names the schema and
    the field. A programming error, found when the schemas load."""


class MetadataParseException(RackwiseError, ValueError):
    """Kafka's MetadataParseException: bytes that do not decode as a metadata record (unknown
    frame version or record type, a truncated body, garbage after it). Kafka's CORRUPT_MESSAGE."""

    error_code = codes.CORRUPT_MESSAGE


class RecordEncodeError(RackwiseError, ValueError):
    """A record that cannot be encoded: a value outside its field's type, a null where the
    version does not allow one. The message names the record and the field."""
