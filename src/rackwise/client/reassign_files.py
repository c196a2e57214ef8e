"""The two files of ``kafka-reassign-partitions.sh`` as Kafka's ``ReassignPartitionsCommand``
reads them, pure: the reassignment JSON of ``--execute``, ``--verify`` and ``--cancel``, and
the topics-to-move JSON and ``--broker-list`` of ``--generate``, with Kafka's checks in its
order and its messages (:class:`~rackwise.client.reassign_text.ReassignFailure`).

Constraints
    * A missing ``version`` is 1 and any other version is refused (``Not supported version
      field value 2``); a missing ``partitions`` or ``topics`` list is empty; ``log_dirs`` is
      optional and, when given, pairs with the replicas (``Size of replicas list [1, 2] is
      different from size of log dirs list [any] for partition foo-0``).
    * ``--execute``'s checks then run in Kafka's order (an empty list, an empty replica list,
      a partition twice, a broker twice in one list), and last the format's own checks
      (:func:`rackwise.formats.reassignment.parse_reassignment`: non-negative ids, absolute
      directories), which name the field.

Worked example
    ``parse_execute('{"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":
    ["/d/1","any"]}]}')`` gives the target ``foo-0 -> (1, 2)`` and the one move of replica
    ``foo-0-1`` to ``/d/1``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from rackwise.client.reassign_text import (
    ReassignFailure,
    Replica,
    duplicates,
    java_list,
    string_set,
    tp_hash,
)
from rackwise.common import TopicPartition
from rackwise.common.java import java_hashmap_order
from rackwise.formats.reassignment import ANY_LOG_DIR, parse_reassignment


@dataclass(frozen=True, slots=True)
class Targets:
    """A reassignment file as Kafka reads it: each partition's target replicas in file order
    (repeats kept, to be checked) and the replicas given an absolute directory."""

    partitions: tuple[tuple[TopicPartition, tuple[int, ...]], ...]
    log_dirs: Mapping[Replica, str]


def _load(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ReassignFailure(f"{e.msg} at line {e.lineno} column {e.colno}") from None


def _version(root: object, what: str) -> None:
    if not isinstance(root, dict):
        raise ReassignFailure(f"Expected JSON object, received {_kind(root)}")
    version = root.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise ReassignFailure(f"Not supported version field value {version}")
    if not isinstance(root.get(what, []), list):
        raise ReassignFailure(f"Expected JSON array, received {_kind(root[what])}")


def _kind(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "number" if isinstance(value, int | float) else "null"
    )


def parse_targets(text: str) -> Targets:
    """Kafka's ``parsePartitionReassignmentData``: the file read, each replica list paired with
    its directories (``Size of replicas list ... is different from size of log dirs list``),
    then every entry checked by the format's own rules."""
    root = _load(text)
    _version(root, "partitions")
    assert isinstance(root, dict)
    partitions: list[tuple[TopicPartition, tuple[int, ...]]] = []
    log_dirs: dict[Replica, str] = {}
    for item in root.get("partitions", []):
        if not isinstance(item, dict) or not {"topic", "partition", "replicas"} <= item.keys():
            missing = next(
                k
                for k in ("topic", "partition", "replicas")
                if not isinstance(item, dict) or k not in item
            )
            raise ReassignFailure(f"No such field exists: `{missing}`")
        tp = TopicPartition(str(item["topic"]), _int(item["partition"]))
        replicas = tuple(_int(r) for r in _array(item["replicas"]))
        dirs = [str(d) for d in _array(item.get("log_dirs", [ANY_LOG_DIR] * len(replicas)))]
        if len(dirs) != len(replicas):
            raise ReassignFailure(
                f"Size of replicas list {java_list(replicas)} is different from size of log "
                f"dirs list {java_list(dirs)} for partition {tp}"
            )
        partitions.append((tp, replicas))
        for broker, log_dir in zip(replicas, dirs, strict=True):
            if log_dir != ANY_LOG_DIR:
                log_dirs[Replica.of(tp.topic, tp.partition, broker)] = log_dir
    return Targets(tuple(partitions), log_dirs)


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ReassignFailure(f"Expected `int` value, received {_kind(value)}")
    return value


def _array(value: object) -> list[object]:
    if not isinstance(value, list):
        raise ReassignFailure(f"Expected JSON array, received {_kind(value)}")
    return value


def parse_execute(text: str) -> Targets:
    """Kafka's ``parseExecuteAssignmentArgs``: :func:`parse_targets`, then its refusals of an
    empty list, an empty replica list, a partition given twice and a broker given twice in one
    list, then the format's own checks of every entry (non-negative ids, absolute paths)."""
    targets = parse_targets(text)
    parts = targets.partitions
    if not parts:
        raise ReassignFailure("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parts):
        raise ReassignFailure("Partition replica list cannot be empty")
    tps = [tp for tp, _ in parts]
    repeated = java_hashmap_order(
        list(dict.fromkeys(tp for i, tp in enumerate(tps) if tp in tps[:i])), tp_hash, exact=False
    )
    if repeated:
        raise ReassignFailure(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(str(tp) for tp in repeated)
        )
    duplicated = [(tp, duplicates(replicas)) for tp, replicas in parts if duplicates(replicas)]
    if duplicated:
        detail = ". ".join(
            f"{tp} contains multiple entries for {','.join(map(str, d))}" for tp, d in duplicated
        )
        raise ReassignFailure(
            f"Partition replica lists may not contain duplicate entries: {detail}"
        )
    try:
        parse_reassignment(text)
    except ValueError as e:
        raise ReassignFailure(str(e)) from None
    return targets


def parse_generate(text: str, broker_list: str) -> tuple[list[int], list[str]]:
    """Kafka's ``parseGenerateAssignmentArgs``: the brokers of ``--broker-list`` and the topics
    of ``--topics-to-move-json-file``, each without repeats."""
    brokers = []
    for part in broker_list.split(","):
        try:
            brokers.append(parse_java_int(part))
        except ValueError:
            raise ReassignFailure(f'For input string: "{part}"') from None
    repeated = duplicates(brokers)
    if repeated:
        raise ReassignFailure(f"Broker list contains duplicate entries: {java_list(repeated)}")
    root = _load(text)
    _version(root, "topics")
    assert isinstance(root, dict)
    topics = []
    for item in root.get("topics", []):
        if not isinstance(item, dict) or "topic" not in item:
            raise ReassignFailure("No such field exists: `topic`")
        if not isinstance(item["topic"], str):
            raise ReassignFailure(f"Expected `String` value, received {_kind(item['topic'])}")
        topics.append(item["topic"])
    twice = string_set(t for i, t in enumerate(topics) if t in topics[:i])
    if twice:
        raise ReassignFailure(
            f"List of topics to reassign contains duplicate entries: {java_list(twice)}"
        )
    return brokers, topics


def parse_java_int(text: str) -> int:
    """Java's ``Integer.parseInt``: an optional sign and ASCII digits, within 32 bits."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not digits.isascii() or not digits.isdigit():
        raise ValueError(text)
    value = int(text)
    if not -(2**31) <= value < 2**31:
        raise ValueError(text)
    return value
