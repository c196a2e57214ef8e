"""Reading a consumer group from JSON: the input of ``rackwise assign`` and of the golden cases.

The document is an object; these members are read and any others (a golden case's ``id`` or
``expected``, say) are ignored::

    {"partitions": {"orders": [["/dc1/r1", "/dc1/r2"], ["/dc1/r2", null], []]},
     "members": [{"member_id": "c1", "group_instance_id": null, "rack": "/dc1/r1",
                  "topics": ["orders"], "owned": ["orders-0", ["orders", 1]],
                  "generation": 3}],
     "options": {"prefer_rack_aware_logic": false}}

``partitions``
    Required. Each topic's partitions in partition order; a partition is the list of its
    replicas' racks, the leader's first. ``null`` is a broker without a rack; an empty list is a
    partition without a leader (and without replicas the assignor can see).
``members``
    Required. The group's members in the coordinator's order, each an object with exactly
    these members: ``member_id`` (required, a non-empty string, unique in the group);
    ``group_instance_id`` (a string, or ``null`` for a dynamic member); ``rack`` (the
    consumer's ``client.rack``, or ``null``); ``topics`` (its subscription, a list of topic
    names); ``owned`` (the partitions it owns, each ``"topic-N"``, split at the last ``-``, or a
    ``[topic, N]`` pair); ``generation`` (the generation it last had, an integer; ``-1``, the
    default, means none).
``options``
    Optional. ``prefer_rack_aware_logic`` (``true`` or ``false``; Kafka's internal switch,
    ``false`` as in Kafka's clients when absent); other options are kept as they are.

Anything else that does not fit raises :class:`~rackwise.common.InvalidFormatException`
with the path of the offending value and the value itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final, NoReturn

from rackwise.assignors.model import DEFAULT_GENERATION, GroupSpec, Member, PartitionInfo
from rackwise.common import InvalidFormatException, TopicPartition

_DOCUMENT: Final = "consumer group JSON"
_MEMBER_FIELDS: Final = ("member_id", "group_instance_id", "rack", "topics", "owned", "generation")
_INT32_MAX: Final = 2**31 - 1
_PREVIEW_LIMIT: Final = 60


def _preview(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
    return text if len(text) <= _PREVIEW_LIMIT else text[: _PREVIEW_LIMIT - 3] + "..."


def _fail(path: str, problem: str) -> NoReturn:
    raise InvalidFormatException(f"Invalid {_DOCUMENT} at {path}: {problem}")


def _expect_object(value: object, path: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        _fail(path, f"expected an object, got {_preview(value)}")
    return value


def _expect_list(value: object, path: str) -> list[object]:
    if not isinstance(value, list):
        _fail(path, f"expected an array, got {_preview(value)}")
    return value


def _expect_str(value: object, path: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        wanted = "a string or null" if optional else "a string"
        _fail(path, f"expected {wanted}, got {_preview(value)}")
    return value


def _expect_int(value: object, path: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _INT32_MAX:
        _fail(path, f"expected an integer from {low} to {_INT32_MAX}, got {_preview(value)}")
    return value


def _partition(value: object, path: str) -> PartitionInfo:
    racks = _expect_list(value, path)
    replica_racks = tuple(
        _expect_str(rack, f"{path}[{i}]", optional=True) for i, rack in enumerate(racks)
    )
    return PartitionInfo(replica_racks, has_leader=bool(replica_racks))


def _partitions(value: object) -> dict[str, tuple[PartitionInfo, ...]]:
    topics = _expect_object(value, "partitions")
    return {
        topic: tuple(
            _partition(p, f"partitions.{topic}[{i}]")
            for i, p in enumerate(_expect_list(parts, f"partitions.{topic}"))
        )
        for topic, parts in topics.items()
    }


def parse_topic_partition(value: object, path: str) -> TopicPartition:
    """``"topic-N"`` (split at the last ``-``) or ``[topic, N]`` as a :class:`TopicPartition`."""
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
        return TopicPartition(value[0], _expect_int(value[1], f"{path}[1]", 0))
    if isinstance(value, str):
        topic, dash, number = value.rpartition("-")
        if dash and topic and number.isascii() and number.isdigit():
            partition = int(number)
            if partition <= _INT32_MAX:
                return TopicPartition(topic, partition)
    _fail(path, f'expected "topic-N" or [topic, N], got {_preview(value)}')


def _member(value: object, path: str) -> Member:
    fields = _expect_object(value, path)
    unknown = sorted(set(fields) - set(_MEMBER_FIELDS))
    if unknown:
        _fail(f"{path}.{unknown[0]}", f"unknown member field; expected one of {_MEMBER_FIELDS}")
    member_id = _expect_str(fields.get("member_id"), f"{path}.member_id")
    if not member_id:
        _fail(f"{path}.member_id", "a member id must not be empty")
    topics = _expect_list(fields.get("topics", []), f"{path}.topics")
    owned = _expect_list(fields.get("owned", []), f"{path}.owned")
    return Member(
        member_id=member_id,
        topics=tuple(_expect_str(t, f"{path}.topics[{i}]") or "" for i, t in enumerate(topics)),
        owned=tuple(parse_topic_partition(tp, f"{path}.owned[{i}]") for i, tp in enumerate(owned)),
        rack=_expect_str(fields.get("rack"), f"{path}.rack", optional=True),
        group_instance_id=_expect_str(
            fields.get("group_instance_id"), f"{path}.group_instance_id", optional=True
        ),
        generation=_expect_int(
            fields.get("generation", DEFAULT_GENERATION), f"{path}.generation", DEFAULT_GENERATION
        ),
    )


def group_from_json(obj: object) -> GroupSpec:
    """The :class:`GroupSpec` described by a decoded JSON document (see the module docs)."""
    document = _expect_object(obj, "the top level")
    if "partitions" not in document:
        _fail("partitions", "missing; expected an object of topic -> partitions")
    if "members" not in document:
        _fail("members", "missing; expected an array of members")
    partitions = _partitions(document["partitions"])
    members = tuple(
        _member(m, f"members[{i}]")
        for i, m in enumerate(_expect_list(document["members"], "members"))
    )
    seen: set[str] = set()
    for i, m in enumerate(members):
        if m.member_id in seen:
            _fail(f"members[{i}].member_id", f"duplicate member id {_preview(m.member_id)}")
        seen.add(m.member_id)
    options = dict(_expect_object(document.get("options", {}), "options"))
    prefer = options.pop("prefer_rack_aware_logic", False)
    if not isinstance(prefer, bool):
        _fail("options.prefer_rack_aware_logic", f"expected true or false, got {_preview(prefer)}")
    return GroupSpec(partitions, members, prefer_rack_aware_logic=prefer, options=options)
