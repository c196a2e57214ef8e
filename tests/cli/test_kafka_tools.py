"""Kafka's daily tools run as a person runs them, against one real cluster for the module:
get-offsets, delete-records, leader-election, the console producer and consumer, dump-log over
the broker's own segment files, and ``--command-config`` on each; lines and exit statuses as
Kafka's tools print them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rackwise.cli.main import main
from tests.command_line import rackwise, running_cluster

TOPIC = "orders"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A one-broker cluster with ``orders`` (3 partitions) holding 10 records in each."""
    from kafka import KafkaProducer

    directory = tmp_path_factory.mktemp("tools")
    with running_cluster(directory, "--brokers", "1") as servers:
        created = rackwise(
            "topics", "--bootstrap-server", servers, "--create", "--topic", TOPIC,
            "--partitions", "3", "--replication-factor", "1",
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        strict = rackwise(
            "topics", "--bootstrap-server", servers, "--create", "--topic", "strict",
            "--partitions", "1", "--replication-factor", "1", "--config", "min.insync.replicas=2",
        )  # fmt: skip
        assert strict.returncode == 0, strict.stderr
        producer = KafkaProducer(bootstrap_servers=servers)
        for i in range(30):
            producer.send(TOPIC, key=b"k%d" % i, value=b"v%d" % i, partition=i % 3)
        producer.flush()
        producer.close()
        yield servers, directory


def test_get_offsets_prints_kafkas_lines(cluster: tuple[str, Path]) -> None:
    servers, _ = cluster
    latest = rackwise("get-offsets", "--bootstrap-server", servers, "--topic", TOPIC)
    assert (latest.returncode, latest.stdout) == (0, "orders:0:10\norders:1:10\norders:2:10\n")
    some = rackwise(
        "get-offsets", "--bootstrap-server", servers, "--topic-partitions", "ord.*:1-",
        "--time", "earliest",
    )  # fmt: skip
    assert (some.returncode, some.stdout) == (0, "orders:1:0\norders:2:0\n")
    none = rackwise("get-offsets", "--bootstrap-server", servers, "--topic", "nothing")
    assert (none.returncode, none.stdout) == (1, "")
    assert none.stderr == (
        "Error occurred: Could not match any topic-partitions with the specified filters\n"
    )


def test_command_config_is_read_by_every_tool(
    cluster: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    servers, _ = cluster
    good, bad = tmp_path / "good.properties", tmp_path / "bad.properties"
    good.write_text("client.id=ops\nrequest.timeout.ms=5000\n")
    bad.write_text("sasl.kerberos.service.name=kafka\n")
    offsets = rackwise(
        "get-offsets", "--bootstrap-server", servers, "--topic", TOPIC, "--partitions", "0",
        "--command-config", str(good),
    )  # fmt: skip
    assert (offsets.returncode, offsets.stdout) == (0, "orders:0:10\n")
    extra = {
        "get-offsets": [],
        "delete-records": ["--offset-json-file", str(good)],
        "leader-election": ["--election-type", "preferred", "--all-topic-partitions"],
        "topics": ["--list"],
        "log-dirs": ["--describe"],
        "placement": ["--partitions", "1", "--replication-factor", "1"],
        "console-producer": ["--topic", TOPIC],
        "console-consumer": ["--topic", TOPIC],
        "configs": ["--entity-type", "topics", "--describe"],
        "consumer-groups": ["--list"],
    }
    for tool, arguments in extra.items():  # refused before connecting: run in process
        code = main([tool, "--bootstrap-server", servers, "--command-config", str(bad), *arguments])
        err = capsys.readouterr().err
        assert code == 1, tool
        assert (
            f"--command-config {bad}: not served: sasl.kerberos.service.name (rackwise {tool} "
            in (err)
        ), err
    quorum = main(["metadata-quorum", "--bootstrap-server", servers, "--command-config", str(bad),
                   "describe", "--status"])  # fmt: skip
    assert quorum == 1
    assert "(rackwise metadata-quorum reads only bootstrap.servers" in capsys.readouterr().err


def test_delete_records_prints_kafkas_lines(cluster: tuple[str, Path], tmp_path: Path) -> None:
    servers, _ = cluster
    plan = tmp_path / "offsets.json"
    partitions = [
        {"topic": TOPIC, "partition": 2, "offset": 4},
        {"topic": "missing", "partition": 0, "offset": 1},
    ]
    plan.write_text(json.dumps({"partitions": partitions, "version": 1}))
    deleted = rackwise(
        "delete-records", "--bootstrap-server", servers, "--offset-json-file", str(plan)
    )
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        # In the order of Kafka's HashMap of partitions.
        "partition: missing-0\terror: org.apache.kafka.common.errors."
        "UnknownTopicOrPartitionException: This server does not host this topic-partition.",
        "partition: orders-2\tlow_watermark: 4",
    ]
    earliest = rackwise(
        "get-offsets", "--bootstrap-server", servers, "--topic", TOPIC, "--partitions", "2",
        "--time", "-2",
    )  # fmt: skip
    assert earliest.stdout == "orders:2:4\n"
    plan.write_text('{"partitions": [{"topic": "t", "partition": 0, "offset": 1}] * 2}')
    refused = rackwise(
        "delete-records", "--bootstrap-server", servers, "--offset-json-file", str(plan)
    )
    assert (refused.returncode, refused.stderr) == (
        1,
        "error: The input string is not a valid JSON\n",
    )


def test_leader_election_prints_kafkas_lines(cluster: tuple[str, Path]) -> None:
    servers, _ = cluster
    elected = rackwise(
        "leader-election", "--bootstrap-server", servers, "--election-type", "preferred",
        "--topic", TOPIC, "--partition", "0",
    )  # fmt: skip
    assert (elected.returncode, elected.stdout) == (
        0,
        "Valid replica already elected for partitions orders-0\n",
    )
    failed = rackwise(
        "leader-election", "--bootstrap-server", servers, "--election-type", "UNCLEAN",
        "--topic", TOPIC, "--partition", "9",
    )  # fmt: skip
    assert failed.returncode == 1
    assert failed.stdout.startswith(
        "Error completing leader election (UNCLEAN) for partition: orders-9: "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
    )
    assert failed.stderr == "error: 1 replica(s) could not be elected\n"
    both = rackwise(
        "leader-election", "--bootstrap-server", servers, "--election-type", "preferred",
        "--topic", TOPIC, "--partition", "0", "--all-topic-partitions",
    )  # fmt: skip
    assert (both.returncode, both.stderr) == (
        1,
        "error: One and only one of the following options is required: topic, "
        "all-topic-partitions, path-to-json-file\n",
    )


def test_topics_describe_reports_min_isr_and_overrides(cluster: tuple[str, Path]) -> None:
    servers, _ = cluster

    def describe(*flags: str) -> list[str]:
        done = rackwise("topics", "--bootstrap-server", servers, "--describe", *flags)
        assert done.returncode == 0, done.stderr
        return [line.split("\tLeader")[0] for line in done.stdout.splitlines()]

    assert describe("--under-min-isr-partitions") == ["\tTopic: strict\tPartition: 0"]
    assert describe("--at-min-isr-partitions", "--topic", TOPIC) == [
        f"\tTopic: {TOPIC}\tPartition: {p}" for p in range(3)
    ]
    [overridden] = describe("--topics-with-overrides")
    assert overridden.startswith("Topic: strict\tTopicId: ")
    assert overridden.endswith("\tConfigs: min.insync.replicas=2")
    both = rackwise(
        "topics", "--bootstrap-server", servers, "--describe", "--topics-with-overrides",
        "--under-min-isr-partitions",
    )  # fmt: skip
    assert (both.returncode, both.stderr) == (
        1,
        'error: Option "[under-min-isr-partitions]" can\'t be used with option '
        '"[topics-with-overrides]"\n',
    )


def test_console_producer_and_consumer_round_trip_keys_and_headers(
    cluster: tuple[str, Path],
) -> None:
    servers, _ = cluster
    topic = "console"
    created = rackwise(
        "topics", "--bootstrap-server", servers, "--create", "--topic", topic,
        "--partitions", "1", "--replication-factor", "1",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    sent = console_producer(
        servers, topic, "h1:a,h2:b\tk1\tv1\n\tk2\tv2\n",
        "--property", "parse.key=true", "--property", "parse.headers=true",
        "--property", "headers.separator=,", "--property", "ignore.error=true",
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    read = rackwise(
        "console-consumer", "--bootstrap-server", servers, "--topic", topic,
        "--from-beginning", "--max-messages", "2", "--property", "print.key=true",
        "--property", "print.headers=true", "--property", "print.offset=true",
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    assert read.stdout == "Offset:0\th1:a,h2:b\tk1\tv1\nOffset:1\t:null\tk2\tv2\n"
    assert read.stderr.endswith("Processed a total of 2 messages\n")
    one = rackwise(
        "console-consumer", "--bootstrap-server", servers, "--topic", topic, "--partition",
        "0", "--offset", "1", "--timeout-ms", "1500",
    )  # fmt: skip
    assert (one.returncode, one.stdout) == (0, "v2\n")
    refused = console_producer(servers, topic, "k\tv\nnovalue\n", "--property", "parse.key=true")
    assert (refused.returncode, refused.stderr) == (
        1,
        "error: No key separator found on line number 2: 'novalue'\n",
    )


def test_console_consumer_refuses_as_kafka(cluster: tuple[str, Path]) -> None:
    servers, _ = cluster
    cases = {
        ("--topic", "t", "--include", "t.*"): "Exactly one of --include/--topic is required.",
        ("--topic", "t", "--offset", "3"): "The partition is required when offset is specified.",
        ("--topic", "t", "--partition", "0", "--offset", "-3"): (
            "The provided offset value '-3' is incorrect. Valid values are 'earliest', "
            "'latest', or a non-negative long."
        ),
        ("--topic", "t", "--partition", "0", "--group", "g"): (
            "Options group and partition cannot be specified together."
        ),
    }
    for flags, message in cases.items():
        done = rackwise("console-consumer", "--bootstrap-server", servers, *flags)
        assert (done.returncode, done.stderr) == (1, f"error: {message}\n"), flags


def test_console_producer_takes_kafkas_reader_and_producer_flags(
    cluster: tuple[str, Path], tmp_path: Path
) -> None:
    servers, _ = cluster
    topic = "console-flags"
    created = rackwise(
        "topics", "--bootstrap-server", servers, "--create", "--topic", topic,
        "--partitions", "1", "--replication-factor", "1",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    (tmp_path / "reader.properties").write_text("parse.key=true\nkey.separator=:\n")
    (tmp_path / "producer.properties").write_text("linger.ms=5\nclient.id=flags\n")
    sent = console_producer(
        servers, topic, "a=1\nb=2\n",
        "--reader-config", str(tmp_path / "reader.properties"),
        "--reader-property", "key.separator==",  # --property wins over the file
        "--producer.config", str(tmp_path / "producer.properties"),
        "--producer-property", "acks=1",
        "--line-reader", "org.apache.kafka.tools.LineMessageReader",
        "--batch-size", "100", "--message-send-max-retries", "2", "--retry-backoff-ms", "50",
        "--max-memory-bytes", "1048576", "--metadata-expiry-ms", "10000", "--sync",
        "--compression-codec", "--request-timeout-ms", "5000", "--max-block-ms", "1000",
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    from_file = console_producer(
        servers, topic, "c:3\nd=4\n", "--reader-config", str(tmp_path / "reader.properties")
    )
    assert (from_file.returncode, from_file.stderr) == (
        1, "error: No key separator found on line number 2: 'd=4'\n",
    )  # fmt: skip
    read = rackwise(
        "console-consumer", "--bootstrap-server", servers, "--topic", topic, "--from-beginning",
        "--max-messages", "3", "--formatter-property", "print.key=true",
    )  # fmt: skip
    assert (read.returncode, read.stdout) == (0, "a\t1\nb\t2\nc\t3\n"), read.stderr
    for flags, message in {
        ("--batch-size", "abc"): "Cannot parse argument 'abc' of option batch-size",
        ("--compression-codec", "brotli"): "Unknown compression codec: brotli",
        ("--line-reader", "kafka.tools.LineMessageReader"): (
            "java.lang.ClassNotFoundException: kafka.tools.LineMessageReader (the line reader "
            "is org.apache.kafka.tools.LineMessageReader)"
        ),
    }.items():
        refused = console_producer(servers, topic, "", *flags)
        assert (refused.returncode, refused.stderr) == (1, f"error: {message}\n"), flags


def test_console_consumer_formatters_deserializers_and_config_files(
    cluster: tuple[str, Path], tmp_path: Path
) -> None:
    from kafka import KafkaProducer

    servers, _ = cluster
    topic = "typed"
    created = rackwise(
        "topics", "--bootstrap-server", servers, "--create", "--topic", topic,
        "--partitions", "1", "--replication-factor", "1",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    producer = KafkaProducer(bootstrap_servers=servers)
    for key, value in ((b"\0\0\0\x07", b"\0" * 7 + b"\x09"), (b"abc", b"\0" * 8), (None, b"x")):
        producer.send(topic, key=key, value=value, timestamp_ms=1700000000000)
    producer.flush()
    producer.close()
    serde = "org.apache.kafka.common.serialization."
    (tmp_path / "formatter.properties").write_text("print.key=true\nprint.partition=true\n")
    base = ("console-consumer", "--bootstrap-server", servers, "--from-beginning", "--timeout-ms",
            "3000", "--formatter-config", str(tmp_path / "formatter.properties"))  # fmt: skip
    typed = rackwise(
        *base, "--include", "typ.*", "--key-deserializer", serde + "IntegerDeserializer",
        "--value-deserializer", serde + "LongDeserializer", "--skip-message-on-error",
    )  # fmt: skip
    assert typed.returncode == 0, typed.stderr
    assert typed.stdout == "Partition:0\t7\t9\n"  # the other two are not 4 and 8 bytes
    skipped = [line for line in typed.stderr.splitlines() if "skipping" in line]
    assert skipped == [
        "ERROR Error processing message, skipping this message: org.apache.kafka.common."
        "errors.SerializationException: Size of data received by IntegerDeserializer is not 4",
        "ERROR Error processing message, skipping this message: org.apache.kafka.common."
        "errors.SerializationException: Size of data received by LongDeserializer is not 8",
    ]
    assert typed.stderr.endswith("Processed a total of 3 messages\n")
    halted = rackwise(*base, "--topic", topic, "--key-deserializer", serde + "IntegerDeserializer")
    assert halted.returncode == 1
    assert halted.stderr.splitlines()[-2:] == [
        "Processed a total of 2 messages",
        "error: Unknown error when running consumer: org.apache.kafka.common.errors."
        "SerializationException: Size of data received by IntegerDeserializer is not 4",
    ]
    logged = rackwise(
        *base, "--topic", topic, "--formatter",
        "org.apache.kafka.tools.consumer.LoggingMessageFormatter", "--property", "print.key=false",
        "--property", "print.partition=false", "--max-messages", "1",
    )  # fmt: skip
    assert logged.stdout == "\x00\x00\x00\x00\x00\x00\x00\t\n"
    assert "INFO CreateTime:1700000000000, key:\x00\x00\x00\x07, value:" in logged.stderr
    (tmp_path / "consumer.properties").write_text("group.id=from-file\n")
    for flags, message in {
        ("--formatter", "kafka.tools.NoSuchFormatter"): (
            "java.lang.ClassNotFoundException: kafka.tools.NoSuchFormatter (formatters: "
            "org.apache.kafka.tools.consumer.DefaultMessageFormatter, org.apache.kafka.tools."
            "consumer.LoggingMessageFormatter, org.apache.kafka.tools.consumer."
            "NoOpMessageFormatter)"
        ),
        ("--consumer.config", str(tmp_path / "consumer.properties"), "--group", "g"): (
            "The group ids provided in different places (directly using '--group', via "
            "'--consumer-property', or via '--consumer.config') do not match. Detected group "
            "ids: 'from-file', 'g'"
        ),
        ("--max-messages", "many"): "Cannot parse argument 'many' of option max-messages",
    }.items():
        refused = rackwise("console-consumer", "--bootstrap-server", servers, "--topic", topic,
                           *flags)  # fmt: skip
        assert (refused.returncode, refused.stderr) == (1, f"error: {message}\n"), flags


def console_producer(servers: str, topic: str, text: str, *flags: str) -> Any:
    """``rackwise console-producer`` with ``text`` on its standard input."""
    return subprocess.run(
        [sys.executable, "-m", "rackwise", "console-producer", "--bootstrap-server", servers,
         "--topic", topic, *flags],
        input=text, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def test_dump_log_prints_a_brokers_segment_and_the_metadata_log(
    cluster: tuple[str, Path],
) -> None:
    _, directory = cluster
    [segment] = directory.glob(f"broker-*/data/{TOPIC}-1/00000000000000000000.log")
    index = segment.with_suffix(".index")
    dumped = rackwise("dump-log", "--files", f"{segment},{index}", "--print-data-log")
    assert dumped.returncode == 0, dumped.stderr
    lines = dumped.stdout.splitlines()
    assert lines[:2] == [f"Dumping {segment}", "Log starting offset: 0"]
    records = [line for line in lines if line.startswith("| offset: ")]
    assert len(records) == 10
    assert records[0].endswith(
        " keySize: 2 valueSize: 2 sequence: 0 headerKeys: [] key: k1 payload: v1"
    )
    assert all(
        " magic: 2 compresscodec: none " in line
        for line in lines
        if line.startswith("baseOffset: ")
    )
    assert f"Dumping {index}" in lines
    [metadata] = directory.glob("controller-*/metadata/00000000000000000000.log")
    decoded = rackwise("dump-log", "--files", str(metadata), "--cluster-metadata-decoder")
    assert decoded.returncode == 0, decoded.stderr
    assert "| offset: " in decoded.stdout
    assert '"type":"TOPIC_RECORD","version":0,"data":{"name":"orders",' in decoded.stdout
    # The metadata log's batches are Kafka's v2 batches, each epoch opened by a LeaderChange.
    batches = [line for line in decoded.stdout.splitlines() if line.startswith("baseOffset: ")]
    assert batches and all(" magic: 2 compresscodec: none " in line for line in batches)
    assert all(" isvalid: true" in line for line in batches)
    assert "controlType: LEADER_CHANGE(2)" in decoded.stdout
    unknown = rackwise("dump-log", "--files", str(directory / "cluster.json"))
    assert unknown.stderr == f"Ignoring unknown file {directory / 'cluster.json'}\n"


def test_dump_log_decodes_offsets_snapshots_and_checks_indexes(
    cluster: tuple[str, Path],
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    servers, directory = cluster
    created = rackwise(
        "topics", "--bootstrap-server", servers, "--create", "--topic", "rolled", "--partitions",
        "1", "--replication-factor", "1", "--config", "segment.bytes=300", "--config",
        "index.interval.bytes=0",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True})
    for batch in range(4):  # a batch of three records at a time: a segment rolls after each
        for i in range(3):
            producer.produce("rolled", key=b"k", value=b"v%d" % (batch * 3 + i))
        producer.flush(30)
    del producer
    consumer = Consumer({
        "bootstrap.servers": servers, "group.id": "dumped", "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })  # fmt: skip
    consumer.subscribe([TOPIC])
    while consumer.poll(0.5) is None or not consumer.assignment():
        pass
    consumer.commit(offsets=[TopicPartition(TOPIC, p, 10) for p in range(3)], asynchronous=False)
    consumer.close()
    [log] = directory.glob("broker-*/data/rolled-0")
    [snapshot, *_] = sorted(log.glob("*.snapshot"))
    dumped = rackwise("dump-log", "--files", str(snapshot))
    assert dumped.returncode == 0, dumped.stderr
    [line] = dumped.stdout.splitlines()[1:]
    last = int(snapshot.stem) - 1  # the snapshot holds the batches below its offset
    assert re.fullmatch(
        r"producerId: \d+ producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        rf"OptionalLong.empty lastTimestamp: (\d+) firstSequence: {last - 2} lastSequence: "
        rf"{last} lastOffset: {last} offsetDelta: 2 timestamp: \1",
        line,
    ), line
    index, times = (
        snapshot.with_name(f"00000000000000000000{s}") for s in (".index", ".timeindex")
    )
    checked = rackwise("dump-log", "--files", f"{index},{times}", "--verify-index-only")
    assert (checked.returncode, checked.stdout, checked.stderr) == (
        0, f"Dumping {index}\nDumping {times}\n", "",
    )  # fmt: skip
    sane = rackwise("dump-log", "--files", f"{index},{times}", "--index-sanity-check")
    assert sane.stdout.splitlines() == [
        f"Dumping {index}", f"{index} passed sanity check.",
        f"Dumping {times}", f"{times} passed sanity check.",
    ]  # fmt: skip
    segment = index.with_suffix(".log")
    bare = rackwise("dump-log", "--files", str(segment), "--skip-record-metadata",
                    "--print-data-log", "--max-bytes", "100000")  # fmt: skip
    assert bare.stdout.splitlines()[3:6] == ["| key: k payload: v0", "| key: k payload: v1",
                                             "| key: k payload: v2"]  # fmt: skip
    offsets = [p for p in directory.glob("broker-*/data/__consumer_offsets-*/0*.log")
               if p.stat().st_size]  # fmt: skip
    decoded = rackwise("dump-log", "--files", ",".join(map(str, offsets)), "--offsets-decoder")
    assert decoded.returncode == 0, decoded.stderr
    keys = re.findall(r" key: (\{.*?\}\}) payload: (.*)$", decoded.stdout, re.MULTILINE)
    commits = [(json.loads(k), json.loads(v)) for k, v in keys if '"type":"1"' in k]
    assert {c["data"]["partition"] for c, _ in commits} == {0, 1, 2}
    assert all(c["data"]["group"] == "dumped" and v["version"] == "3" for c, v in commits)
    assert {v["data"]["offset"] for _, v in commits} == {10}
    groups = [json.loads(v) for k, v in keys if k == '{"type":"2","data":{"group":"dumped"}}']
    joined = [g for g in groups if g["data"]["members"]]
    assert joined and joined[0]["data"]["protocolType"] == "consumer"
    assert joined[0]["data"]["members"][0]["subscription"]["topics"] == [TOPIC]
    refused = rackwise("dump-log", "--files", str(segment), "--transaction-log-decoder")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: --transaction-log-decoder: rackwise keeps no ")


def test_metadata_quorum_asks_a_controller_and_perf_test_takes_bootstrap_server(
    cluster: tuple[str, Path],
) -> None:
    servers, directory = cluster
    nodes = json.loads((directory / "cluster.json").read_text())["nodes"]
    [controller] = [f"{n['host']}:{n['port']}" for n in nodes if n["role"] == "controller"]
    table = rackwise(
        "metadata-quorum", "--bootstrap-controller", controller, "describe", "--replication"
    )
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == [
        "NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
        "LastCaughtUpTimestamp", "Status",
    ]  # fmt: skip
    assert table.stdout.splitlines()[1].split()[-1] == "Leader"
    status = rackwise(
        "metadata-quorum", "--bootstrap-controller", controller, "describe", "--status"
    )
    assert status.returncode == 0, status.stderr
    by_broker = rackwise("metadata-quorum", "--bootstrap-server", servers, "describe", "--status")
    assert by_broker.returncode == 0, by_broker.stderr
    # KIP-919: a controller answers DescribeCluster for the controllers, with the cluster's id.
    assert status.stdout.splitlines()[0] == by_broker.stdout.splitlines()[0]
    assert status.stdout.splitlines()[0].startswith("ClusterId:")
    perf = rackwise(
        "producer-perf-test", "--bootstrap-server", servers, "--topic", TOPIC,
        "--num-records", "20", "--record-size", "10", "--throughput", "-1",
    )  # fmt: skip
    assert perf.returncode == 0, perf.stderr
    assert perf.stdout.startswith("20 records sent, ")
