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
from rackwise.broker.forwarding import FORWARDED, Forwarder
from rackwise.broker.log_dirs import LogDirs
from rackwise.broker.producer_ids import RpcProducerIdManager, init_producer_id
from rackwise.broker.topic_partitions import describe_topic_partitions
from rackwise.coordinator import group_apis
from rackwise.coordinator.group_coordinator import GroupCoordinator
from rackwise.image import MetadataImage
from rackwise.net import CloseConnection, NoResponse
from rackwise.node import acl_apis, scram_apis
from rackwise.protocol import ApiKey, Request, Response
from rackwise.replica.manager import ReplicaManager


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
    return broker_apis.metadata(request.body, apis.image(), apis.info(), apis.auto_create)


def _join_group(apis: BrokerApis, request: Request) -> Answer:
    return group_apis.join_group(apis.groups, request.body, request.header.client_id or "")


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
    ApiKey.PRODUCE: Entry(lambda apis, request: apis.data_apis.produce(request)),
    ApiKey.FETCH: Entry(lambda apis, request: apis.data_apis.fetch(request)),
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
    ApiKey.SYNC_GROUP: _groups(group_apis.sync_group),
    ApiKey.HEARTBEAT: _groups(group_apis.heartbeat),
    ApiKey.LEAVE_GROUP: _groups(group_apis.leave_group),
    ApiKey.LIST_GROUPS: _groups(group_apis.list_groups),
    ApiKey.DESCRIBE_GROUPS: _groups(group_apis.describe_groups),
    ApiKey.DELETE_GROUPS: _groups(group_apis.delete_groups),
    ApiKey.OFFSET_DELETE: _groups(group_apis.offset_delete),
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
    ApiKey.DESCRIBE_ACLS: _body_only(acl_apis.describe_acls),
    ApiKey.CREATE_ACLS: _body_only(acl_apis.create_acls),
    ApiKey.DELETE_ACLS: _body_only(acl_apis.delete_acls),
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
    response = entry.answer(apis, request)
    if inspect.isawaitable(response):
        return await response
    return response
