"""``rackwise cluster up --security ssl`` and ``--security sasl_plaintext`` for real (the
``sasl_ssl`` mode has :mod:`tests.cli.test_secured_cluster`): each writes a
``client.properties`` that a real client (confluent-kafka and kafka-python, given the same
settings in their own keys) and the ``rackwise`` commands (``--command-config``) use to produce,
consume in a group and administer the cluster; a PLAINTEXT client on the same port gets
nothing, the broker saying why in its log (a TLS record that is no TLS record; a request
before the SASL handshake, in Kafka's words) and serving the others meanwhile."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaAdminClient

from rackwise.formats.properties import parse_properties
from tests.command_line import rackwise

JAAS = re.compile(r'username="(?P<user>[^"]+)" password="(?P<password>[^"]+)"')


@dataclass(frozen=True)
class Up:
    mode: str
    directory: Path
    bootstrap: str
    stdout: str

    @property
    def client_properties(self) -> Path:
        return self.directory / "client.properties"

    @property
    def props(self) -> dict[str, str]:
        return dict(parse_properties(self.client_properties.read_text(encoding="utf-8")))

    @property
    def broker_log(self) -> str:
        return (self.directory / "broker-1" / "server.log").read_text(encoding="utf-8")

    def run(self, *args: str) -> tuple[int, str, str]:
        tool, *rest = args
        done = rackwise(tool, "--bootstrap-server", self.bootstrap,
                        "--command-config", str(self.client_properties), *rest)  # fmt: skip
        return done.returncode, done.stdout, done.stderr

    def librdkafka(self) -> dict[str, Any]:
        """client.properties in librdkafka's keys, as a person would write them."""
        props = self.props
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "security.protocol": props["security.protocol"],
        }
        if self.mode == "ssl":
            keystore = props["ssl.keystore.location"]
            config.update({"ssl.ca.location": props["ssl.truststore.location"],
                           "ssl.certificate.location": keystore, "ssl.key.location": keystore,
                           "ssl.key.password": props["ssl.key.password"]})  # fmt: skip
        else:
            login = JAAS.search(props["sasl.jaas.config"])
            assert login is not None
            config.update({"sasl.mechanism": props["sasl.mechanism"],
                           "sasl.username": login["user"],
                           "sasl.password": login["password"]})  # fmt: skip
        return config

    def kafka_python(self) -> dict[str, Any]:
        """client.properties in kafka-python's keywords."""
        config = self.librdkafka()
        options: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap,
            "security_protocol": config["security.protocol"],
        }
        if self.mode == "ssl":
            options.update({"ssl_cafile": config["ssl.ca.location"],
                            "ssl_certfile": config["ssl.certificate.location"],
                            "ssl_keyfile": config["ssl.key.location"],
                            "ssl_password": config["ssl.key.password"]})  # fmt: skip
        else:
            options.update({"sasl_mechanism": config["sasl.mechanism"],
                            "sasl_plain_username": config["sasl.username"],
                            "sasl_plain_password": config["sasl.password"]})  # fmt: skip
        return options


@pytest.fixture(scope="module", params=["ssl", "sasl_plaintext"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Up]:
    mode = request.param
    directory = tmp_path_factory.mktemp(mode) / "c"
    up = rackwise("cluster", "up", "--brokers", "1", "--security", mode,
                  "--dir", str(directory), timeout=180)  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        (bootstrap,) = re.findall(r"bootstrap servers: (\S+)", up.stdout)
        yield Up(mode, directory, bootstrap, up.stdout)
    finally:
        rackwise("cluster", "down", "--dir", str(directory), timeout=120)


def test_up_writes_the_modes_client_properties(cluster: Up) -> None:
    props = cluster.props
    if cluster.mode == "ssl":
        assert props["security.protocol"] == "SSL"
        assert props["ssl.keystore.type"] == "PEM"
        assert Path(props["ssl.keystore.location"]).is_file()
        assert Path(props["ssl.truststore.location"]).is_file()
        assert "sasl.mechanism" not in props
        how = "its certificate"
    else:
        assert props["security.protocol"] == "SASL_PLAINTEXT"
        assert props["sasl.mechanism"] == "SCRAM-SHA-512"
        assert JAAS.search(props["sasl.jaas.config"])
        assert not any(key.startswith("ssl.") for key in props)
        how = "SCRAM-SHA-512"
    assert cluster.client_properties.stat().st_mode & 0o077 == 0
    assert (
        f"security: {props['security.protocol']} on every listener, the StandardAuthorizer on; "
        f"User:admin (logging in with {how}) is a super user\n"
    ) in cluster.stdout


def test_the_commands_reach_the_cluster_with_command_config(cluster: Up) -> None:
    code, _, err = cluster.run("topics", "--create", "--topic", "orders", "--partitions", "2",
                               "--replication-factor", "1")  # fmt: skip
    assert code == 0, err
    code, out, err = cluster.run("topics", "--list")
    assert (code, out) == (0, "orders\n"), err
    code, out, err = cluster.run("acls", "--add", "--allow-principal", "User:bob",
                                 "--operation", "Read", "--topic", "orders")  # fmt: skip
    assert code == 0, err
    code, out, err = cluster.run("acls", "--list", "--topic", "orders")
    assert code == 0 and "principal=User:bob, host=*, operation=READ" in out, err
    code, out, err = cluster.run("producer-perf-test", "--topic", "orders", "--num-records",
                                 "20", "--record-size", "100", "--throughput", "-1")  # fmt: skip
    assert code == 0 and "20 records sent" in out, err


def test_a_real_client_produces_and_consumes_in_a_group(cluster: Up) -> None:
    config = cluster.librdkafka()
    producer = Producer(config)
    for i in range(10):
        producer.produce("in-group", f"m{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": "readers", "auto.offset.reset": "earliest"})
    consumer.subscribe(["in-group"])
    seen: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(seen) < 10 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                seen.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert seen == [f"m{i}".encode() for i in range(10)]
    admin = KafkaAdminClient(**cluster.kafka_python())
    try:
        assert "in-group" in admin.list_topics()
        offsets = admin.list_group_offsets("readers")["readers"]
        assert {tp.topic: o.offset for tp, o in offsets.items()} == {"in-group": 10}
    finally:
        admin.close()
    code, out, err = cluster.run("consumer-groups", "--describe", "--group", "readers")
    assert code == 0 and re.search(r"readers\s+in-group\s+0\s+10\s+10\s+0", out), err


def test_a_plaintext_client_on_the_port_gets_nothing(cluster: Up) -> None:
    settings = cluster.directory / "plaintext.properties"
    settings.write_text("security.protocol=PLAINTEXT\nrequest.timeout.ms=3000\n")
    plain = rackwise("topics", "--bootstrap-server", cluster.bootstrap, "--list",
                     "--command-config", str(settings))  # fmt: skip
    assert plain.returncode == 1 and plain.stdout == ""
    assert plain.stderr.count("\n") == 1 and plain.stderr.startswith("error: "), plain.stderr
    librdkafka_log = logging.getLogger(f"test.plaintext.{cluster.mode}")
    librdkafka_log.setLevel(logging.INFO)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    librdkafka_log.addHandler(handler)
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "error_cb": errors.append,
                         "logger": librdkafka_log})  # fmt: skip
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not errors:
        producer.poll(0.2)
    librdkafka_log.removeHandler(handler)
    assert errors and errors[0].code() == KafkaError._ALL_BROKERS_DOWN
    # Over TLS the broker closes the connection at the first bytes (no TLS record), while the
    # client waits for ApiVersions; over SASL it answers ApiVersions, then closes at Metadata.
    state = "APIVERSION_QUERY" if cluster.mode == "ssl" else "UP"
    assert any(
        re.search(rf"Disconnected: connection closed by peer.*in state {state}\)", r.getMessage())
        for r in records
    ), [r.getMessage() for r in records]
    log = cluster.broker_log
    if cluster.mode == "ssl":
        assert re.search(r"SSL: Failed authentication with 127\.0\.0\.1:\d+ \(SSL handshake "
                         r"failed: \[SSL: WRONG_VERSION_NUMBER\]", log)  # fmt: skip
    else:
        assert re.search(r"SASL_PLAINTEXT: closing the connection from 127\.0\.0\.1:\d+: "
                         r"Unexpected Kafka request of type METADATA during SASL handshake\.",
                         log)  # fmt: skip
    code, out, err = cluster.run("topics", "--list")  # the admin is served meanwhile
    assert code == 0 and "orders\n" in out, err
