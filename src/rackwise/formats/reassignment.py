"""The two JSON documents of ``kafka-reassign-partitions.sh``.

**Reassignment** (``--reassignment-json-file``; printed by ``--generate``)::

    {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}

Kafka prints it with Jackson in compact form, the partitions sorted by topic (Java
``String.compareTo``) and then partition number, each entry's keys in the order topic,
partition, replicas, log_dirs, and ``log_dirs`` always present, with ``"any"`` for every replica
that has no directory of its own. On input ``log_dirs`` may be left out (it then means "any" for
every replica); if given, it has one entry per replica, each ``"any"`` or an absolute path.

**Topics to move** (``--topics-to-move-json-file``)::

    {"version":1,"topics":[{"topic":"foo"},{"topic":"bar"}]}

Kafka only reads this one; the writer here prints it in the same compact style, topics in the
order given.

Both documents are at version 1, the only version Kafka defines; any other version is refused.
As in Kafka, a document without ``"version"`` is read as version 1 and a missing
``"partitions"`` or ``"topics"`` list as an empty one. Members Kafka does not read are ignored.

Beyond what Kafka's parser checks on its own we also refuse what its ``--execute`` or
``--generate`` step would refuse next, so the error comes with a position: a negative partition,
an empty or repeated replica list entry, the same partition twice, the same topic twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from rackwise.common.java import java_string_key
from rackwise.common.types import TopicPartition
from rackwise.formats._json import (
    JsonValue,
    dumps,
    expect_array,
    expect_int,
    expect_object,
    expect_str,
    fail,
    join,
    loads,
    preview,
    require,
)

ANY_LOG_DIR: Final = "any"
"""The ``log_dirs`` entry meaning "whichever log directory the broker picks"."""

REASSIGNMENT_VERSION: Final = 1
"""The only version of the reassignment JSON that Kafka defines."""

TOPICS_TO_MOVE_VERSION: Final = 1
"""The only version of the topics-to-move JSON that Kafka defines."""

_REASSIGNMENT: Final = "reassignment JSON"
_TOPICS: Final = "topics-to-move JSON"
# POSIX "/x", Windows "C:\x" or "C:/x", and UNC "\\server\share".
_ABSOLUTE_PATH: Final = re.compile(r"/|[A-Za-z]:[\\/]|\\\\")


def _check_replicas(
    replicas: Sequence[object], log_dirs: Sequence[object] | None, document: str, path: str
) -> tuple[tuple[int, ...], tuple[str, ...] | None]:
    """Validate a replica list and its optional ``log_dirs`` and return them typed.

    Refuses an empty replica list, a broker id that is not a non-negative 32-bit integer or
    appears twice, and a ``log_dirs`` list that does not pair up with the replicas or holds
    something other than ``"any"`` or an absolute path.
    """
    where = join(path, "replicas")
    if not replicas:
        fail(document, where, "the replica list must not be empty")
    brokers = tuple(
        expect_int(broker, document, f"{where}[{index}]", minimum=0)
        for index, broker in enumerate(replicas)
    )
    if len(set(brokers)) != len(brokers):
        repeated = next(b for i, b in enumerate(brokers) if b in brokers[:i])
        fail(
            document, where, f"broker {repeated} appears more than once in {preview(list(brokers))}"
        )
    if log_dirs is None:
        return brokers, None
    where = join(path, "log_dirs")
    if len(log_dirs) != len(brokers):
        fail(
            document,
            where,
            f"length {len(log_dirs)} {preview(list(log_dirs))} differs from the replicas' "
            f"length {len(brokers)} {preview(list(brokers))}; it needs one entry per replica",
        )
    dirs = tuple(
        expect_str(log_dir, document, f"{where}[{index}]") for index, log_dir in enumerate(log_dirs)
    )
    for index, log_dir in enumerate(dirs):
        if log_dir != ANY_LOG_DIR and not _ABSOLUTE_PATH.match(log_dir):
            fail(
                document,
                f"{where}[{index}]",
                f'{preview(log_dir)} is neither "any" nor an absolute path',
            )
    return brokers, dirs


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    """The target replicas of one partition, preferred leader first.

    ``log_dirs`` pairs each replica with the log directory it should live in (``"any"`` for no
    preference). It is normalised: a list that says ``"any"`` for every replica becomes ``None``,
    which is exactly what leaving ``log_dirs`` out of the file means.
    """

    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        where = f"{self.topic}-{self.partition}"
        expect_str(self.topic, _REASSIGNMENT, join(where, "topic"), non_empty=True)
        expect_int(self.partition, _REASSIGNMENT, join(where, "partition"), minimum=0)
        replicas, log_dirs = _check_replicas(
            tuple(self.replicas),
            None if self.log_dirs is None else tuple(self.log_dirs),
            _REASSIGNMENT,
            where,
        )
        if log_dirs is not None and all(log_dir == ANY_LOG_DIR for log_dir in log_dirs):
            log_dirs = None
        object.__setattr__(self, "replicas", replicas)
        object.__setattr__(self, "log_dirs", log_dirs)

    @property
    def topic_partition(self) -> TopicPartition:
        """The partition this entry moves."""
        return TopicPartition(self.topic, self.partition)

    @property
    def log_dirs_or_any(self) -> tuple[str, ...]:
        """``log_dirs`` with ``None`` spelled out as ``"any"`` for every replica."""
        if self.log_dirs is None:
            return (ANY_LOG_DIR,) * len(self.replicas)
        return self.log_dirs


def _sort_key(entry: PartitionReassignment) -> tuple[bytes, int]:
    return java_string_key(entry.topic), entry.partition


@dataclass(frozen=True, slots=True)
class Reassignment:
    """A whole reassignment document: at most one entry per partition.

    The entries are kept in the order Kafka prints them (topic as Java sorts strings, then
    partition), whatever order they were given in, so two reassignments of the same partitions
    compare equal. An empty reassignment is a valid document (Kafka's ``--generate`` can print
    one) even though ``--execute`` refuses it.
    """

    partitions: tuple[PartitionReassignment, ...] = ()

    def __post_init__(self) -> None:
        entries = tuple(self.partitions)
        seen: set[TopicPartition] = set()
        for index, entry in enumerate(entries):
            if not isinstance(entry, PartitionReassignment):
                fail(
                    _REASSIGNMENT, f"partitions[{index}]", f"not a PartitionReassignment: {entry!r}"
                )
            if entry.topic_partition in seen:
                fail(_REASSIGNMENT, str(entry.topic_partition), "partition listed more than once")
            seen.add(entry.topic_partition)
        object.__setattr__(self, "partitions", tuple(sorted(entries, key=_sort_key)))

    def by_partition(self) -> dict[TopicPartition, PartitionReassignment]:
        """The entries keyed by partition."""
        return {entry.topic_partition: entry for entry in self.partitions}


def _read_version(root: dict[str, object], document: str, supported: int) -> None:
    """Check ``"version"``: absent means ``supported`` (Kafka's default), anything else but
    ``supported`` is refused."""
    if "version" not in root:
        return
    version = expect_int(root["version"], document, "version")
    if version != supported:
        fail(document, "version", f"unsupported version {version}; only {supported} is defined")


def _parse_entry(item: object, path: str) -> PartitionReassignment:
    doc = _REASSIGNMENT
    fields = expect_object(item, doc, path)
    topic = expect_str(
        require(fields, "topic", doc, path), doc, join(path, "topic"), non_empty=True
    )
    partition_path = join(path, "partition")
    partition = expect_int(require(fields, "partition", doc, path), doc, partition_path, minimum=0)
    replicas = expect_array(require(fields, "replicas", doc, path), doc, join(path, "replicas"))
    log_dirs: list[object] | None = None
    if "log_dirs" in fields:
        log_dirs = expect_array(fields["log_dirs"], doc, join(path, "log_dirs"))
    brokers, dirs = _check_replicas(replicas, log_dirs, doc, path)
    return PartitionReassignment(topic, partition, brokers, dirs)


def parse_reassignment(text: str) -> Reassignment:
    """Read a reassignment JSON document.

    Raises :class:`~rackwise.common.errors.InvalidFormatException` naming the offending field
    (``partitions[3].replicas[1]``) and value for anything Kafka would refuse to execute.
    """
    root = expect_object(loads(text, _REASSIGNMENT), _REASSIGNMENT, "")
    _read_version(root, _REASSIGNMENT, REASSIGNMENT_VERSION)
    items = expect_array(root.get("partitions", []), _REASSIGNMENT, "partitions")
    entries: list[PartitionReassignment] = []
    first_seen: dict[TopicPartition, int] = {}
    for index, item in enumerate(items):
        path = f"partitions[{index}]"
        entry = _parse_entry(item, path)
        earlier = first_seen.setdefault(entry.topic_partition, index)
        if earlier != index:
            fail(
                _REASSIGNMENT,
                path,
                f"partition {entry.topic_partition} is already listed at partitions[{earlier}]",
            )
        entries.append(entry)
    return Reassignment(tuple(entries))


def format_reassignment(reassignment: Reassignment) -> str:
    """Print ``reassignment`` exactly as Kafka's tools print one (compact, sorted, with
    ``log_dirs`` spelled out)."""
    partitions: list[JsonValue] = [
        {
            "topic": entry.topic,
            "partition": entry.partition,
            "replicas": list(entry.replicas),
            "log_dirs": list(entry.log_dirs_or_any),
        }
        for entry in reassignment.partitions
    ]
    return dumps({"version": REASSIGNMENT_VERSION, "partitions": partitions})


def parse_topics_to_move(text: str) -> tuple[str, ...]:
    """Read a topics-to-move JSON document into its topic names, in file order.

    A topic named twice is refused, as ``--generate`` refuses it.
    """
    root = expect_object(loads(text, _TOPICS), _TOPICS, "")
    _read_version(root, _TOPICS, TOPICS_TO_MOVE_VERSION)
    items = expect_array(root.get("topics", []), _TOPICS, "topics")
    topics: list[str] = []
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        path = f"topics[{index}]"
        fields = expect_object(item, _TOPICS, path)
        topic = require(fields, "topic", _TOPICS, path)
        name = expect_str(topic, _TOPICS, join(path, "topic"), non_empty=True)
        earlier = first_seen.setdefault(name, index)
        if earlier != index:
            fail(
                _TOPICS,
                join(path, "topic"),
                f"{preview(name)} is already listed at topics[{earlier}]",
            )
        topics.append(name)
    return tuple(topics)


def format_topics_to_move(topics: Iterable[str]) -> str:
    """Print a topics-to-move document for ``topics`` (compact, in the order given)."""
    names = tuple(topics)
    first_seen: dict[str, int] = {}
    for index, name in enumerate(names):
        expect_str(name, _TOPICS, f"topics[{index}].topic", non_empty=True)
        if first_seen.setdefault(name, index) != index:
            fail(_TOPICS, f"topics[{index}].topic", f"{preview(name)} is listed more than once")
    entries: list[JsonValue] = [{"topic": name} for name in names]
    return dumps({"version": TOPICS_TO_MOVE_VERSION, "topics": entries})


__all__ = [
    "ANY_LOG_DIR",
    "REASSIGNMENT_VERSION",
    "TOPICS_TO_MOVE_VERSION",
    "PartitionReassignment",
    "Reassignment",
    "format_reassignment",
    "format_topics_to_move",
    "parse_reassignment",
    "parse_topics_to_move",
]
