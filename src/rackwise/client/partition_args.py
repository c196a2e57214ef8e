"""The arguments and input files of ``kafka-get-offsets.sh``, ``kafka-delete-records.sh`` and
``kafka-leader-election.sh``, read and refused in Kafka's words: ``--time``, the partition
filters of ``--topic``/``--partitions`` and ``--topic-partitions``, the offset and election
JSON files. Pure and light to import (no protocol code), so that a bad argument is refused
before a command loads its client.

Worked example
    ``parse_time("earliest")`` is -2; ``parse_time("soon")`` raises ``Malformed time argument
    soon. Please use -1 or latest / -2 or earliest / -3 or max-timestamp / ...``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Final

from rackwise.common.errors import RackwiseError
from rackwise.common.types import TopicPartition

TIMES: Final = {
    "latest": -1, "earliest": -2, "max-timestamp": -3, "earliest-local": -4, "latest-tiered": -5,
}  # fmt: skip
UNKNOWN_OFFSET: Final = -1
ELECTION_TYPES: Final = {"PREFERRED": 0, "UNCLEAN": 1}
INT_MAX: Final = 2**31 - 1


class ToolError(RackwiseError):
    """Bad input, in Kafka's words."""


def parse_time(text: str) -> int:
    """``--time``: a name, -1 to -5, or ms since the epoch (Kafka's ``parseOffsetSpec``)."""
    if text in TIMES:
        return TIMES[text]
    try:
        value = int(text)
        if not -(2**63) <= value < 2**63:
            raise ValueError(text)
    except ValueError:
        raise ToolError(
            f"Malformed time argument {text}. Please use -1 or latest / -2 or earliest / -3 or "
            "max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specified long "
            "format timestamp"
        ) from None
    return value


def _topic_regex(text: str) -> re.Pattern[str]:
    """Kafka's ``IncludeList``: commas are alternatives, blanks and quotes dropped."""
    raw = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", text.strip().replace(",", "|")))
    return re.compile(raw.replace(" ", ""))


class PartitionFilter:
    """Which topics and partitions ``--topic``/``--partitions`` or ``--topic-partitions``
    select: rules of (topic regex, low, high) with ``low <= partition < high``."""

    _RULE: Final = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")

    def __init__(self, rules: Sequence[tuple[re.Pattern[str], frozenset[int] | None, int, int]]):
        self.rules = rules

    @classmethod
    def of_topic(cls, topic: str | None, partitions: str | None) -> PartitionFilter:
        ids: frozenset[int] | None = None
        if partitions:
            try:
                ids = frozenset(_java_int(p) for p in partitions.split(","))
            except ValueError:
                raise ToolError(
                    "--partitions expects a comma separated list of numeric partition ids, but "
                    f"received: {partitions}"
                ) from None
        return cls([(_topic_regex(topic if topic is not None else ".*"), ids, 0, INT_MAX)])

    @classmethod
    def of_patterns(cls, text: str) -> PartitionFilter:
        rules: list[tuple[re.Pattern[str], frozenset[int] | None, int, int]] = []
        for spec in [s for s in text.split(",")] or [""]:
            match = cls._RULE.fullmatch(spec)
            if match is None:
                raise ToolError(f"Invalid rule specification: {spec}")
            topic, single, low, high = (g or None for g in match.groups())
            regex = _topic_regex(topic or ".*")
            if single is not None:
                rules.append((regex, frozenset({int(single)}), 0, INT_MAX))
            else:
                rules.append((regex, None, int(low or 0), int(high) if high else INT_MAX))
        return cls(rules)

    def topic_allowed(self, topic: str) -> bool:
        return any(regex.fullmatch(topic) for regex, *_ in self.rules)

    def allowed(self, tp: TopicPartition) -> bool:
        return any(
            regex.fullmatch(tp.topic)
            and (ids is None or not ids or tp.partition in ids)
            and low <= tp.partition < high
            for regex, ids, low, high in self.rules
        )


def _java_int(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text) or not -(2**31) <= int(text) <= INT_MAX:
        raise ValueError(text)
    return int(text)


def parse_offset_json(text: str) -> dict[TopicPartition, int]:
    """``--offset-json-file``'s partitions and offsets (version 1), refused as Kafka refuses
    it: not JSON, another version, no partitions, a partition twice."""
    try:
        document = json.loads(text)
    except ValueError:
        raise ToolError("The input string is not a valid JSON") from None
    version = document.get("version", 1) if isinstance(document, dict) else None
    if version != 1:
        raise ToolError(f"Not supported version field value {version}")
    if "partitions" not in document:
        raise ToolError("Missing partitions field")
    seen: dict[TopicPartition, list[int]] = {}
    try:
        for entry in document["partitions"]:
            tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
            seen.setdefault(tp, []).append(int(entry["offset"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ToolError(f"Malformed offset json file: {e}") from None
    duplicates = [str(tp) for tp, offsets in seen.items() if len(offsets) > 1]
    if duplicates:
        raise ToolError(
            f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}"
        )
    return {tp: offsets[0] for tp, offsets in seen.items()}


def parse_election_json(text: str) -> list[TopicPartition]:
    """``--path-to-json-file``'s partitions, refused as Kafka refuses them."""
    try:
        document = json.loads(text)
    except ValueError:
        raise ToolError("Replica election data is empty") from None
    if not isinstance(document, dict) or "partitions" not in document:
        raise ToolError('Replica election data is missing "partitions" field')
    try:
        partitions = [
            TopicPartition(str(e["topic"]), int(e["partition"])) for e in document["partitions"]
        ]
    except (KeyError, TypeError, ValueError) as e:
        raise ToolError(f"Malformed replica election data: {e}") from None
    duplicates = sorted({str(tp) for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        raise ToolError(
            f"Replica election data contains duplicate partitions: [{', '.join(duplicates)}]"
        )
    return list(dict.fromkeys(partitions))
