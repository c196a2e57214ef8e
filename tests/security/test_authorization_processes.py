"""The authorizer in real processes: a controller and a broker with
``authorizer.class.name=...StandardAuthorizer``, every connection ``User:ANONYMOUS`` (PLAINTEXT).
The controller trusts ANONYMOUS (``super.users``: the broker registers as it), the broker does
not: a principal without ACLs gets Kafka's authorization errors from kafka-python and
confluent-kafka, and gets what each ACL allows once ``rackwise acls`` (or an admin client)
creates it; DENY wins over ALLOW and prefixed ACLs cover what they name."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as PyResourceType
from kafka.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)

from rackwise.common.error_codes import CLUSTER_AUTHORIZATION_FAILED
from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey
from tests.broker.test_broker_processes import BrokerProcess, free_port
from tests.command_line import rackwise
from tests.processes import ControllerProcess, controller_properties, run

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
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


class Secured:
    def __init__(self, directory: Path) -> None:
        port = free_port()
        cdir, bdir = directory / "controller", directory / "broker"
        cdir.mkdir()
        bdir.mkdir()
        props = controller_properties(
            cdir,
            node_id=3000,
            listeners=f"CONTROLLER://127.0.0.1:{port}",
            controller_quorum_voters=f"3000@127.0.0.1:{port}",
        )
        props.update({"authorizer.class.name": AUTHORIZER, "super.users": "User:ANONYMOUS"})
        self.controller = ControllerProcess(cdir, props)
        self.broker = BrokerProcess(
            bdir,
            {
                "node.id": "1",
                "process.roles": "broker",
                "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
                "controller.listener.names": "CONTROLLER",
                "controller.quorum.bootstrap.servers": f"127.0.0.1:{port}",
                "log.dirs": str(bdir / "data"),
                "offsets.topic.replication.factor": "1",
                "authorizer.class.name": AUTHORIZER,
                "super.users": "User:admin",
            },
        )
        self.controller_address = f"127.0.0.1:{port}"

    @property
    def bootstrap(self) -> str:
        return self.broker.address

    def acls(self, *args: str, controller: bool = False) -> Any:
        where = ["--bootstrap-controller", self.controller_address] if controller else [
            "--bootstrap-server", self.bootstrap
        ]  # fmt: skip
        return rackwise("acls", *where, *args, timeout=60)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    secured = Secured(tmp_path_factory.mktemp("secured"))
    try:
        secured.controller.start()
        secured.broker.start()
        yield secured
    finally:
        secured.broker.close()
        secured.controller.close()


def admin(cluster: Secured) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=20_000)


def test_a_principal_without_acls_is_refused_everything(cluster: Secured) -> None:
    client = admin(cluster)
    try:
        acl = ACL("User:ANONYMOUS", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                  ResourcePattern(PyResourceType.TOPIC, "t"))  # fmt: skip
        assert client.create_acls([acl])["failed"] == [ClusterAuthorizationFailedError]
        with pytest.raises(TopicAuthorizationFailedError):
            client.create_topics([NewTopic("orders", 1, 1)])
        assert client.list_topics() == []
    finally:
        client.close()
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "message.timeout.ms": 5000})
    failures: list[Any] = []
    producer.produce("orders", b"x", on_delivery=lambda err, _m: failures.append(err))
    producer.flush(10)
    assert failures and failures[0].code() in (29, 3)  # TOPIC_AUTHORIZATION_FAILED


def test_the_super_user_path_and_acls_from_rackwise_acls(cluster: Secured) -> None:
    # The controller trusts ANONYMOUS (super.users), so the tool may grant from there.
    added = cluster.acls("--add", "--allow-principal", "User:ANONYMOUS", "--operation", "Alter",
                         "--operation", "Create", "--cluster", controller=True)  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert added.stdout == (
        "Adding ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, "
        "patternType=LITERAL)`: \n"
        " \t(principal=User:ANONYMOUS, host=*, operation=CREATE, permissionType=ALLOW)\n"
        "\t(principal=User:ANONYMOUS, host=*, operation=ALTER, permissionType=ALLOW) \n\n"
    )
    # Now ALTER on the cluster lets the broker's admin clients create ACLs.
    client = admin(cluster)
    try:
        acl = ACL(
            "User:ANONYMOUS",
            "*",
            ACLOperation.WRITE,
            ACLPermissionType.ALLOW,
            ResourcePattern(PyResourceType.TOPIC, "pay-", ACLResourcePatternType.PREFIXED),
        )
        assert eventually(lambda: client.create_acls([acl])["succeeded"] == [acl])
        client.create_topics([NewTopic("pay-eu", 1, 1), NewTopic("pay-secret", 1, 1)])
        deny = ACL("User:*", "*", ACLOperation.WRITE, ACLPermissionType.DENY,
                   ResourcePattern(PyResourceType.TOPIC, "pay-secret"))  # fmt: skip
        assert client.create_acls([deny])["succeeded"] == [deny]
        anything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                             ResourcePatternFilter(PyResourceType.TOPIC, None,
                                                   ACLResourcePatternType.ANY))  # fmt: skip
        found, _error = client.describe_acls(anything)
        assert {(a.resource_pattern.resource_name, a.permission_type) for a in found} == {
            ("pay-", ACLPermissionType.ALLOW),
            ("pay-secret", ACLPermissionType.DENY),
        }
        # WRITE implies DESCRIBE: the prefixed topics are listed now, nothing else.
        assert sorted(eventually(client.list_topics)) == ["pay-eu", "pay-secret"]
    finally:
        client.close()
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, max_block_ms=10_000, retries=0)
    try:
        producer.send("pay-eu", b"hello").get(timeout=10)
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("pay-secret", b"no").get(timeout=10)  # DENY over ALLOW
    finally:
        producer.close()


def test_authorized_operations_come_from_the_acls(cluster: Secured) -> None:
    async def ask() -> tuple[Any, Any]:
        host, port = cluster.bootstrap.split(":")
        async with await KafkaConnection.connect(host, int(port)) as conn:
            await conn.negotiate_versions()
            described = await conn.request(
                ApiKey.DESCRIBE_CLUSTER,
                include_cluster_authorized_operations=True,
                endpoint_type=1,
                include_fenced_brokers=False,
            )
            metadata = await conn.request(
                ApiKey.METADATA,
                topics=[{"name": n, "topic_id": None} for n in ("pay-eu", "orders")],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=True,
            )
            return described, metadata

    described, metadata = run(ask())
    # ALTER and CREATE on the cluster, and DESCRIBE, which ALTER implies.
    assert described.cluster_authorized_operations == (1 << 5) | (1 << 7) | (1 << 8)
    by_name = {t.name: t for t in metadata.topics}
    assert by_name["pay-eu"].topic_authorized_operations == (1 << 4) | (1 << 8)  # WRITE, DESCRIBE
    assert int(by_name["orders"].error_code) == 29  # named, not describable


def test_consuming_in_a_group_needs_read_on_topic_and_group(cluster: Secured) -> None:
    def consume(group: str) -> list[bytes]:
        consumer = KafkaConsumer("pay-eu", bootstrap_servers=cluster.bootstrap,
                                 group_id=group, auto_offset_reset="earliest",
                                 consumer_timeout_ms=8000)  # fmt: skip
        try:
            return [m.value for m in consumer]
        finally:
            consumer.close()

    granted = cluster.acls("--add", "--allow-principal", "User:ANONYMOUS", "--consumer",
                           "--topic", "pay-eu", "--group", "billing")  # fmt: skip
    assert granted.returncode == 0, granted.stderr
    with pytest.raises(GroupAuthorizationFailedError):
        consume("other")
    assert eventually(lambda: consume("billing")) == [b"hello"]
    listed = cluster.acls("--list", "--topic", "pay-eu")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=pay-eu, "
        "patternType=LITERAL)`: \n"
        " \t(principal=User:ANONYMOUS, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:ANONYMOUS, host=*, operation=DESCRIBE, permissionType=ALLOW) \n\n"
    )


def test_confluent_kafka_deletes_acls_and_rights_go_with_them(cluster: Secured) -> None:
    client = AdminClient({"bootstrap.servers": cluster.bootstrap})
    group_acls = AclBindingFilter(ResourceType.GROUP, "billing", ResourcePatternType.LITERAL,
                                  None, None, AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    (deleted,) = client.delete_acls([group_acls], request_timeout=20).values()
    assert [b.name for b in deleted.result(timeout=20)] == ["billing"]
    described = client.describe_acls(group_acls, request_timeout=20).result(timeout=20)
    assert described == []
    removed = cluster.acls("--remove", "--force", "--topic", "pay-secret")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == ""


def test_the_tool_refuses_a_bad_principal_in_one_line(cluster: Secured) -> None:
    bad = cluster.acls("--add", "--allow-principal", "alice", "--topic", "t")
    assert bad.returncode == 1
    assert bad.stderr.strip().endswith(
        "expected a string in format principalType:principalName but got alice"
    )


def test_a_forged_registration_on_the_controller_is_refused(tmp_path: Path) -> None:
    """A controller trusting only ``User:broker``: ANONYMOUS may not register a broker nor
    heartbeat (CLUSTER_AUTHORIZATION_FAILED), and is refused the ACL APIs."""
    port = free_port()
    props = controller_properties(
        tmp_path,
        node_id=3000,
        listeners=f"CONTROLLER://127.0.0.1:{port}",
        controller_quorum_voters=f"3000@127.0.0.1:{port}",
    )
    props.update({"authorizer.class.name": AUTHORIZER, "super.users": "User:broker"})
    controller = ControllerProcess(tmp_path, props)
    controller.start()
    try:
        registration = run(
            controller_request(
                port,
                ApiKey.BROKER_REGISTRATION,
                broker_id=7,
                cluster_id="",
                incarnation_id=uuid.uuid4(),
                listeners=[
                    {"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9, "security_protocol": 0}
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
            controller_request(
                port,
                ApiKey.BROKER_HEARTBEAT,
                broker_id=7,
                broker_epoch=1,
                current_metadata_offset=0,
                want_fence=False,
                want_shut_down=False,
                offline_log_dirs=[],
            )
        )
        assert int(heartbeat.error_code) == CLUSTER_AUTHORIZATION_FAILED
        listed = rackwise("acls", "--bootstrap-controller", f"127.0.0.1:{port}", "--list")
        assert listed.returncode == 1
        assert listed.stdout == (
            "Error while executing ACL command: org.apache.kafka.common.errors."
            "ClusterAuthorizationException: Cluster authorization failed.\n"
        )
    finally:
        controller.close()


async def controller_request(port: int, api_key: int, **fields: Any) -> Any:
    async with await KafkaConnection.connect("127.0.0.1", port, client_id="anonymous") as conn:
        await conn.negotiate_versions()
        return await conn.request(api_key, **fields)
