"""The requests of a broker's client listeners, one entry per API: which of the broker's parts
answers it (Kafka's ``KafkaApis`` dispatch).

Goals
    * One table, :data:`ENTRIES`, from API key to handler: reads from the image
      (:mod:`rackwise.broker.metadata_apis` and its neighbours), the data path
      (:class:`~rackwise.broker.data_apis.DataApis`, the log directories), the group
      coordinator, producer ids, the ACL APIs, and writes forwarded to the controller
      (:data:`~rackwise.broker.forwarding.FORWARDED`).
    * ApiVersions is answered at once; every other request, one the broker does not serve
      included, waits until the broker serves clients (its first unfencing, as Kafka enables
      request processing only then).
    * With an authorizer, one step judges every request before its entry answers it: the
      API's gate (:mod:`rackwise.node.gates`) lets it pass, refuses it whole, or lets part of
      it pass and merges the refused items' errors into the answer; Produce, Fetch, Metadata
      and the authorized operations of DescribeCluster and DescribeTopicPartitions are judged
      per topic with the same check. Without one (``authorization`` None), nothing is checked
      and the ACL APIs answer SECURITY_DISABLED.

Constraints
    A handler takes the broker's parts (:class:`BrokerApis`) and the request, and returns the
    response, or an awaitable of it; it reads the image as it is when the handler runs. An API
    key without an entry closes the connection.

Worked example
    A Metadata v12 arrives before the broker is unfenced: :func:`answer` waits on ``ready``,
    then ``ENTRIES[METADATA]`` answers it from the image then current, creating missing topics
    only with ``auto.create.topics.enable`` (``BrokerApis.auto_create`` is None otherwise).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from rackwise.broker import describe_configs as broker_configs
from rackwise.broker import metadata_apis as broker_apis
from rackwise.broker import offset_apis
from rackwise.broker.alter_configs import alter_configs
from rackwise.broker.auto_create import AutoTopicCreator
from rackwise.broker.config_resources import list_config_resources
from rackwise.broker.data_apis import DataApis
from rackwise.broker.describe_producers import describe_producers
from rackwise.broker.forwarding import FORWARDED, Forwarder, error_response
from rackwise.broker.log_dirs import LogDirs
from rackwise.broker.producer_ids import RpcProducerIdManager, init_producer_id
from rackwise.broker.topic_partitions import describe_topic_partitions
from rackwise.common.acl import OPERATIONS_NOT_ASKED, AclOperation
from rackwise.common.error_codes import TOPIC_AUTHORIZATION_FAILED
from rackwise.coordinator import consumer_apis, group_apis, membership_apis
from rackwise.coordinator.group_coordinator import GroupCoordinator
from rackwise.image import MetadataImage
from rackwise.net import CloseConnection, NoResponse
from rackwise.node import acl_apis, gates, scram_apis
from rackwise.node.authorization import CLUSTER_OPERATIONS, TOPIC_OPERATIONS, Authorization, Check
from rackwise.protocol import ApiKey, Request, Response
from rackwise.replica.manager import ReplicaManager
from rackwise.security.acl import CLUSTER_NAME, ResourceType


@dataclass(frozen=True, slots=True)
class BrokerApis:
    """The parts of a broker that answer clients, as the handlers see them."""

    image: Callable[[], MetadataImage]
    """The image the broker has applied, as it is now."""
    info: Callable[[], broker_apis.BrokerInfo]
    data_apis: DataApis
    groups: GroupCoordinator
    producer_ids: RpcProducerIdManager
    forwarder: Forwarder
    log_dirs: LogDirs
    replicas: ReplicaManager
    auto_create: AutoTopicCreator | None
    """None: ``auto.create.topics.enable=false``, Metadata creates no topic."""
    authorization: Authorization | None = None
    """None: no ``authorizer.class.name``, every request allowed."""

    def check(self) -> Check | None:
        """The check of the request being handled (None without an authorizer)."""
        authorization = self.authorization
        return None if authorization is None else authorization.check(self.image())


Answer = Response | Awaitable[Response] | Awaitable[Response | NoResponse]
"""A response, or an awaitable of it (of :data:`~rackwise.net.NO_RESPONSE` for a Produce with
acks=0)."""
Handler = Callable[[BrokerApis, Request], Answer]
"""The answer to a request."""


@dataclass(frozen=True, slots=True)
class Entry:
    answer: Handler
    before_ready: bool = False
    """Answered before the broker serves clients (ApiVersions only)."""


def _metadata(apis: BrokerApis, request: Request) -> Answer:
    return broker_apis.metadata(
        request.body, apis.image(), apis.info(), apis.auto_create, apis.check()
    )


def _produce(apis: BrokerApis, request: Request) -> Answer:
    check = apis.check()
    may_write = None if check is None else check.may_topic(AclOperation.WRITE)
    return apis.data_apis.produce(request, may_write)


def _fetch(apis: BrokerApis, request: Request) -> Answer:
    """READ on each topic; a follower's fetch needs CLUSTER_ACTION on the cluster."""
    check = apis.check()
    may_read = None
    if check is not None:
        if int(request.body.replica_id) >= 0:
            trusted = check.is_trusted
            may_read = lambda _name: trusted  # noqa: E731
        else:
            may_read = check.may_topic(AclOperation.READ)
    return apis.data_apis.fetch(request, may_read)


def _describe_acls(apis: BrokerApis, request: Request) -> Answer:
    if apis.authorization is None:
        return acl_apis.describe_acls(request.body)
    return acl_apis.describe_acls_from(request.body, apis.image().acls)


def _alter_acls(apis: BrokerApis, request: Request) -> Answer:
    """CreateAcls and DeleteAcls: the controller's, with an authorizer."""
    if apis.authorization is not None:
        return apis.forwarder.forward(request.body)
    if request.header.api_key == ApiKey.CREATE_ACLS:
        return acl_apis.create_acls(request.body)
    return acl_apis.delete_acls(request.body)


def _join_group(apis: BrokerApis, request: Request) -> Answer:
    return membership_apis.join_group(apis.groups, request.body, request.header.client_id or "")


def _consumer_group_heartbeat(apis: BrokerApis, request: Request) -> Answer:
    client_id = request.header.client_id or ""
    return consumer_apis.consumer_group_heartbeat(apis.groups, request.body, client_id)


def _describe_log_dirs(apis: BrokerApis, request: Request) -> Answer:
    return apis.log_dirs.describe_log_dirs(request.body, request.header.api_version)


def _alter_replica_log_dirs(apis: BrokerApis, request: Request) -> Answer:
    return apis.log_dirs.alter_replica_log_dirs(request.body, request.header.api_version)


def _alter_configs(apis: BrokerApis, request: Request) -> Answer:
    return alter_configs(request.body, apis.image(), apis.info(), apis.forwarder.forward)


def _forward(apis: BrokerApis, request: Request) -> Answer:
    return apis.forwarder.forward(request.body)


def _groups(respond: Callable[[GroupCoordinator, Any], Answer]) -> Entry:
    """A group coordinator API that reads the request body only."""
    return Entry(lambda apis, request: respond(apis.groups, request.body))


def _from_image(respond: Callable[[Any, MetadataImage, str], Answer]) -> Entry:
    """An API answered from the image for this broker's client listener."""
    return Entry(lambda apis, r: respond(r.body, apis.image(), apis.info().listener_name))


def _body_only(respond: Callable[[Any], Answer]) -> Entry:
    """An API answered from the request body alone (the ACL APIs, without an authorizer)."""
    return Entry(lambda _apis, request: respond(request.body))


ENTRIES: Final[Mapping[int, Entry]] = {
    **{key: Entry(_forward) for key in FORWARDED},
    ApiKey.API_VERSIONS: Entry(
        lambda apis, r: broker_apis.api_versions(r.body, apis.image(), apis.info()),
        before_ready=True,
    ),
    ApiKey.PRODUCE: Entry(_produce),
    ApiKey.FETCH: Entry(_fetch),
    ApiKey.LIST_OFFSETS: Entry(lambda apis, r: offset_apis.list_offsets(apis.replicas, r.body)),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: Entry(
        lambda apis, r: offset_apis.offset_for_leader_epoch(apis.replicas, r.body)
    ),
    ApiKey.DELETE_RECORDS: Entry(lambda apis, request: apis.data_apis.delete_records(request)),
    ApiKey.INIT_PRODUCER_ID: Entry(
        lambda apis, request: init_producer_id(request.body, apis.producer_ids)
    ),
    ApiKey.FIND_COORDINATOR: _groups(group_apis.find_coordinator),
    ApiKey.OFFSET_COMMIT: _groups(group_apis.offset_commit),
    ApiKey.OFFSET_FETCH: _groups(group_apis.offset_fetch),
    ApiKey.JOIN_GROUP: Entry(_join_group),
    ApiKey.SYNC_GROUP: _groups(membership_apis.sync_group),
    ApiKey.HEARTBEAT: _groups(membership_apis.heartbeat),
    ApiKey.LEAVE_GROUP: _groups(membership_apis.leave_group),
    ApiKey.LIST_GROUPS: _groups(group_apis.list_groups),
    ApiKey.DESCRIBE_GROUPS: _groups(group_apis.describe_groups),
    ApiKey.DELETE_GROUPS: _groups(group_apis.delete_groups),
    ApiKey.OFFSET_DELETE: _groups(group_apis.offset_delete),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: Entry(_consumer_group_heartbeat),
    ApiKey.CONSUMER_GROUP_DESCRIBE: _groups(consumer_apis.consumer_group_describe),
    ApiKey.METADATA: Entry(_metadata),
    ApiKey.DESCRIBE_CLUSTER: Entry(
        lambda apis, r: broker_apis.describe_cluster(r.body, apis.image(), apis.info())
    ),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _from_image(describe_topic_partitions),
    ApiKey.DESCRIBE_LOG_DIRS: Entry(_describe_log_dirs),
    ApiKey.ALTER_REPLICA_LOG_DIRS: Entry(_alter_replica_log_dirs),
    ApiKey.DESCRIBE_CONFIGS: Entry(
        lambda apis, r: broker_configs.describe_configs(r.body, apis.image(), apis.info())
    ),
    ApiKey.DESCRIBE_PRODUCERS: Entry(
        lambda apis, r: describe_producers(r.body, apis.image(), apis.replicas)
    ),
    ApiKey.LIST_CONFIG_RESOURCES: _from_image(list_config_resources),
    ApiKey.DESCRIBE_ACLS: Entry(_describe_acls),
    ApiKey.CREATE_ACLS: Entry(_alter_acls),
    ApiKey.DELETE_ACLS: Entry(_alter_acls),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: Entry(
        lambda apis, request: scram_apis.describe(request.body, apis.image().scram_credentials)
    ),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: Entry(_alter_configs),
    ApiKey.ALTER_CONFIGS: Entry(_alter_configs),
}
"""Every API a broker's client listener serves (module docstring)."""


async def answer(apis: BrokerApis, request: Request, ready: asyncio.Event) -> Response | NoResponse:
    """The response to ``request``, from its entry of :data:`ENTRIES`, once ``ready`` is set
    (at once for ApiVersions); an API without an entry closes the connection."""
    key = request.header.api_key
    entry = ENTRIES.get(key)
    if entry is None or not entry.before_ready:
        await ready.wait()
    if entry is None:
        raise CloseConnection(f"api key {key} is not served by a broker")
    check = apis.check()
    verdict = None if check is None else gates.judge(check, key, request.body, apis.image())
    if verdict is None:
        response = await _run(entry, apis, request)
        if (
            check is not None
            and key in _OPERATIONS_ANSWERED
            and not isinstance(response, NoResponse)
        ):
            return _with_operations(check, response, request.body)
        return response
    if isinstance(verdict, gates.Refuse):
        return _error(request.body, verdict.error_code, verdict.message)
    refused = [_error(body, code, message) for body, code, message in verdict.refused]
    if verdict.allowed is None:
        return (
            refused[0] if len(refused) == 1 else gates.merge(refused[0], refused[1:], verdict.field)
        )
    allowed = await _run(entry, apis, dataclasses.replace(request, body=verdict.allowed))
    if isinstance(allowed, NoResponse):
        return allowed
    return gates.merge(allowed, refused, verdict.field)


async def _run(entry: Entry, apis: BrokerApis, request: Request) -> Response | NoResponse:
    response = entry.answer(apis, request)
    if inspect.isawaitable(response):
        return await response
    return response


def _error(body: Any, error_code: int, message: str | None) -> Response:
    """A request's answer giving it ``error_code`` (the forwarded APIs' shapes, or
    :func:`rackwise.node.gates.error_answer`'s)."""
    key = int(type(body).__api_key__)
    if key in FORWARDED or key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        return error_response(body, error_code, message)
    if key == ApiKey.CREATE_ACLS:
        return acl_apis.create_acls_error(body, error_code, message)
    if key == ApiKey.DELETE_ACLS:
        return acl_apis.delete_acls_error(body, error_code, message)
    if key == ApiKey.DESCRIBE_ACLS:
        return acl_apis.describe_acls_error(body, error_code, message)
    return gates.error_answer(body, error_code, message)


_OPERATIONS_ANSWERED: Final = frozenset(
    {ApiKey.DESCRIBE_CLUSTER, ApiKey.DESCRIBE_TOPIC_PARTITIONS, ApiKey.LIST_GROUPS}
)


def _with_operations(check: Check, response: Any, body: Any) -> Response:
    """The answer as the caller may see it: the authorized operations a DescribeCluster or
    DescribeTopicPartitions asked for, the caller's (KIP-430); the topics of a
    DescribeTopicPartitions and the groups of a ListGroups it may not DESCRIBE left out
    (Kafka's listing rule: without DESCRIBE on the cluster, only those groups), a topic it
    named answered TOPIC_AUTHORIZATION_FAILED."""
    groups = getattr(response, "groups", None)
    if groups is not None and not check.may_cluster(AclOperation.DESCRIBE):
        may = check.may
        kept = [g for g in groups if may(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)]
        response = dataclasses.replace(response, groups=tuple(kept))
    if getattr(response, "cluster_authorized_operations", OPERATIONS_NOT_ASKED) != (
        OPERATIONS_NOT_ASKED
    ):
        ops = check.operations(ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS)
        response = dataclasses.replace(response, cluster_authorized_operations=ops)
    topics = getattr(response, "topics", None)
    if topics:
        describable = check.may_topic(AclOperation.DESCRIBE)
        named = {str(t.name) for t in getattr(body, "topics", ()) or ()}.__contains__
        shown = []
        for t in topics:
            if t.name and not describable(t.name):
                if named(t.name):
                    shown.append(dataclasses.replace(t, error_code=TOPIC_AUTHORIZATION_FAILED,
                                                     partitions=(), topic_authorized_operations=
                                                     OPERATIONS_NOT_ASKED))  # fmt: skip
                continue
            if t.name and t.topic_authorized_operations != OPERATIONS_NOT_ASKED:
                ops = check.operations(ResourceType.TOPIC, t.name, TOPIC_OPERATIONS)
                t = dataclasses.replace(t, topic_authorized_operations=ops)
            shown.append(t)
        response = dataclasses.replace(response, topics=tuple(shown))
    result: Response = response
    return result
