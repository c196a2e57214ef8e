"""``kafka-log-dirs.sh --describe`` JSON: where each replica lives and how big it is, per log
directory, in the two shapes the tool has had.

**Kafka's shape**, what ``LogDirsCommand`` prints today: two lines of progress, then one line of
compact JSON. Every object is a Java ``HashMap`` printed by Jackson, so members come in hash
order (``brokers`` before ``version``, ``partitions`` before ``error`` before ``logDir``)::

    Querying brokers for log directories information
    Received log directory information from brokers 1
    {"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"orders-3","size":1048576,"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/data/d1"}]}],"version":1}

``partition`` is the ``TopicPartition`` as Java prints it (``orders-3``: the topic, ``-``, the
partition number); ``size`` is the replica's bytes on disk; ``offsetLag`` how far the replica
is behind (a future replica behind its current one); ``isFuture`` marks the copy a move
between directories is building (KIP-113's "temporary" replica). ``error`` is the class name of
the exception the broker reported for the directory (``null`` when there is none):
``org.apache.kafka.common.errors.KafkaStorageException`` for an offline directory, which then
lists no partitions. A broker that answers DescribeLogDirs v5 says whether each directory is
cordoned (KIP-1066, ``cordoned.log.dirs``): ``"cordoned":true`` comes, in hash order, between
``partitions`` and ``error``; a document without it reads as not saying (``None``).

**KIP-113's shape**, as the proposal specified the tool's output for one broker
(``--broker 1``); the document does not name the broker, so the caller does::

    {"version":1,"log_dirs":[{"is_live":true,"path":"/data/d1","partitions":[{"topic":"orders","partition":3,"size":1048576,"is_temporary":false}]}]}

Both read into one model: a :class:`LogDirsReport` of :class:`BrokerLogDirs`, each a broker's
:class:`LogDirDescription` list, each a directory's :class:`ReplicaSize` list. A directory with
an error, or ``is_live: false``, is not live (:data:`STORAGE_ERROR` stands in for the error of
the KIP shape). The KIP shape has no offset lag (``None``).

Reading is strict in what the tool always prints: every member above is required except
``version`` (absent means 1, the only version; any other is refused); members the tool does not
print are ignored, as Kafka's own JSON readers ignore them. Beyond types, a log directory must
be an absolute path, a size must not be negative, no broker may appear twice, no directory twice
in one broker, and no partition twice among a broker's current (or among its future) replicas.
The two progress lines are skipped when present, so the tool's whole output can be read as
saved.

Reading one entry at a time: :func:`iter_log_dirs` streams the document (one broker, or one
directory of the KIP shape, decoded at a time) and, with ``on_invalid``, hands each entry that
fails a check (a partition, a directory or a broker) to ``on_invalid`` with the error and
carries on. :func:`parse_log_dirs` reads the whole document strictly.

Writing (:func:`format_log_dirs`) prints Kafka's shape byte for byte as the tool does, members
in hash order; lists (brokers, directories, partitions) keep the model's order, where Kafka's
follow its hash maps and carry no meaning. A missing offset lag is written as 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from rackwise.common.errors import InvalidFormatException
from rackwise.common.java import java_hashmap_order
from rackwise.formats._json import (
    dump_string,
    expect_array,
    expect_int,
    expect_object,
    expect_optional_str,
    expect_str,
    fail,
    join,
    preview,
    require,
)
from rackwise.formats._json_stream import STREAMED, stream_object
from rackwise.formats.brokers import (
    INT64_MAX,
    InvalidItemHandler,
    expect_absolute_path,
    expect_bool,
    expect_long,
)

LOG_DIRS_VERSION: Final = 1
"""The only version of the log-dirs JSON."""

STORAGE_ERROR: Final = "org.apache.kafka.common.errors.KafkaStorageException"
"""The error Kafka reports for an offline log directory."""

QUERYING_LINE: Final = "Querying brokers for log directories information"
RECEIVED_PREFIX: Final = "Received log directory information from brokers "

_DOCUMENT: Final = "log-dirs JSON"
_INT32_MAX: Final = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ReplicaSize:
    """One replica in a log directory: its partition, its size on disk in bytes, its offset lag
    (``None`` when the report has none) and whether it is the future copy of a move between
    directories."""

    topic: str
    partition: int
    size_bytes: int
    offset_lag: int | None = None
    is_future: bool = False

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    """One log directory of a broker: its path, the error the broker reported for it (``None``
    when there is none), its replicas, and whether it is cordoned (KIP-1066; ``None`` when the
    broker does not say: DescribeLogDirs before v5, a document without ``cordoned``)."""

    path: str
    error: str | None = None
    replicas: tuple[ReplicaSize, ...] = ()
    cordoned: bool | None = None

    @property
    def is_live(self) -> bool:
        """Whether the broker described the directory without an error."""
        return self.error is None


@dataclass(frozen=True, slots=True)
class BrokerLogDirs:
    """A broker's log directories, as one entry of ``brokers``."""

    broker_id: int
    log_dirs: tuple[LogDirDescription, ...] = ()


@dataclass(frozen=True, slots=True)
class LogDirsReport:
    """A whole log-dirs document: the brokers in file order."""

    brokers: tuple[BrokerLogDirs, ...] = ()


_SHAPES: Final = ("brokers", "log_dirs")


def _json_start(text: str) -> int:
    """Where the JSON starts in the tool's output: after the two progress lines it prints
    first, when they are there."""
    pos = len(text) - len(text.lstrip())
    for is_progress in (QUERYING_LINE.__eq__, _is_received_line):
        end = text.find("\n", pos)
        if end >= 0 and is_progress(text[pos:end].rstrip("\r")):
            pos = end + 1
    return pos


def _is_received_line(line: str) -> bool:
    return line.startswith(RECEIVED_PREFIX)


# --- entries ------------------------------------------------------------------------------------


class _BrokerState:
    """What one broker has shown so far, to refuse a directory or a partition seen twice.
    Positions are kept as (directory path in the document, index) and spelled out only for an
    error message."""

    def __init__(self) -> None:
        self.dirs: dict[str, str] = {}
        self.partitions: dict[tuple[str, int, bool], tuple[str, int]] = {}


def _partition_name(name: str) -> tuple[str, int] | None:
    """``orders-3`` as Java's ``TopicPartition.toString`` prints it, split; ``None`` if it is
    not such a name."""
    topic, _, number = name.rpartition("-")
    if not (topic and number.isascii() and number.isdigit()):
        return None
    if number[0] == "0" and number != "0":
        return None
    partition = int(number)
    return (topic, partition) if partition <= _INT32_MAX else None


def _fast_kafka_replica(item: object) -> ReplicaSize | None:
    """A well-formed entry of Kafka's shape, or ``None`` (then :func:`_kafka_replica` says
    what is wrong). The common case, kept to plain type checks for speed."""
    if type(item) is not dict:
        return None
    name, size, lag, future = (
        item.get("partition"),
        item.get("size"),
        item.get("offsetLag"),
        item.get("isFuture"),
    )
    if not (
        type(name) is str
        and type(size) is int
        and type(lag) is int
        and type(future) is bool
        and 0 <= size <= INT64_MAX
        and -INT64_MAX - 1 <= lag <= INT64_MAX
    ):
        return None
    parsed = _partition_name(name)
    if parsed is None:
        return None
    return ReplicaSize(parsed[0], parsed[1], size, lag, future)


def _fast_kip_replica(item: object) -> ReplicaSize | None:
    """A well-formed entry of KIP-113's shape, or ``None``."""
    if type(item) is not dict:
        return None
    topic, partition, size, temporary = (
        item.get("topic"),
        item.get("partition"),
        item.get("size"),
        item.get("is_temporary"),
    )
    if (
        type(topic) is str
        and topic
        and type(partition) is int
        and type(size) is int
        and type(temporary) is bool
        and 0 <= partition <= _INT32_MAX
        and 0 <= size <= INT64_MAX
    ):
        return ReplicaSize(topic, partition, size, None, temporary)
    return None


def _kafka_replica(item: object, path: str) -> ReplicaSize:
    fields = expect_object(item, _DOCUMENT, path)
    name = expect_str(require(fields, "partition", _DOCUMENT, path), _DOCUMENT, path + ".partition")
    parsed = _partition_name(name)
    if parsed is None:
        fail(_DOCUMENT, join(path, "partition"), f"{preview(name)} is not a topic-partition name")
    size = expect_long(require(fields, "size", _DOCUMENT, path), _DOCUMENT, path + ".size")
    if size < 0:
        fail(_DOCUMENT, join(path, "size"), f"must be at least 0, got {size}")
    lag = expect_long(require(fields, "offsetLag", _DOCUMENT, path), _DOCUMENT, path + ".offsetLag")
    future = expect_bool(
        require(fields, "isFuture", _DOCUMENT, path), _DOCUMENT, path + ".isFuture"
    )
    return ReplicaSize(parsed[0], parsed[1], size, lag, future)


def _kip_replica(item: object, path: str) -> ReplicaSize:
    fields = expect_object(item, _DOCUMENT, path)
    topic = expect_str(
        require(fields, "topic", _DOCUMENT, path), _DOCUMENT, path + ".topic", non_empty=True
    )
    partition = expect_int(
        require(fields, "partition", _DOCUMENT, path), _DOCUMENT, path + ".partition", minimum=0
    )
    size = expect_long(require(fields, "size", _DOCUMENT, path), _DOCUMENT, path + ".size")
    if size < 0:
        fail(_DOCUMENT, join(path, "size"), f"must be at least 0, got {size}")
    temporary = expect_bool(
        require(fields, "is_temporary", _DOCUMENT, path), _DOCUMENT, path + ".is_temporary"
    )
    return ReplicaSize(topic, partition, size, None, temporary)


def _dir_fields(item: object, path: str, *, kip: bool) -> tuple[str, str | None, list[object]]:
    """A directory's path, error and raw partition list, in either shape."""
    fields = expect_object(item, _DOCUMENT, path)
    key = "path" if kip else "logDir"
    dir_path = expect_absolute_path(
        require(fields, key, _DOCUMENT, path), _DOCUMENT, path + "." + key
    )
    if kip:
        is_live = expect_bool(
            require(fields, "is_live", _DOCUMENT, path), _DOCUMENT, path + ".is_live"
        )
        error = None if is_live else STORAGE_ERROR
    else:
        error = expect_optional_str(
            require(fields, "error", _DOCUMENT, path), _DOCUMENT, path + ".error"
        )
    items = expect_array(
        require(fields, "partitions", _DOCUMENT, path), _DOCUMENT, path + ".partitions"
    )
    return dir_path, error, items


def _read_dir(
    item: object,
    path: str,
    state: _BrokerState,
    on_invalid: InvalidItemHandler | None,
    *,
    kip: bool,
) -> LogDirDescription:
    dir_path, error, items = _dir_fields(item, path, kip=kip)
    earlier_dir = state.dirs.setdefault(dir_path, path)
    if earlier_dir != path:
        fail(
            _DOCUMENT, path, f"log directory {preview(dir_path)} is already listed at {earlier_dir}"
        )
    fast, careful = (
        (_fast_kip_replica, _kip_replica) if kip else (_fast_kafka_replica, _kafka_replica)
    )
    seen = state.partitions
    replicas: list[ReplicaSize] = []
    for index, raw in enumerate(items):
        replica = fast(raw)
        if replica is not None:
            key = (replica.topic, replica.partition, replica.is_future)
            if key not in seen:
                seen[key] = (path, index)
                replicas.append(replica)
                continue
        try:
            where = f"{path}.partitions[{index}]"
            _check_not_seen(careful(raw, where), path, index, state)
            fail(_DOCUMENT, where, f"BUG: entry {preview(raw)} passes every check yet was refused")
        except InvalidFormatException as invalid:
            if on_invalid is None:
                raise
            on_invalid(raw, invalid)
    cordoned = item.get("cordoned") if isinstance(item, dict) and not kip else None
    if cordoned is not None:
        expect_bool(cordoned, _DOCUMENT, path + ".cordoned")
    return LogDirDescription(dir_path, error, tuple(replicas), cordoned)


def _kafka_broker(
    item: object, path: str, seen: dict[int, str], on_invalid: InvalidItemHandler | None
) -> BrokerLogDirs:
    fields = expect_object(item, _DOCUMENT, path)
    broker_id = expect_int(
        require(fields, "broker", _DOCUMENT, path), _DOCUMENT, path + ".broker", minimum=0
    )
    dirs = expect_array(require(fields, "logDirs", _DOCUMENT, path), _DOCUMENT, path + ".logDirs")
    earlier = seen.setdefault(broker_id, path)
    if earlier != path:
        fail(_DOCUMENT, path + ".broker", f"broker {broker_id} is already listed at {earlier}")
    state = _BrokerState()
    described: list[LogDirDescription] = []
    for index, raw in enumerate(dirs):
        try:
            described.append(
                _read_dir(raw, f"{path}.logDirs[{index}]", state, on_invalid, kip=False)
            )
        except InvalidFormatException as invalid:
            if on_invalid is None:
                raise
            on_invalid(raw, invalid)
    return BrokerLogDirs(broker_id, tuple(described))


def _iter_brokers(
    text: str, broker_id: int | None, on_invalid: InvalidItemHandler | None
) -> Iterator[BrokerLogDirs]:
    """The document as :class:`BrokerLogDirs`: one per broker of Kafka's shape, one per
    directory of KIP-113's (each for ``broker_id``)."""
    if not isinstance(text, str):
        fail(_DOCUMENT, "", f"expected JSON text as a str, got {type(text).__name__}")
    start = _json_start(text)
    if start == len(text):
        fail(_DOCUMENT, "", "the input is empty")
    members: dict[str, object] = {}
    seen_brokers: dict[int, str] = {}
    kip_state = _BrokerState()
    shape: str | None = None
    for index, (key, item) in enumerate(stream_object(text, _DOCUMENT, _SHAPES, members, start)):
        if shape is None:
            shape = _check_shape(members, broker_id)
        elif key != shape:
            _check_shape(members, broker_id)
        try:
            if key == "brokers":
                entry = _kafka_broker(item, f"brokers[{index}]", seen_brokers, on_invalid)
            else:
                assert broker_id is not None
                path = f"log_dirs[{index}]"
                described = _read_dir(item, path, kip_state, on_invalid, kip=True)
                entry = BrokerLogDirs(broker_id, (described,))
        except InvalidFormatException as invalid:
            if on_invalid is None:
                raise
            on_invalid(item, invalid)
            continue
        yield entry
    _check_version(members)
    for key in _SHAPES:
        if key in members and members[key] is not STREAMED:
            expect_array(members[key], _DOCUMENT, key)
    _check_shape(members, broker_id)


def _check_shape(members: Mapping[str, object], broker_id: int | None) -> str:
    """Which shape the members seen so far make the document, refusing a mixture, a missing
    list, and a broker id that is missing (KIP-113's shape) or superfluous (Kafka's)."""
    present = [key for key in _SHAPES if key in members]
    if len(present) > 1:
        fail(_DOCUMENT, "", 'has both "brokers" and "log_dirs"; expected one of them')
    if not present:
        fail(_DOCUMENT, "", 'missing required field "brokers" (or KIP-113\'s "log_dirs")')
    if present[0] == "log_dirs" and broker_id is None:
        fail(
            _DOCUMENT,
            "",
            'a KIP-113 document ("log_dirs") describes one broker without naming it; '
            "give the broker id",
        )
    if present[0] == "brokers" and broker_id is not None:
        fail(_DOCUMENT, "", f"names its brokers itself; a broker id ({broker_id}) was given too")
    if broker_id is not None:
        expect_int(broker_id, _DOCUMENT, "broker id", minimum=0)
    return present[0]


def _check_version(members: Mapping[str, object]) -> None:
    if "version" not in members:
        return
    version = expect_int(members["version"], _DOCUMENT, "version")
    if version != LOG_DIRS_VERSION:
        fail(
            _DOCUMENT,
            "version",
            f"unsupported version {version}; only {LOG_DIRS_VERSION} is defined",
        )


def iter_log_dirs(
    text: str, *, broker_id: int | None = None, on_invalid: InvalidItemHandler | None = None
) -> Iterator[tuple[int, LogDirDescription]]:
    """Stream a log-dirs document of either shape as ``(broker id, directory)`` pairs, in file
    order, decoding one broker (Kafka's shape) or one directory (KIP-113's) at a time.

    ``broker_id`` names the broker a KIP-113 document describes (it is required for that shape
    and refused for Kafka's, which names its brokers). Raises
    :class:`~rackwise.common.errors.InvalidFormatException` naming the offending entry and
    value; with ``on_invalid``, an entry that fails (a partition, a directory, a broker) is
    handed to it with the error and left out instead. A document that is not a log-dirs
    document at all (not JSON, no ``brokers`` list, an unknown version) still raises, possibly
    after some pairs were produced (Kafka prints ``version`` last).
    """
    for entry in _iter_brokers(text, broker_id, on_invalid):
        for described in entry.log_dirs:
            yield entry.broker_id, described


def parse_log_dirs(text: str, *, broker_id: int | None = None) -> LogDirsReport:
    """Read a whole log-dirs document of either shape strictly (see :func:`iter_log_dirs`).
    A broker of Kafka's shape that lists no directory is kept, with none."""
    brokers = list(_iter_brokers(text, broker_id, None))
    if broker_id is not None:
        dirs = tuple(d for entry in brokers for d in entry.log_dirs)
        return LogDirsReport((BrokerLogDirs(broker_id, dirs),))
    return LogDirsReport(tuple(brokers))


# --- writing ------------------------------------------------------------------------------------


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _replica_json(replica: ReplicaSize) -> str:
    lag = 0 if replica.offset_lag is None else replica.offset_lag
    return (
        f'{{"partition":{dump_string(str(replica))},"size":{replica.size_bytes},'
        f'"offsetLag":{lag},"isFuture":{_bool(replica.is_future)}}}'
    )


def _dir_json(described: LogDirDescription) -> str:
    partitions = ",".join(_replica_json(r) for r in described.replicas)
    error = "null" if described.error is None else dump_string(described.error)
    cordoned = "" if described.cordoned is None else f'"cordoned":{_bool(described.cordoned)},'
    return (
        f'{{"partitions":[{partitions}],{cordoned}"error":{error},'
        f'"logDir":{dump_string(described.path)}}}'
    )


def format_log_dirs(report: LogDirsReport, *, with_progress_lines: bool = False) -> str:
    """Print ``report`` in Kafka's shape, as ``kafka-log-dirs --describe`` prints it: the JSON
    line alone, or with ``with_progress_lines`` the tool's whole output (the two progress lines
    and the JSON, each ending in a newline)."""
    _check_report(report)
    brokers = ",".join(
        f'{{"broker":{b.broker_id},"logDirs":[{",".join(_dir_json(d) for d in b.log_dirs)}]}}'
        for b in report.brokers
    )
    document = f'{{"brokers":[{brokers}],"version":{LOG_DIRS_VERSION}}}'
    if not with_progress_lines:
        return document
    ids = java_hashmap_order([b.broker_id for b in report.brokers], lambda i: i)
    received = RECEIVED_PREFIX + ",".join(str(i) for i in ids)
    return f"{QUERYING_LINE}\n{received}\n{document}\n"


def _check_replica(replica: object, path: str) -> ReplicaSize:
    if not isinstance(replica, ReplicaSize):
        fail(_DOCUMENT, path, f"not a ReplicaSize: {replica!r}")
    expect_str(replica.topic, _DOCUMENT, path + ".topic", non_empty=True)
    expect_int(replica.partition, _DOCUMENT, path + ".partition", minimum=0)
    expect_long(replica.size_bytes, _DOCUMENT, path + ".size", minimum=0)
    if replica.offset_lag is not None:
        expect_long(replica.offset_lag, _DOCUMENT, path + ".offsetLag")
    expect_bool(replica.is_future, _DOCUMENT, path + ".isFuture")
    return replica


def _check_report(report: LogDirsReport) -> None:
    """Refuse what the reader would refuse, so that what is written reads back the same."""
    if not isinstance(report, LogDirsReport):
        fail(_DOCUMENT, "", f"not a LogDirsReport: {report!r}")
    seen_brokers: dict[int, str] = {}
    for b_index, broker in enumerate(report.brokers):
        path = f"brokers[{b_index}]"
        if not isinstance(broker, BrokerLogDirs):
            fail(_DOCUMENT, path, f"not a BrokerLogDirs: {broker!r}")
        expect_int(broker.broker_id, _DOCUMENT, path + ".broker", minimum=0)
        earlier = seen_brokers.setdefault(broker.broker_id, path)
        if earlier != path:
            fail(
                _DOCUMENT,
                path + ".broker",
                f"broker {broker.broker_id} is already listed at {earlier}",
            )
        state = _BrokerState()
        for d_index, described in enumerate(broker.log_dirs):
            where = f"{path}.logDirs[{d_index}]"
            if not isinstance(described, LogDirDescription):
                fail(_DOCUMENT, where, f"not a LogDirDescription: {described!r}")
            expect_absolute_path(described.path, _DOCUMENT, where + ".logDir")
            expect_optional_str(described.error, _DOCUMENT, where + ".error")
            earlier_dir = state.dirs.setdefault(described.path, where)
            if earlier_dir != where:
                fail(
                    _DOCUMENT,
                    where,
                    f"log directory {preview(described.path)} is already listed at {earlier_dir}",
                )
            for r_index, replica in enumerate(described.replicas):
                at = f"{where}.partitions[{r_index}]"
                _check_replica(replica, at)
                _check_not_seen(replica, where, r_index, state)


def _check_not_seen(replica: ReplicaSize, dir_path: str, index: int, state: _BrokerState) -> None:
    """Record ``replica``, found at ``dir_path.partitions[index]``, refusing a second one."""
    key = (replica.topic, replica.partition, replica.is_future)
    if key in state.partitions:
        earlier_dir, earlier_index = state.partitions[key]
        kind = "future replica" if replica.is_future else "replica"
        fail(
            _DOCUMENT,
            f"{dir_path}.partitions[{index}]",
            f"a {kind} of {replica} is already listed at {earlier_dir}.partitions[{earlier_index}]",
        )
    state.partitions[key] = (dir_path, index)


__all__ = [
    "LOG_DIRS_VERSION",
    "QUERYING_LINE",
    "RECEIVED_PREFIX",
    "STORAGE_ERROR",
    "BrokerLogDirs",
    "LogDirDescription",
    "LogDirsReport",
    "ReplicaSize",
    "format_log_dirs",
    "iter_log_dirs",
    "parse_log_dirs",
]
