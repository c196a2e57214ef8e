"""The authorizer behind SASL_SSL, in real processes: a controller and a broker whose every
listener is SASL_SSL, the nodes logging in to each other with PLAIN as ``User:broker`` (the one
super user), ``User:alice`` with SCRAM-SHA-512 credentials made through confluent-kafka's admin
client. Alice, authenticated but without ACLs, gets Kafka's authorization errors and nothing
else; a prefixed ALLOW and a literal DENY then hold as Kafka's authorizer holds them. On the
controller listener, ``User:mallory`` (logged in with PLAIN, no ACL) cannot register a broker,
heartbeat or send Raft traffic: CLUSTER_AUTHORIZATION_FAILED, and nothing changes."""

from __future__ import annotations

import ssl
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ResourcePattern,
)
from kafka.admin import NewTopic as PyNewTopic
from kafka.admin import ResourceType as PyResourceType
from kafka.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)

from rackwise.cluster.certificates import Authority, ensure_ca, save_ca, write_node_keystore
from rackwise.common.error_codes import CLUSTER_AUTHORIZATION_FAILED
from rackwise.net import KafkaConnection, SaslLogin, set_login
from rackwise.net.sasl_client import clear_logins
from rackwise.protocol import ApiKey
from tests.interop.sasl_cluster import Node
from tests.processes import run

AUTHORIZER: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PASSWORD: Final = "store-pw"
JAAS: Final = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="broker" password="broker-secret" user_broker="broker-secret" '
    'user_mallory="mallory-secret";'
)
T = TypeVar("T")


def eventually(probe: Callable[[], T | None], timeout_s: float = 20.0) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        answer = probe()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"still {answer!r} after {timeout_s} s")
        time.sleep(0.1)


@dataclass
class Secured:
    ca: Authority
    controller: Node
    broker: Node

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker.ports['SASL_SSL']}"

    @property
    def controller_port(self) -> int:
        return self.controller.ports["CONTROLLER"]

    def client(self, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> dict[str, Any]:
        """librdkafka's settings for ``user``."""
        return {
            "bootstrap.servers": self.bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
            "ssl.ca.location": str(self.ca.pem_path),
        }

    def python_client(self, user: str, password: str) -> dict[str, Any]:
        """kafka-python's settings for ``user`` (SCRAM-SHA-512)."""
        return {
            "bootstrap_servers": self.bootstrap,
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": user,
            "sasl_plain_password": password,
            "ssl_context": ssl.create_default_context(cafile=str(self.ca.pem_path)),
        }


def node_tls(ca: Authority, directory: Path, name: str) -> dict[str, str]:
    keystore = directory / f"{name}.p12"
    write_node_keystore(ca, keystore, name, PASSWORD)
    return {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(keystore),
        "ssl.keystore.password": PASSWORD,
        "ssl.key.password": PASSWORD,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.pem_path),
        "authorizer.class.name": AUTHORIZER,
        "super.users": "User:broker",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": JAAS,
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    directory = tmp_path_factory.mktemp("sasl-ssl")
    ca = ensure_ca(directory)
    save_ca(ca)
    controller = Node(
        "controller",
        directory / "controller",
        {
            "node.id": "1",
            "process.roles": "controller",
            "listeners": "CONTROLLER://127.0.0.1:0",
            "listener.security.protocol.map": "CONTROLLER:SASL_SSL",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": "1@127.0.0.1:0",
            "metadata.log.dir": str(directory / "controller" / "meta"),
            **node_tls(ca, directory, "controller-1"),
        },
    )
    controller.start()
    broker = Node(
        "broker",
        directory / "broker",
        {
            "node.id": "2",
            "process.roles": "broker",
            "listeners": "SASL_SSL://127.0.0.1:0",
            "listener.security.protocol.map": "CONTROLLER:SASL_SSL,SASL_SSL:SASL_SSL",
            "inter.broker.listener.name": "SASL_SSL",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller.ports['CONTROLLER']}",
            "log.dirs": str(directory / "broker" / "data"),
            "offsets.topic.replication.factor": "1",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            **node_tls(ca, directory, "broker-2"),
        },
    )
    secured = Secured(ca, controller, broker)
    try:
        broker.start()
        admin = AdminClient(secured.client("broker", "broker-secret", "PLAIN"))
        alice = UserScramCredentialUpsertion(
            "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"alice-secret"
        )
        for future in admin.alter_user_scram_credentials([alice]).values():
            future.result(timeout=30)
        topics = [NewTopic(n, 1, 1) for n in ("pay-eu", "pay-secret", "orders")]
        for future in admin.create_topics(topics, operation_timeout=20).values():
            future.result(timeout=30)
        yield secured
    finally:
        broker.stop()
        controller.stop()


def produce_errors(cluster: Secured, topic: str) -> list[Any]:
    producer = Producer({**cluster.client("alice", "alice-secret"), "message.timeout.ms": 8000})
    outcomes: list[Any] = []
    producer.produce(topic, b"x", on_delivery=lambda err, _m: outcomes.append(err))
    producer.flush(15)
    return outcomes


def test_alice_without_acls_gets_the_authorization_errors_and_nothing_else(
    cluster: Secured,
) -> None:
    client = KafkaAdminClient(**cluster.python_client("alice", "alice-secret"))
    try:
        assert client.list_topics() == []  # nothing she may describe
        with pytest.raises(TopicAuthorizationFailedError):
            client.create_topics([PyNewTopic("alices", 1, 1)])
        acl = ACL("User:alice", "*", ACLOperation.ALL, ACLPermissionType.ALLOW,
                  ResourcePattern(PyResourceType.TOPIC, "orders"))  # fmt: skip
        assert client.create_acls([acl])["failed"] == [ClusterAuthorizationFailedError]
    finally:
        client.close()
    (error,) = produce_errors(cluster, "orders")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    consumer = KafkaConsumer(
        "orders",
        group_id="g",
        consumer_timeout_ms=5000,
        **cluster.python_client("alice", "alice-secret"),
    )
    try:
        with pytest.raises((GroupAuthorizationFailedError, TopicAuthorizationFailedError)):
            list(consumer)
    finally:
        consumer.close()


def test_prefixed_allow_and_literal_deny_hold_over_sasl_ssl(cluster: Secured) -> None:
    admin = AdminClient(cluster.client("broker", "broker-secret", "PLAIN"))  # the super user
    allow = AclBinding(ResourceType.TOPIC, "pay-", ResourcePatternType.PREFIXED, "User:alice",
                       "*", AclOperation.WRITE, AclPermissionType.ALLOW)  # fmt: skip
    deny = AclBinding(ResourceType.TOPIC, "pay-secret", ResourcePatternType.LITERAL,
                      "User:alice", "*", AclOperation.WRITE, AclPermissionType.DENY)  # fmt: skip
    for future in admin.create_acls([allow, deny], request_timeout=20).values():
        future.result(timeout=30)
    assert eventually(lambda: produce_errors(cluster, "pay-eu") == [None])
    (refused,) = produce_errors(cluster, "pay-secret")  # DENY over ALLOW
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    (other,) = produce_errors(cluster, "orders")  # outside the prefix
    assert other is not None and other.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


async def as_mallory(cluster: Secured, api_key: int, **fields: Any) -> Any:
    context = ssl.create_default_context(cafile=str(cluster.ca.pem_path))
    port = cluster.controller_port
    set_login(SaslLogin("PLAIN", "mallory", "mallory-secret"), ("127.0.0.1", port))
    try:
        async with await KafkaConnection.connect("127.0.0.1", port, tls=context) as conn:
            await conn.negotiate_versions()
            return await conn.request(api_key, **fields)
    finally:
        clear_logins()


def test_an_authenticated_user_cannot_forge_registrations_on_the_controller(
    cluster: Secured,
) -> None:
    registration = run(
        as_mallory(
            cluster,
            ApiKey.BROKER_REGISTRATION,
            broker_id=7,
            cluster_id="",
            incarnation_id=uuid.uuid4(),
            listeners=[
                {"name": "SASL_SSL", "host": "127.0.0.1", "port": 9, "security_protocol": 3}
            ],
            features=[],
            rack=None,
            is_migrating_zk_broker=False,
            log_dirs=[uuid.uuid4()],
            previous_broker_epoch=-1,
        )
    )
    assert int(registration.error_code) == CLUSTER_AUTHORIZATION_FAILED
    heartbeat = run(
        as_mallory(
            cluster,
            ApiKey.BROKER_HEARTBEAT,
            broker_id=2,
            broker_epoch=1,
            current_metadata_offset=0,
            want_fence=True,
            want_shut_down=True,
            offline_log_dirs=[],
        )
    )
    assert int(heartbeat.error_code) == CLUSTER_AUTHORIZATION_FAILED
    vote = run(
        as_mallory(
            cluster,
            ApiKey.VOTE,
            version=0,
            cluster_id=None,
            topics=[
                {
                    "topic_name": "__cluster_metadata",
                    "partitions": [
                        {"partition_index": 0, "replica_epoch": 99, "replica_id": 7,
                         "last_offset_epoch": 99, "last_offset": 1 << 40}
                    ],
                }
            ],
        )
    )  # fmt: skip
    assert int(vote.error_code) == CLUSTER_AUTHORIZATION_FAILED
    # The real broker (User:broker, a super user) is still registered and unfenced: it serves.
    client = KafkaAdminClient(**cluster.python_client("alice", "alice-secret"))
    try:
        assert [b["broker_id"] for b in client.describe_cluster()["brokers"]] == [2]
    finally:
        client.close()
