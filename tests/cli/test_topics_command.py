"""``rackwise topics``: Kafka's checks with Kafka's words, its ``--describe`` layout, and the
one-line error when no broker answers. Against a running cluster: tests/interop."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid

import pytest

from rackwise.cli.errors import CommandError
from rackwise.cli.topics import DEFAULT_TIMEOUT_MS as TOPICS_DEFAULT_TIMEOUT_MS
from rackwise.cli.topics import (
    check_args,
    describe_lines,
    parse_configs,
    parse_replica_assignment,
    select_topics,
)
from rackwise.client.admin import DEFAULT_TIMEOUT_MS, PartitionDescription, TopicDescription
from rackwise.cluster.local import free_ports


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rackwise.cli.main", "topics", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def _args(**given: object) -> argparse.Namespace:
    values: dict[str, object] = {
        "bootstrap_server": "127.0.0.1:9092",
        "topic": None,
        "partitions": None,
        "replication_factor": None,
        "replica_assignment": None,
        "config": None,
        "if_exists": False,
        "if_not_exists": False,
        "exclude_internal": False,
        "under_replicated_partitions": False,
        "unavailable_partitions": False,
        "under_min_isr_partitions": False,
        "at_min_isr_partitions": False,
        "topics_with_overrides": False,
    }
    values.update({a: False for a in ("create", "list", "alter", "describe", "delete")})
    values.update(given)
    return argparse.Namespace(**values)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({}, "Command must include exactly one action: --list, --describe, --create, --alter"),
        ({"list": True, "describe": True}, "exactly one action"),
        ({"list": True, "bootstrap_server": None}, "--bootstrap-server must be specified"),
        ({"create": True}, 'Missing required argument "[topic]"'),
        ({"alter": True, "topic": "t"}, 'Missing required argument "[partitions]"'),
        (
            {"describe": True, "replication_factor": 3},
            'Option "[replication-factor]" can\'t be used with option "[describe]"',
        ),
        (
            {"create": True, "topic": "t", "replica_assignment": "1:2", "partitions": 1},
            'Option "[replica-assignment]" can\'t be used with option "[partitions]"',
        ),
        (
            {"alter": True, "topic": "t", "partitions": 3, "config": ["a=b"]},
            'Option "[config]" can\'t be used with option "[alter]"',
        ),
    ],
)
def test_kafkas_checks_of_the_options(given: dict[str, object], message: str) -> None:
    with pytest.raises(CommandError) as caught:
        check_args(_args(**given))
    assert message in str(caught.value)


def test_a_valid_combination_names_its_action() -> None:
    assert check_args(_args(create=True, topic="t", partitions=3, replication_factor=2)) == "create"
    assert check_args(_args(describe=True)) == "describe"


def test_replica_assignment_as_kafka_parses_it() -> None:
    assert parse_replica_assignment("1:2, 2:3,3 :1") == {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    with pytest.raises(CommandError, match="may not contain duplicate entries: 2"):
        parse_replica_assignment("1:2:2")
    with pytest.raises(CommandError, match=r"Partition 1 has different replication factor: \[3\]"):
        parse_replica_assignment("1:2,3")
    with pytest.raises(CommandError, match='For input string: "x"'):
        parse_replica_assignment("1:x")


def test_configs_as_kafka_parses_them() -> None:
    assert parse_configs(["cleanup.policy = compact", "retention.ms=1"]) == {
        "cleanup.policy": "compact",
        "retention.ms": "1",
    }
    with pytest.raises(CommandError, match='must be in the format "key=val"'):
        parse_configs(["a=b=c"])


def test_topic_filter_is_a_whole_match_include_list() -> None:
    names = ["orders", "orders-eu", "__consumer_offsets", "payments"]
    assert select_topics(names, "orders", exclude_internal=False) == ["orders"]
    assert select_topics(names, "orders.*", exclude_internal=False) == ["orders", "orders-eu"]
    assert select_topics(names, "'payments,orders'", exclude_internal=False) == [
        "orders",
        "payments",
    ]
    assert select_topics(names, None, exclude_internal=True) == ["orders", "orders-eu", "payments"]


def test_describe_lines_are_kafkas_layout() -> None:
    topic = TopicDescription(
        "orders",
        uuid.UUID("5e0a8d1b-2c3d-4e5f-8a9b-0c1d2e3f4a5b"),
        False,
        (
            PartitionDescription(0, 1, (1, 2, 3), (1, 2, 3)),
            PartitionDescription(1, None, (2, 3, 1), (3,)),
        ),
    )
    assert describe_lines(topic, {"cleanup.policy": "compact", "retention.ms": "5"}) == [
        "Topic: orders\tTopicId: XgqNGyw9Tl-KmwwdLj9KWw\tPartitionCount: 2\tReplicationFactor: 3"
        "\tConfigs: cleanup.policy=compact,retention.ms=5",
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: "
        "\tLastKnownElr: ",
        "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 2,3,1\tIsr: 3\tElr: "
        "\tLastKnownElr: ",
    ]
    only_under = describe_lines(
        topic, {}, with_topic_line=False, partition_filter=lambda p: len(p.isr) < len(p.replicas)
    )
    assert [line.split("\t")[2] for line in only_under] == ["Partition: 1"]


def test_errors_are_one_line_before_any_connection() -> None:
    result = _run(
        "--bootstrap-server", "127.0.0.1:1", "--create", "--topic", "t", "--replication-factor", "0"
    )
    assert result.returncode == 1
    assert result.stderr == (
        "error: The replication factor must be between 1 and 32767 inclusive\n"
    )
    result = _run(
        "--bootstrap-server", "127.0.0.1:1", "--create", "--topic", "t", "--partitions", "0"
    )
    assert result.stderr == "error: The partitions must be greater than 0\n"


def test_no_broker_is_one_line_naming_the_address() -> None:
    [port] = free_ports(1)
    result = _run("--bootstrap-server", f"127.0.0.1:{port}", "--list")
    assert result.returncode == 1
    assert result.stderr == f"error: Connection to 127.0.0.1:{port} refused\n"
    assert result.stdout == ""


def test_a_bootstrap_server_without_a_port_is_refused_at_once() -> None:
    started = time.monotonic()
    result = _run("--bootstrap-server", "localhost", "--list")
    assert result.returncode == 1
    assert result.stderr == "error: Invalid url in bootstrap.servers: localhost\n"
    assert time.monotonic() - started < 10  # not the admin client's 30 s wait
    placement = subprocess.run(
        [
            *(sys.executable, "-m", "rackwise.cli.main", "placement"),
            *("--bootstrap-server", "127.0.0.1:9092,localhost"),
            *("--partitions", "1", "--replication-factor", "1"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=10,
    )
    assert placement.stderr == "error: Invalid url in bootstrap.servers: localhost\n"


def test_help_loads_neither_the_admin_client_nor_the_wire_protocol() -> None:
    code = (
        "import sys, rackwise.cli.main as m\n"
        "try:\n    m.main(['topics', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(n for n in sys.modules if n.startswith(('kio', 'kafka', 'rackwise.client'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
    assert (
        TOPICS_DEFAULT_TIMEOUT_MS == DEFAULT_TIMEOUT_MS
    )  # the default --help shows is the client's
