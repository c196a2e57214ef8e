"""``rackwise cluster up --security sasl_ssl`` for real, and the commands reaching it through
the ``client.properties`` it writes: the admin logs in with SCRAM-SHA-512 (its credential stored
by ``up``), the nodes with PLAIN as ``User:broker``, the authorizer on; ``topics``, ``configs``,
``acls``, ``log-dirs`` and ``reassign --verify`` all run with ``--command-config``; a client
without it and a user without ACLs get nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer

from rackwise.formats.properties import parse_properties
from tests.command_line import rackwise


@dataclass(frozen=True)
class Up:
    directory: Path
    bootstrap: str
    stdout: str

    @property
    def client_properties(self) -> Path:
        return self.directory / "client.properties"

    def run(self, *args: str) -> tuple[int, str, str]:
        tool, *rest = args
        done = rackwise(tool, "--bootstrap-server", self.bootstrap,
                        "--command-config", str(self.client_properties), *rest)  # fmt: skip
        return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    directory = tmp_path_factory.mktemp("secured") / "c"
    up = rackwise("cluster", "up", "--brokers", "2", "--security", "sasl_ssl",
                  "--dir", str(directory), timeout=180)  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        (bootstrap,) = re.findall(r"bootstrap servers: (\S+)", up.stdout)
        yield Up(directory, bootstrap, up.stdout)
    finally:
        rackwise("cluster", "down", "--dir", str(directory), timeout=120)


def test_up_writes_the_admins_client_properties_and_says_how_to_use_them(cluster: Up) -> None:
    props = parse_properties(cluster.client_properties.read_text(encoding="utf-8"))
    assert props["security.protocol"] == "SASL_SSL"
    assert props["sasl.mechanism"] == "SCRAM-SHA-512"
    assert re.fullmatch(
        r"org\.apache\.kafka\.common\.security\.scram\.ScramLoginModule required "
        r'username="admin" password="[^"]+";',
        props["sasl.jaas.config"],
    )
    assert Path(props["ssl.truststore.location"]).is_file()
    assert cluster.client_properties.stat().st_mode & 0o077 == 0
    assert (
        "security: SASL_SSL on every listener, the StandardAuthorizer on; User:admin "
        "(logging in with SCRAM-SHA-512) is a super user\n"
    ) in cluster.stdout
    assert (
        f"  rackwise topics --bootstrap-server {cluster.bootstrap} --command-config "
        f"{cluster.client_properties} --list\n"
    ) in cluster.stdout


def test_the_commands_reach_the_cluster_with_command_config(cluster: Up) -> None:
    code, out, err = cluster.run("topics", "--create", "--topic", "secured", "--partitions", "2",
                                 "--replication-factor", "2")  # fmt: skip
    assert code == 0, err
    code, out, err = cluster.run("topics", "--list")
    assert (code, out) == (0, "secured\n"), err
    code, out, err = cluster.run("configs", "--entity-type", "topics", "--entity-name", "secured",
                                 "--describe")  # fmt: skip
    assert (code, out) == (0, "Dynamic configs for topic secured are:\n"), err
    code, out, err = cluster.run("acls", "--add", "--allow-principal", "User:bob",
                                 "--operation", "Read", "--topic", "secured")  # fmt: skip
    assert code == 0, err
    code, out, err = cluster.run("acls", "--list", "--topic", "secured")
    assert code == 0 and "principal=User:bob, host=*, operation=READ" in out, err
    code, out, err = cluster.run("log-dirs", "--describe", "--topic-list", "secured")
    assert code == 0, err
    described = json.loads(out.splitlines()[-1])
    assert sorted(b["broker"] for b in described["brokers"]) == [1, 2]
    plan = cluster.directory / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "secured", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}
    ]}))  # fmt: skip
    code, out, err = cluster.run("reassign", "--reassignment-json-file", str(plan), "--verify")
    assert code == 0 and out.startswith("Status of partition reassignment:\n"), err


def test_the_librdkafka_tools_take_the_same_client_properties(cluster: Up) -> None:
    code, out, err = cluster.run("producer-perf-test", "--topic", "perf", "--num-records", "50",
                                 "--record-size", "100", "--throughput", "-1")  # fmt: skip
    assert code == 0 and "50 records sent" in out, err
    code, out, err = cluster.run("console-consumer", "--topic", "perf", "--from-beginning",
                                 "--max-messages", "3", "--timeout-ms", "20000")  # fmt: skip
    assert code == 0 and len(out.splitlines()) == 3, err
    assert "Processed a total of 3 messages" in err


def test_configs_alters_and_describes_scram_credentials_as_kafka_configs_does(
    cluster: Up,
) -> None:
    users = ("configs", "--entity-type", "users")
    alice = "SCRAM-SHA-512=[iterations=8192,password=alice-secret]"
    code, out, err = cluster.run(*users, "--entity-name", "alice", "--alter", "--add-config", alice)
    assert (code, out) == (0, "Completed updating config for user alice.\n"), err
    code, out, err = cluster.run(*users, "--entity-name", "alice", "--describe")
    assert out == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=8192\n"
    ), err
    code, out, err = cluster.run(*users, "--describe")  # every user: up made the admin's
    assert "SCRAM credential configs for user-principal 'admin' are SCRAM-SHA-512=" in out
    # alice logs in with what was set: the producer is refused for want of ACLs, not its login
    props = parse_properties(cluster.client_properties.read_text(encoding="utf-8"))
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "security.protocol": "SASL_SSL",
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
                         "sasl.password": "alice-secret", "message.timeout.ms": 8000,
                         "ssl.ca.location": props["ssl.truststore.location"]})  # fmt: skip
    errors: list[KafkaError] = []
    producer.produce("secured", b"x", on_delivery=lambda e, _m: errors.append(e))
    producer.flush(15)
    assert errors and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    too_many = "SCRAM-SHA-256=[iterations=20000,password=x]"
    code, out, err = cluster.run(*users, "--entity-name", "alice", "--alter", "--add-config",
                                 too_many)  # fmt: skip
    assert code == 1 and err.strip().endswith(
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
        "UnacceptableCredentialException: Too many iterations"
    ), err
    code, out, err = cluster.run(*users, "--entity-name", "alice", "--alter", "--delete-config",
                                 "SCRAM-SHA-512")  # fmt: skip
    assert (code, out) == (0, "Completed updating config for user alice.\n"), err
    code, out, err = cluster.run(*users, "--entity-name", "alice", "--describe")
    assert out == (
        "Error retrieving SCRAM credential configs for user-principal 'alice': "
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
        "ResourceNotFoundException: Attempt to describe a user credential that does not "
        "exist: alice\n"
    ), err


def test_without_the_admins_settings_nothing_gets_in(cluster: Up) -> None:
    settings = cluster.directory / "plaintext.properties"
    settings.write_text("security.protocol=PLAINTEXT\nrequest.timeout.ms=3000\n")
    plain = rackwise("topics", "--bootstrap-server", cluster.bootstrap, "--list",
                     "--command-config", str(settings))  # fmt: skip
    assert plain.returncode == 1 and plain.stdout == ""
    props = parse_properties(cluster.client_properties.read_text(encoding="utf-8"))
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "admin",
            "sasl.password": "not-the-password",
            "ssl.ca.location": props["ssl.truststore.location"],
            "message.timeout.ms": 5000,
        }
    )
    errors: list[KafkaError] = []
    producer.produce("secured", b"x", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(10)
    assert errors and errors[0] is not None
