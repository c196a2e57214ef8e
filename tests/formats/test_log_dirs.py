"""``kafka-log-dirs --describe`` JSON in Kafka's shape and KIP-113's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.common import InvalidFormatException
from rackwise.formats.log_dirs import (
    STORAGE_ERROR,
    BrokerLogDirs,
    LogDirDescription,
    LogDirsReport,
    ReplicaSize,
    format_log_dirs,
    iter_log_dirs,
    parse_log_dirs,
)

# LogDirsCommand's whole output: members in Java HashMap order, as Jackson prints a HashMap.
KAFKA_OUTPUT = (
    "Querying brokers for log directories information\n"
    "Received log directory information from brokers 1,2\n"
    '{"brokers":[{"broker":1,"logDirs":[{"partitions":['
    '{"partition":"orders-3","size":1048576,"offsetLag":0,"isFuture":false},'
    '{"partition":"my-topic-10","size":0,"offsetLag":0,"isFuture":false}],'
    '"error":null,"logDir":"/data/d1"},'
    '{"partitions":[],"error":"org.apache.kafka.common.errors.KafkaStorageException",'
    '"logDir":"/data/d2"}]},'
    '{"broker":2,"logDirs":[{"partitions":['
    '{"partition":"orders-3","size":1048000,"offsetLag":576,"isFuture":true}],'
    '"error":null,"logDir":"/data/d1"}]}],"version":1}\n'
)
KAFKA_REPORT = LogDirsReport(
    (
        BrokerLogDirs(
            1,
            (
                LogDirDescription(
                    "/data/d1",
                    None,
                    (ReplicaSize("orders", 3, 1_048_576, 0), ReplicaSize("my-topic", 10, 0, 0)),
                ),
                LogDirDescription("/data/d2", STORAGE_ERROR),
            ),
        ),
        BrokerLogDirs(
            2,
            (
                LogDirDescription(
                    "/data/d1", None, (ReplicaSize("orders", 3, 1_048_000, 576, is_future=True),)
                ),
            ),
        ),
    )
)
KIP_DOCUMENT = """{
  "version" : 1,
  "log_dirs" : [
    {"is_live" : true, "path" : "/data/d1",
     "partitions": [{"topic" : "orders", "partition" : 3, "size" : 1048576, "is_temporary" : false},
                    {"topic" : "my-topic", "partition" : 10, "size" : 0, "is_temporary" : false}]},
    {"is_live" : false, "path" : "/data/d2", "partitions": []}
  ]
}"""


def test_kafka_output_reads_with_or_without_progress_lines() -> None:
    assert parse_log_dirs(KAFKA_OUTPUT) == KAFKA_REPORT
    json_line = KAFKA_OUTPUT.splitlines()[2]
    assert parse_log_dirs(json_line) == KAFKA_REPORT


def test_kafka_output_prints_back_byte_for_byte() -> None:
    assert format_log_dirs(KAFKA_REPORT, with_progress_lines=True) == KAFKA_OUTPUT
    assert format_log_dirs(KAFKA_REPORT) == KAFKA_OUTPUT.splitlines()[2]


def test_progress_line_lists_brokers_in_hash_set_order() -> None:
    report = LogDirsReport((BrokerLogDirs(17), BrokerLogDirs(1), BrokerLogDirs(16)))
    # A HashSet<Integer> of 16 buckets: 16 in bucket 0, then 17 and 1 in bucket 1 as inserted.
    assert format_log_dirs(report, with_progress_lines=True).splitlines()[1] == (
        "Received log directory information from brokers 16,17,1"
    )


def test_kip_shape_reads_into_the_same_model() -> None:
    report = parse_log_dirs(KIP_DOCUMENT, broker_id=1)
    assert report == LogDirsReport(
        (
            BrokerLogDirs(
                1,
                (
                    LogDirDescription(
                        "/data/d1",
                        None,
                        (ReplicaSize("orders", 3, 1_048_576), ReplicaSize("my-topic", 10, 0)),
                    ),
                    LogDirDescription("/data/d2", STORAGE_ERROR),
                ),
            ),
        )
    )
    assert [d.is_live for d in report.brokers[0].log_dirs] == [True, False]
    # Written in Kafka's shape, with no offset lag known: 0.
    assert format_log_dirs(report) == KAFKA_OUTPUT.splitlines()[2].split(',{"broker":2')[0] + (
        '],"version":1}'
    )


def test_iter_pairs_each_directory_with_its_broker_in_file_order() -> None:
    pairs = list(iter_log_dirs(KAFKA_OUTPUT))
    assert [(b, d.path, d.is_live) for b, d in pairs] == [
        (1, "/data/d1", True),
        (1, "/data/d2", False),
        (2, "/data/d1", True),
    ]
    kip = list(iter_log_dirs(KIP_DOCUMENT, broker_id=7))
    assert [(b, d.path) for b, d in kip] == [(7, "/data/d1"), (7, "/data/d2")]


def test_iter_decodes_one_broker_at_a_time() -> None:
    good = '{"broker":1,"logDirs":[{"partitions":[],"error":null,"logDir":"/d"}]}'
    broken = '{"brokers":[' + good + ',{"broker":2,"logDirs":[tru]}],"version":1}'
    pairs = iter_log_dirs(broken)
    assert next(pairs)[0] == 1
    with pytest.raises(InvalidFormatException, match=r"not valid JSON: Expecting value \(line 1"):
        next(pairs)


def test_a_broker_without_directories_is_kept() -> None:
    text = '{"brokers":[{"broker":4,"logDirs":[]}],"version":1}'
    assert parse_log_dirs(text) == LogDirsReport((BrokerLogDirs(4),))
    assert list(iter_log_dirs(text)) == []
    assert parse_log_dirs('{"version":1,"brokers":[]}') == LogDirsReport()
    assert parse_log_dirs('{"version":1,"log_dirs":[]}', broker_id=3) == LogDirsReport(
        (BrokerLogDirs(3),)
    )


def test_unknown_members_are_ignored_and_version_defaults_to_1() -> None:
    text = (
        '{"brokers":[{"broker":1,"rack":"r","logDirs":[{"partitions":[{"partition":"t-0",'
        '"size":5,"offsetLag":0,"isFuture":false,"x":1}],"error":null,"logDir":"/d",'
        '"totalBytes":9}]}]}'
    )
    ((broker, described),) = iter_log_dirs(text)
    assert broker == 1
    assert described == LogDirDescription("/d", None, (ReplicaSize("t", 0, 5, 0),))


def _kafka(partition: str) -> str:
    return (
        '{"brokers":[{"broker":1,"logDirs":[{"partitions":[' + partition + '],"error":null,'
        '"logDir":"/d"}]}],"version":1}'
    )


_ENTRY = '{"partition":"t-0","size":1,"offsetLag":0,"isFuture":false}'
_AT = "log-dirs JSON: brokers[0].logDirs[0].partitions[0]"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "log-dirs JSON: the input is empty"),
        ("[]", "log-dirs JSON: expected a JSON object, got []"),
        (
            "{",
            "log-dirs JSON: not valid JSON: Expecting property name enclosed in double quotes "
            "(line 1, column 2)",
        ),
        (
            '{"version":1}',
            'log-dirs JSON: missing required field "brokers" (or KIP-113\'s "log_dirs")',
        ),
        (
            '{"brokers":[],"version":2}',
            "log-dirs JSON: version: unsupported version 2; only 1 is defined",
        ),
        ('{"brokers":{},"version":1}', "log-dirs JSON: brokers: expected a JSON array, got {}"),
        ('{"brokers":[],"brokers":[]}', "log-dirs JSON: brokers: member appears more than once"),
        (
            '{"brokers":[],"log_dirs":[]}',
            'log-dirs JSON: has both "brokers" and "log_dirs"; expected one of them',
        ),
        ('{"brokers":[]} x', "log-dirs JSON: not valid JSON: Extra data (line 1, column 16)"),
        (
            '{"brokers":[NaN]}',
            "log-dirs JSON: not valid JSON: NaN is not a JSON value (line 1, column 13)",
        ),
        (
            '{"brokers":[{"broker":-1,"logDirs":[]}]}',
            "log-dirs JSON: brokers[0].broker: must be at least 0, got -1",
        ),
        (
            '{"brokers":[{"broker":1}]}',
            'log-dirs JSON: brokers[0]: missing required field "logDirs"',
        ),
        (
            '{"brokers":[{"broker":1,"logDirs":[]},{"broker":1,"logDirs":[]}]}',
            "log-dirs JSON: brokers[1].broker: broker 1 is already listed at brokers[0]",
        ),
        (
            '{"brokers":[{"broker":1,"logDirs":[{"partitions":[],"error":null,"logDir":"d"}]}]}',
            'log-dirs JSON: brokers[0].logDirs[0].logDir: "d" is not an absolute path',
        ),
        (
            '{"brokers":[{"broker":1,"logDirs":[{"partitions":[],"logDir":"/d"}]}]}',
            'log-dirs JSON: brokers[0].logDirs[0]: missing required field "error"',
        ),
        (
            '{"brokers":[{"broker":1,"logDirs":[{"partitions":[],"error":null,"logDir":"/d"},'
            '{"partitions":[],"error":null,"logDir":"/d"}]}]}',
            'log-dirs JSON: brokers[0].logDirs[1]: log directory "/d" is already listed at '
            "brokers[0].logDirs[0]",
        ),
        (_kafka('"t-0"'), f'{_AT}: expected a JSON object, got "t-0"'),
        (
            _kafka('{"partition":"t","size":1,"offsetLag":0,"isFuture":false}'),
            f'{_AT}.partition: "t" is not a topic-partition name',
        ),
        (
            _kafka('{"partition":"t-03","size":1,"offsetLag":0,"isFuture":false}'),
            f'{_AT}.partition: "t-03" is not a topic-partition name',
        ),
        (
            _kafka('{"partition":"-3","size":1,"offsetLag":0,"isFuture":false}'),
            f'{_AT}.partition: "-3" is not a topic-partition name',
        ),
        (
            _kafka('{"partition":"t-2147483648","size":1,"offsetLag":0,"isFuture":false}'),
            f'{_AT}.partition: "t-2147483648" is not a topic-partition name',
        ),
        (
            _kafka('{"partition":"t-0","size":-5,"offsetLag":0,"isFuture":false}'),
            f"{_AT}.size: must be at least 0, got -5",
        ),
        (
            _kafka('{"partition":"t-0","size":1.5,"offsetLag":0,"isFuture":false}'),
            f"{_AT}.size: expected an integer, got 1.5",
        ),
        (
            _kafka('{"partition":"t-0","size":1,"isFuture":false}'),
            f'{_AT}: missing required field "offsetLag"',
        ),
        (
            _kafka('{"partition":"t-0","size":1,"offsetLag":0,"isFuture":0}'),
            f"{_AT}.isFuture: expected true or false, got 0",
        ),
        (
            _kafka(_ENTRY + "," + _ENTRY),
            "log-dirs JSON: brokers[0].logDirs[0].partitions[1]: a replica of t-0 is already "
            "listed at brokers[0].logDirs[0].partitions[0]",
        ),
    ],
)
def test_kafka_shape_errors_name_the_entry_and_value(text: str, message: str) -> None:
    with pytest.raises(InvalidFormatException) as caught:
        parse_log_dirs(text)
    assert str(caught.value) == message


def test_a_partition_in_two_directories_of_one_broker_is_refused() -> None:
    text = (
        '{"brokers":[{"broker":1,"logDirs":[{"partitions":[' + _ENTRY + '],"error":null,'
        '"logDir":"/a"},{"partitions":[' + _ENTRY + '],"error":null,"logDir":"/b"}]}]}'
    )
    with pytest.raises(InvalidFormatException) as caught:
        parse_log_dirs(text)
    assert str(caught.value) == (
        "log-dirs JSON: brokers[0].logDirs[1].partitions[0]: a replica of t-0 is already listed "
        "at brokers[0].logDirs[0].partitions[0]"
    )
    # A move between directories: the current replica in one, its future copy in the other.
    moving = text.replace(
        '"isFuture":false}],"error":null,"logDir":"/b"',
        '"isFuture":true}],"error":null,"logDir":"/b"',
    )
    report = parse_log_dirs(moving)
    assert [r.is_future for d in report.brokers[0].log_dirs for r in d.replicas] == [False, True]


@pytest.mark.parametrize(
    ("text", "broker_id", "message"),
    [
        (
            KIP_DOCUMENT,
            None,
            'log-dirs JSON: a KIP-113 document ("log_dirs") describes one broker '
            "without naming it; give the broker id",
        ),
        (KAFKA_OUTPUT, 1, "log-dirs JSON: names its brokers itself; a broker id (1) was given too"),
        (KIP_DOCUMENT, -2, "log-dirs JSON: broker id: must be at least 0, got -2"),
        (
            '{"log_dirs":[{"is_live":"yes","path":"/d","partitions":[]}]}',
            1,
            'log-dirs JSON: log_dirs[0].is_live: expected true or false, got "yes"',
        ),
        (
            '{"log_dirs":[{"is_live":true,"path":"/d","partitions":[{"topic":"","partition":0,'
            '"size":1,"is_temporary":false}]}]}',
            1,
            "log-dirs JSON: log_dirs[0].partitions[0].topic: must not be an empty string",
        ),
        (
            '{"log_dirs":[{"is_live":true,"path":"/d","partitions":[{"topic":"t","partition":-1,'
            '"size":1,"is_temporary":false}]}]}',
            1,
            "log-dirs JSON: log_dirs[0].partitions[0].partition: must be at least 0, got -1",
        ),
        (
            '{"log_dirs":[{"is_live":true,"path":"/d","partitions":[{"topic":"t","partition":0,'
            '"size":1}]}]}',
            1,
            'log-dirs JSON: log_dirs[0].partitions[0]: missing required field "is_temporary"',
        ),
        (
            '{"log_dirs":[{"is_live":true,"path":"/a","partitions":[{"topic":"t","partition":0,'
            '"size":1,"is_temporary":false}]},{"is_live":true,"path":"/b","partitions":['
            '{"topic":"t","partition":0,"size":1,"is_temporary":false}]}]}',
            1,
            "log-dirs JSON: log_dirs[1].partitions[0]: a replica of t-0 is already listed at "
            "log_dirs[0].partitions[0]",
        ),
    ],
)
def test_kip_shape_errors(text: str, broker_id: int | None, message: str) -> None:
    with pytest.raises(InvalidFormatException) as caught:
        parse_log_dirs(text, broker_id=broker_id)
    assert str(caught.value) == message


def test_on_invalid_sets_aside_partitions_directories_and_brokers() -> None:
    bad_entry = '{"partition":"t-1","size":-1,"offsetLag":0,"isFuture":false}'
    text = (
        '{"brokers":[{"broker":1,"logDirs":[{"partitions":[' + _ENTRY + "," + bad_entry + "],"
        '"error":null,"logDir":"/a"},{"partitions":[],"error":null,"logDir":"rel"}]},'
        '{"broker":"2","logDirs":[]},{"broker":3,"logDirs":[{"partitions":[' + _ENTRY + "],"
        '"error":null,"logDir":"/a"}]}],"version":1}'
    )
    reasons: list[tuple[object, str]] = []
    pairs = list(iter_log_dirs(text, on_invalid=lambda item, e: reasons.append((item, str(e)))))
    assert [(b, d.path, [str(r) for r in d.replicas]) for b, d in pairs] == [
        (1, "/a", ["t-0"]),
        (3, "/a", ["t-0"]),
    ]
    assert reasons == [
        (
            {"partition": "t-1", "size": -1, "offsetLag": 0, "isFuture": False},
            "log-dirs JSON: brokers[0].logDirs[0].partitions[1].size: must be at least 0, got -1",
        ),
        (
            {"partitions": [], "error": None, "logDir": "rel"},
            'log-dirs JSON: brokers[0].logDirs[1].logDir: "rel" is not an absolute path',
        ),
        (
            {"broker": "2", "logDirs": []},
            'log-dirs JSON: brokers[1].broker: expected an integer, got "2"',
        ),
    ]


def test_on_invalid_does_not_excuse_a_bad_document() -> None:
    with pytest.raises(InvalidFormatException, match="unsupported version 3"):
        list(iter_log_dirs('{"brokers":[],"version":3}', on_invalid=lambda item, e: None))


def test_writer_refuses_what_the_reader_refuses() -> None:
    twice = LogDirsReport((BrokerLogDirs(1), BrokerLogDirs(1)))
    with pytest.raises(InvalidFormatException, match=r"brokers\[1\]\.broker: broker 1 is already"):
        format_log_dirs(twice)
    relative = LogDirsReport((BrokerLogDirs(1, (LogDirDescription("d"),)),))
    with pytest.raises(InvalidFormatException, match=r'logDir: "d" is not an absolute path'):
        format_log_dirs(relative)
    negative = LogDirsReport(
        (BrokerLogDirs(1, (LogDirDescription("/d", None, (ReplicaSize("t", 0, -1),)),)),)
    )
    with pytest.raises(InvalidFormatException, match=r"partitions\[0\]\.size: must be at least 0"):
        format_log_dirs(negative)


_replicas = st.lists(
    st.builds(
        ReplicaSize,
        topic=st.text(min_size=1, max_size=8),
        partition=st.integers(0, 2**31 - 1),
        size_bytes=st.integers(0, 2**63 - 1),
        offset_lag=st.integers(-(2**63), 2**63 - 1),
        is_future=st.booleans(),
    ),
    max_size=4,
    unique_by=lambda r: (r.topic, r.partition, r.is_future),
).map(tuple)
_dirs = st.lists(
    st.builds(
        LogDirDescription,
        path=st.text(max_size=6).map(lambda name: "/" + name),
        error=st.none() | st.just(STORAGE_ERROR),
        replicas=_replicas,
    ),
    max_size=3,
    unique_by=lambda d: d.path,
)


def _one_copy_per_broker(dirs: list[LogDirDescription]) -> tuple[LogDirDescription, ...]:
    """Drop replicas that another directory of the same broker already holds."""
    seen: set[tuple[str, int, bool]] = set()
    kept = []
    for described in dirs:
        replicas = []
        for r in described.replicas:
            if (r.topic, r.partition, r.is_future) not in seen:
                seen.add((r.topic, r.partition, r.is_future))
                replicas.append(r)
        kept.append(LogDirDescription(described.path, described.error, tuple(replicas)))
    return tuple(kept)


_reports = st.lists(
    st.builds(
        BrokerLogDirs, broker_id=st.integers(0, 2**31 - 1), log_dirs=_dirs.map(_one_copy_per_broker)
    ),
    max_size=4,
    unique_by=lambda b: b.broker_id,
).map(lambda brokers: LogDirsReport(tuple(brokers)))


@given(_reports)
def test_write_then_read_gives_the_same_value(report: LogDirsReport) -> None:
    assert parse_log_dirs(format_log_dirs(report)) == report
    assert parse_log_dirs(format_log_dirs(report, with_progress_lines=True)) == report


@given(_reports)
def test_read_then_write_gives_the_same_bytes(report: LogDirsReport) -> None:
    canonical = format_log_dirs(report)
    assert format_log_dirs(parse_log_dirs(canonical)) == canonical
