"""Certificates the TLS listener refuses, with real clients over SSL and client certificates
required (``rackwise cluster up --security ssl``): an expired client certificate (signed by
the cluster's CA, its ``not_valid_after`` past), a client certificate signed by another CA,
and a client that does not trust the broker's certificate. kafka-python, confluent-kafka
(librdkafka) and aiokafka are each refused with the error they report for a broker that
will not have them; the broker counts each failed handshake in its
``failed_authentication_total`` metric, logs OpenSSL's reason, and answers the admin's
producer normally while the refused client keeps retrying.

The certificates are made here with ``cryptography``. The broker's refusal of a client
certificate reaches the client as a closed connection: Kafka's broker flushes its TLS alert
before closing (``SslTransportLayer.handshakeFailure``), asyncio's and uvloop's TLS protocols
drop it with the failed handshake. aiokafka, on asyncio's TLS, drops its own alert the same way
when it refuses the broker, which then sees a peer gone mid-handshake: neither counted nor
logged."""

from __future__ import annotations

import asyncio
import datetime
import gc
import logging
import re
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiokafka
import kafka
import pytest
from confluent_kafka import KafkaError, Producer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kafka.net.compat import KafkaNetClient

from rackwise.formats.properties import parse_properties
from tests.command_line import rackwise

DAY = datetime.timedelta(days=1)
REFUSAL_WINDOW_S = 3.0
"""How long each refused client keeps trying."""
FAILED_METRIC = re.escape(
    'kafka_server_socket_server_metrics_failed_authentication_total{listener="SSL"}'
)
SERVER_REASONS = {
    "expired": "certificate verify failed: certificate has expired",
    "untrusted-client": "certificate verify failed: unable to get local issuer certificate",
    "untrusted-server": "tlsv1 alert unknown ca",  # the client's alert
}


@dataclass(frozen=True)
class Case:
    """What a client presents (``pem``: key and certificate) and trusts (``ca``)."""

    pem: Path
    ca: Path


@dataclass(frozen=True)
class Secured:
    directory: Path
    bootstrap: str
    cases: dict[str, Case]
    good: Producer
    """The admin's producer (its certificate from ``client.properties``), connected."""
    metrics: str
    """The broker's ``/metrics`` address."""

    def failed_authentications(self) -> int:
        """The broker's count for its SSL listener, scraped."""
        with urllib.request.urlopen(self.metrics, timeout=10) as response:
            text = response.read().decode()
        (count,) = re.findall(FAILED_METRIC + r" (\S+)", text)
        return int(float(count))

    def logged(self, reason: str) -> bool:
        """Whether the broker's log gives a failed handshake for OpenSSL's ``reason`` (the first
        of each reason is logged; more within 10 s are counted in the next line)."""
        log = (self.directory / "broker-1" / "server.log").read_text(encoding="utf-8")
        pattern = r"SSL: Failed authentication with 127\.0\.0\.1:\d+ \(SSL handshake failed: .*"
        return re.search(pattern + re.escape(reason), log) is not None


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(
    subject: str,
    issuer: x509.Certificate | None,
    issuer_key: ec.EllipticCurvePrivateKey | None,
    valid: tuple[datetime.datetime, datetime.datetime],
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A new key and its certificate for ``subject``: a client's signed by ``issuer``, or
    (``issuer`` None) a CA's signed by its own key."""
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(subject) if issuer is None else issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if issuer is not None:
        usage = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH])
        builder = builder.add_extension(usage, critical=False)
    return builder.sign(issuer_key or key, hashes.SHA256()), key


def _write_pem(path: Path, certificate: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Path:
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.write_bytes(key_pem + certificate.public_bytes(serialization.Encoding.PEM))
    return path


def make_cases(cluster_dir: Path, admin_pem: Path, directory: Path) -> dict[str, Case]:
    """The three refused clients' files, their certificates made with ``cryptography``."""
    tls = cluster_dir / "tls"
    cluster_ca = tls / "ca.pem"
    ca_certificate = x509.load_pem_x509_certificate(cluster_ca.read_bytes())
    ca_key = serialization.load_pem_private_key((tls / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    now = datetime.datetime.now(datetime.UTC)
    expired = _certificate("alice", ca_certificate, ca_key, (now - 30 * DAY, now - DAY))
    other_ca, other_key = _certificate("another CA", None, None, (now - DAY, now + DAY))
    stranger = _certificate("mallory", other_ca, other_key, (now - DAY, now + DAY))
    other_ca_pem = directory / "other-ca.pem"
    other_ca_pem.write_bytes(other_ca.public_bytes(serialization.Encoding.PEM))
    return {
        "expired": Case(_write_pem(directory / "expired.pem", *expired), cluster_ca),
        "untrusted-client": Case(_write_pem(directory / "stranger.pem", *stranger), cluster_ca),
        "untrusted-server": Case(admin_pem, other_ca_pem),
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    directory = tmp_path_factory.mktemp("certificates")
    cluster_dir = directory / "c"
    up = rackwise("cluster", "up", "--brokers", "1", "--security", "ssl",
                  "--override", "metrics.http.port=0",
                  "--dir", str(cluster_dir), timeout=180)  # fmt: skip
    good: Producer | None = None
    try:
        assert up.returncode == 0, up.stderr
        (bootstrap,) = re.findall(r"bootstrap servers: (\S+)", up.stdout)
        props = parse_properties((cluster_dir / "client.properties").read_text(encoding="utf-8"))
        admin_pem = directory / "admin.pem"  # the admin's key, decrypted for every client
        key_and_certificate = Path(props["ssl.keystore.location"]).read_bytes()
        key = serialization.load_pem_private_key(
            key_and_certificate, props["ssl.key.password"].encode()
        )
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        _write_pem(admin_pem, x509.load_pem_x509_certificate(key_and_certificate), key)
        cases = make_cases(cluster_dir, admin_pem, directory)
        good = Producer({"bootstrap.servers": bootstrap, "security.protocol": "SSL",
                         "ssl.ca.location": props["ssl.truststore.location"],
                         "ssl.certificate.location": str(admin_pem),
                         "ssl.key.location": str(admin_pem)})  # fmt: skip
        good.produce("served", b"warm-up")
        assert good.flush(30) == 0
        broker_log = (cluster_dir / "broker-1" / "server.log").read_text(encoding="utf-8")
        (metrics,) = re.findall(r"metrics served on (http://\S+/metrics)", broker_log)
        yield Secured(cluster_dir, bootstrap, cases, good, metrics)
    finally:  # a failed test's traceback holds the producer: closed here, not at exit
        if good is not None:
            good.close()
        rackwise("cluster", "down", "--dir", str(cluster_dir), timeout=120)


def _confluent_kafka(cluster: Secured, case: Case) -> list[str]:
    logger = logging.getLogger("test.certificates.librdkafka")
    logger.setLevel(logging.INFO)
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "security.protocol": "SSL",
                         "ssl.ca.location": str(case.ca),
                         "ssl.certificate.location": str(case.pem),
                         "ssl.key.location": str(case.pem), "error_cb": errors.append,
                         "logger": logger})  # fmt: skip
    deadline = time.monotonic() + REFUSAL_WINDOW_S
    while time.monotonic() < deadline:
        producer.poll(0.1)
    return [f"{e.name()}: {e.str()}" for e in errors]


def _kafka_python(cluster: Secured, case: Case) -> list[str]:
    made: list[KafkaNetClient] = []

    def client(**configs: Any) -> KafkaNetClient:
        made.append(KafkaNetClient(**configs))
        return made[-1]

    window_ms = int(REFUSAL_WINDOW_S * 1000)
    try:
        kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap, security_protocol="SSL",
                            ssl_cafile=str(case.ca), ssl_certfile=str(case.pem),
                            ssl_keyfile=str(case.pem), max_block_ms=window_ms,
                            bootstrap_timeout_ms=window_ms, kafka_client=client)  # fmt: skip
    except kafka.errors.KafkaTimeoutError as e:
        return [f"{type(e).__name__}: {e}"]
    finally:  # a producer whose constructor raised leaves its client, and its sockets, open
        for made_client in made:
            made_client.close()
    return []


def _aiokafka(cluster: Secured, case: Case) -> list[str]:
    """aiokafka gives up at once: it is started again until the window ends, as an
    application retrying would."""
    context = ssl.create_default_context(cafile=str(case.ca))
    context.load_cert_chain(str(case.pem))

    async def produce() -> None:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap,
            security_protocol="SSL",
            ssl_context=context,
            request_timeout_ms=int(REFUSAL_WINDOW_S * 1000),
        )
        try:
            await producer.start()
        finally:
            await producer.stop()

    errors: list[str] = []
    deadline = time.monotonic() + REFUSAL_WINDOW_S
    while time.monotonic() < deadline:
        try:
            asyncio.run(produce())
        except aiokafka.errors.KafkaConnectionError as e:
            errors.append(f"{type(e).__name__}: {e}")
        time.sleep(0.2)
    gc.collect()  # the sockets aiokafka leaves behind a failed handshake, in this test
    return errors


CLIENTS: dict[str, Callable[[Secured, Case], list[str]]] = {
    "confluent-kafka": _confluent_kafka,
    "kafka-python": _kafka_python,
    "aiokafka": _aiokafka,
}
REFUSED = {
    # librdkafka reads its broker counts again after the re-bootstrap it starts has reset them,
    # so one broker may be reported as "1/1" or "0/2" brokers down.
    "confluent-kafka": r"_ALL_BROKERS_DOWN: \d+/\d+ brokers are down",
    "kafka-python": r"KafkaTimeoutError: KafkaTimeoutError: Unable to bootstrap from 127\.0\.0\.1",
    "aiokafka": r"KafkaConnectionError: KafkaConnectionError: Unable to bootstrap from",
}
"""What each client raises or reports when no broker will have it."""
UNTRUSTED_SERVER = {
    "confluent-kafka": (
        r"_SSL: ssl://127\.0\.0\.1:\d+/bootstrap: SSL handshake failed: error:0A000086:SSL "
        r"routines::certificate verify failed: broker certificate could not be verified"
    ),
    "kafka-python": r"\[SSL: CERTIFICATE_VERIFY_FAILED\] certificate verify failed",
    "aiokafka": r"\[SSL: CERTIFICATE_VERIFY_FAILED\] certificate verify failed",
}
"""The client's own verdict on the broker's certificate (a reported error or a log line)."""
CLOSED = {
    "confluent-kafka": r"Disconnected: SSL connection closed by peer",
    "kafka-python": r"socket disconnected",
    "aiokafka": r"Unable connect to \"127\.0\.0\.1:\d+\": KafkaConnectionError: Connection at",
}
"""What the client logs when the broker closes the connection over its certificate."""


def _eventually(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("case", list(SERVER_REASONS))
@pytest.mark.parametrize(
    "client",
    [
        "confluent-kafka",
        "kafka-python",
        pytest.param(  # aiokafka leaves the socket of a failed TLS handshake unclosed
            "aiokafka",
            marks=pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
        ),
    ],
)
def test_a_refused_certificate_is_refused_counted_and_the_others_served(
    cluster: Secured, client: str, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    reason = SERVER_REASONS[case]
    before = cluster.failed_authentications()
    reported: list[str] = []
    refused = threading.Thread(
        target=lambda: reported.extend(CLIENTS[client](cluster, cluster.cases[case]))
    )
    refused.start()
    # asyncio's TLS drops the client's alert too: aiokafka's refusal of the broker reaches the
    # broker as a peer gone mid-handshake, neither counted nor logged (a port probe looks the
    # same).
    counted = not (client == "aiokafka" and case == "untrusted-server")

    def refusing() -> bool:
        if counted:
            return cluster.failed_authentications() > before and cluster.logged(reason)
        return any(re.search(UNTRUSTED_SERVER[client], r.getMessage()) for r in caplog.records)

    try:  # once the refusal is seen, the admin is served while the client retries
        assert _eventually(refusing)
        began = time.monotonic()
        cluster.good.produce("served", f"{client} {case}".encode())
        assert cluster.good.flush(10) == 0
        served_s = time.monotonic() - began
        still_refused = refused.is_alive()
    finally:
        refused.join(30)
    assert still_refused and served_s < 2.0
    text = "\n".join(reported + [r.getMessage() for r in caplog.records])
    if case == "untrusted-server":
        assert re.search(UNTRUSTED_SERVER[client], text), text
    else:
        assert re.search(CLOSED[client], text), text
    if client != "confluent-kafka" or case != "untrusted-server":
        assert any(re.search(REFUSED[client], r) for r in reported), reported
