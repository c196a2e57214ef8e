"""Real clients logging in over SASL_PLAINTEXT to a controller and a broker started for real:
kafka-python, confluent-kafka (librdkafka) and aiokafka with SCRAM-SHA-512 and PLAIN,
producing and consuming; a wrong password and an unknown user refused with the error each
client reports for Kafka; SCRAM credentials altered and described through confluent-kafka's
admin client; hostile peers (requests before the handshake, oversized tokens, absurd
iterations and nonces, half-open handshakes, a flood of failed logins) leaving the others
served in their usual time. The broker logs in to the controller with PLAIN."""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiokafka
import kafka
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka.net.compat import KafkaNetClient

from rackwise.common.error_codes import RESOURCE_NOT_FOUND, UNACCEPTABLE_CREDENTIAL
from tests.interop.sasl_cluster import SaslCluster, start_sasl_cluster
from tests.processes import free_port

SCRAM_FAILED = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-512"
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslCluster]:
    started = start_sasl_cluster(tmp_path_factory.mktemp("sasl"), (free_port(), free_port()))
    try:
        admin = AdminClient({"bootstrap.servers": started.plain_bootstrap})
        futures = admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(
                    "alice",
                    ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                    b"alice-secret",
                )
            ]
        )
        assert futures["alice"].result(timeout=30) is None
        yield started
    finally:
        started.stop()


def ck_config(cluster: SaslCluster, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.sasl_bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [("SCRAM-SHA-512", "alice", "alice-secret"), ("PLAIN", "bob", "bob-secret")],
)
def test_confluent_kafka_produces_and_consumes(
    cluster: SaslCluster, mechanism: str, user: str, password: str
) -> None:
    topic = f"ck-{mechanism.lower()}"
    config = ck_config(cluster, mechanism, user, password)
    producer = Producer(config)
    for i in range(10):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(seen) < 10 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                seen.append(message.value())
    finally:
        consumer.close()
    assert sorted(seen) == sorted(f"m{i}".encode() for i in range(10))


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("nobody", "x")])
def test_confluent_kafka_is_refused_as_kafka_refuses_it(
    cluster: SaslCluster, user: str, password: str
) -> None:
    errors: list[KafkaError] = []
    config = ck_config(cluster, "SCRAM-SHA-512", user, password)
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not any(
        e.code() == KafkaError._AUTHENTICATION for e in errors
    ):
        producer.poll(0.2)
    refused = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert refused and SCRAM_FAILED in refused[0].str()


def test_kafka_python_produces_and_consumes_with_scram(cluster: SaslCluster) -> None:
    options = {
        "bootstrap_servers": cluster.sasl_bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }
    producer = kafka.KafkaProducer(**options)
    try:
        for i in range(5):
            producer.send("kp-scram", f"v{i}".encode()).get(timeout=30)
    finally:
        producer.close()
    consumer = kafka.KafkaConsumer(
        "kp-scram", auto_offset_reset="earliest", consumer_timeout_ms=10_000, **options
    )
    try:
        values = [m.value for _, m in zip(range(5), consumer, strict=False)]
    finally:
        consumer.close()
    assert values == [f"v{i}".encode() for i in range(5)]


def test_kafka_python_reports_the_failed_login(
    cluster: SaslCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="kafka")
    made: list[KafkaNetClient] = []

    def client(**configs: Any) -> KafkaNetClient:
        made.append(KafkaNetClient(**configs))
        return made[-1]

    try:
        with pytest.raises(kafka.errors.KafkaTimeoutError):
            kafka.KafkaProducer(
                bootstrap_servers=cluster.sasl_bootstrap,
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="SCRAM-SHA-512",
                sasl_plain_username="alice",
                sasl_plain_password="wrong",
                max_block_ms=3000,
                bootstrap_timeout_ms=3000,  # kafka-python's default waits 30 s for the refusal
                kafka_client=client,
            )
    finally:  # a producer whose constructor raised leaves its client, and its sockets, open
        for made_client in made:
            made_client.close()
    assert any(SCRAM_FAILED in r.getMessage() for r in caplog.records)


def test_aiokafka_logs_in_and_is_refused(
    cluster: SaslCluster, caplog: pytest.LogCaptureFixture
) -> None:
    async def produce(user: str, password: str) -> None:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=cluster.sasl_bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username=user,
            sasl_plain_password=password,
        )
        try:
            await producer.start()
            await producer.send_and_wait("aio-scram", b"x")
        finally:
            await producer.stop()

    asyncio.run(produce("alice", "alice-secret"))
    caplog.set_level(logging.ERROR, logger="aiokafka")
    for user, password in (("alice", "wrong"), ("nobody", "x")):
        with pytest.raises(aiokafka.errors.KafkaConnectionError):
            asyncio.run(produce(user, password))
    refusals = [
        r.getMessage() for r in caplog.records if "SaslAuthenticationFailed" in r.getMessage()
    ]
    assert len(refusals) >= 2 and all(SCRAM_FAILED in m for m in refusals)


def test_credentials_are_altered_described_and_refused_as_kafka_does(cluster: SaslCluster) -> None:
    admin = AdminClient(ck_config(cluster, "SCRAM-SHA-512", "alice", "alice-secret"))
    described = admin.describe_user_scram_credentials(["alice"])["alice"].result(timeout=20)
    infos = described.scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_512, 8192)]
    absurd = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 16385), b"x"
            )
        ]
    )
    with pytest.raises(KafkaException) as too_many:
        absurd["carol"].result(timeout=20)
    assert too_many.value.args[0].code() == UNACCEPTABLE_CREDENTIAL
    missing = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("dave", ScramMechanism.SCRAM_SHA_512)]
    )
    with pytest.raises(KafkaException) as not_found:
        missing["dave"].result(timeout=20)
    assert not_found.value.args[0].code() == RESOURCE_NOT_FOUND


async def _raw(port: int, data: bytes, wait_s: float = 3.0) -> tuple[bytes, bool]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    received, closed = b"", False
    try:
        writer.write(data)
        await writer.drain()
        while True:
            chunk = await asyncio.wait_for(reader.read(65536), wait_s)
            if not chunk:
                closed = True
                break
            received += chunk
    except TimeoutError:
        pass
    except ConnectionResetError:  # closed while the rest of the frame was being sent
        closed = True
    finally:
        writer.close()
    return received, closed


def _frame(api_key: int, version: int, body: bytes) -> bytes:
    head = struct.pack(">hhih", api_key, version, 7, 3) + b"raw"
    return struct.pack(">i", len(head) + len(body)) + head + body


def test_hostile_peers_are_closed_and_the_others_served(cluster: SaslCluster) -> None:
    port = int(cluster.sasl_bootstrap.rpartition(":")[2])
    metadata_v1 = _frame(3, 1, struct.pack(">i", -1))
    oversized = _frame(17, 1, struct.pack(">h", 0) + b"\0" * 600_000)
    handshake = _frame(17, 1, struct.pack(">h", 13) + b"SCRAM-SHA-512")
    huge_nonce = b"n,,n=alice,r=" + b"x" * 100_000
    authenticate = _frame(36, 1, struct.pack(">i", len(huge_nonce)) + huge_nonce)

    async def scenario() -> tuple[list[tuple[bytes, bool]], float, float]:
        half_open = await asyncio.open_connection("127.0.0.1", port)
        half_open[1].write(struct.pack(">i", 1000)[:2])
        failures = [
            _raw(port, handshake + _frame(36, 1, struct.pack(">i", 10) + b"n,,n=x,r=y"))
            for _ in range(50)
        ]
        hostile = [
            _raw(port, metadata_v1),
            _raw(port, oversized),
            _raw(port, handshake + authenticate),
        ]
        began = time.monotonic()
        results = await asyncio.gather(*hostile, *failures)
        flood_s = time.monotonic() - began
        good = Producer(ck_config(cluster, "SCRAM-SHA-512", "alice", "alice-secret"))
        began = time.monotonic()
        good.produce("after-hostile", b"ok")
        assert await asyncio.to_thread(good.flush, 20) == 0
        half_open[1].close()
        return results, flood_s, time.monotonic() - began

    results, flood_s, good_s = asyncio.run(scenario())
    before, over, nonce = results[:3]
    assert before == (b"", True)  # a request before the handshake: closed unanswered
    assert over == (b"", True)  # a token over sasl.server.max.receive.size
    assert nonce[1]  # the absurd nonce: refused and closed
    assert all(closed for _, closed in results[3:])
    assert flood_s < 5 and good_s < 10
    assert cluster.broker.proc is not None and cluster.broker.proc.poll() is None
    log = Path(cluster.broker.directory / "stderr.log").read_text(encoding="utf-8")
    assert "more failed since the last line" in log or log.count("failed authentication") < 50
