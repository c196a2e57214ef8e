"""The requests of the controller listener, one entry per API: how the active controller answers
it and how it is answered with an error (Kafka's ``ControllerApis`` dispatch).

Goals
    * One table serves both sides of a quorum: the active controller runs an entry's
      ``answer`` (through the group commit when the request writes records), a controller that
      is not active answers every entry with NOT_CONTROLLER, in that request's own shape, from
      the same entry's ``error``.
    * A typed error raised while answering (a bad argument, an unknown topic) becomes that
      request's error response, whether or not the request writes.

Constraints
    Pure: an ``answer`` reads the request and calls the :class:`Controller`; the node supplies
    the commit and the I/O. Registrations, heartbeats and producer id blocks have entries
    without ``answer``: the node answers them itself (they feed its fencing and leases).

Worked example
    A CreateTopics v7 reaches a controller that is not active: ``ENTRIES[CREATE_TOPICS].error``
    answers every topic of the request with NOT_CONTROLLER (41). On the active controller the
    same entry's ``answer`` creates the topics inside the next group commit and the response
    goes out once the records are durable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from rackwise.common.error_codes import NONE
from rackwise.controller import ApiError, Controller
from rackwise.controller_node.apis import brokers, configs, partitions, topics
from rackwise.node import acl_apis
from rackwise.node import scram_apis as scram
from rackwise.node.config import NodeConfig
from rackwise.protocol import ApiKey, Request, Response, make, response_class

METADATA_TOPIC: Final = "__cluster_metadata"

Answer = Callable[[Controller, Request], Response]
"""The response message to a request."""
Error = Callable[[Request, ApiError], Response]
"""The response message carrying a typed error, in the request's version."""


@dataclass(frozen=True, slots=True)
class Entry:
    error: Error
    answer: Answer | None = None
    """None: the node answers it itself (module docstring)."""
    writes: bool = True
    """Runs in a group commit and is answered once its records are durable."""


def _alter_partition(controller: Controller, request: Request) -> Response:
    body = request.body
    results = controller.alter_partition(partitions.alter_partition_args(body))
    return partitions.alter_partition_response(body, results)


def _assign_replicas_to_dirs(controller: Controller, request: Request) -> Response:
    body = request.body
    broker_id, broker_epoch, items = brokers.assign_replicas_to_dirs_args(body)
    codes = controller.assign_replicas_to_dirs(broker_id, broker_epoch, items)
    return brokers.assign_replicas_to_dirs_response(body, codes)


def _assign_replicas_to_dirs_error(request: Request, error: ApiError) -> Response:
    body = request.body
    return brokers.assign_replicas_to_dirs_response(body, {}, error)


def _create_topics(controller: Controller, request: Request) -> Response:
    body = request.body
    results = controller.create_topics(
        topics.create_topics_args(body), validate_only=bool(body.validate_only)
    )
    return topics.create_topics_response(body, results)


def _create_partitions(controller: Controller, request: Request) -> Response:
    body = request.body
    results = controller.create_partitions(
        topics.create_partitions_args(body), validate_only=bool(body.validate_only)
    )
    return topics.create_partitions_response(body, results)


def _delete_topics(controller: Controller, request: Request) -> Response:
    body = request.body
    names, ids = topics.delete_topics_args(body)
    return topics.delete_topics_response(body, controller.delete_topics(names, ids))


def _alter_partition_reassignments(controller: Controller, request: Request) -> Response:
    body = request.body
    reassigned, allow_rf_change = partitions.alter_partition_reassignments_args(body)
    results = controller.alter_partition_reassignments(
        reassigned, allow_replication_factor_change=allow_rf_change
    )
    return partitions.alter_partition_reassignments_response(body, results)


def _list_partition_reassignments(controller: Controller, request: Request) -> Response:
    body = request.body
    listed = controller.list_partition_reassignments(
        partitions.list_partition_reassignments_args(body)
    )
    return partitions.list_partition_reassignments_response(body, listed)


def _create_replica_placement(controller: Controller, request: Request) -> Response:
    body = request.body
    reply = controller.create_replica_placement(topics.replica_placement_args(body))
    return topics.replica_placement_response(body, reply)


def _create_replica_placement_error(request: Request, error: ApiError) -> Response:
    body = request.body
    return make(
        response_class(ApiKey.CREATE_REPLICA_PLACEMENT, int(type(body).__version__)),
        throttle_time_ms=0,
        replica_placement=[],
        error_code=error.error_code,
        error_message=error.message,
    )


def _describe_configs(controller: Controller, request: Request) -> Response:
    body = request.body
    results = controller.describe_configs(configs.describe_configs_args(body))
    return configs.describe_configs_response(body, results)


def _describe_configs_error(request: Request, error: ApiError) -> Response:
    """Every resource of the request with ``error`` and no configs."""
    body = request.body
    return make(
        response_class(ApiKey.DESCRIBE_CONFIGS, int(type(body).__version__)),
        throttle_time=0,
        results=[
            {
                "error_code": error.error_code,
                "error_message": error.message,
                "resource_type": int(r.resource_type),
                "resource_name": str(r.resource_name),
                "configs": [],
            }
            for r in body.resources
        ],
    )


def _elect_leaders(controller: Controller, request: Request) -> Response:
    body = request.body
    election, named = partitions.elect_leaders_args(body)
    return partitions.elect_leaders_response(body, controller.elect_leaders(election, named))


def _incremental_alter_configs(controller: Controller, request: Request) -> Response:
    body = request.body
    results = controller.incremental_alter_configs(
        configs.alter_configs_args(body), validate_only=bool(body.validate_only)
    )
    return configs.alter_configs_response(body, results)


def _alter_configs(controller: Controller, request: Request) -> Response:
    body = request.body
    results = controller.alter_configs(
        configs.legacy_alter_configs_args(body), validate_only=bool(body.validate_only)
    )
    return configs.alter_configs_response(body, results)


def _alter_scram(controller: Controller, request: Request) -> Response:
    body = request.body
    return scram.alter_response(
        body, controller.alter_user_scram_credentials(scram.alter_args(body))
    )


def _describe_scram(controller: Controller, request: Request) -> Response:
    return scram.describe(request.body, controller.image.scram_credentials)


def _on_body(error: Callable[[Any, ApiError], Response]) -> Error:
    """An error answer built from the request's decoded body alone."""
    return lambda request, e: error(request.body, e)


def _no_authorizer(respond: Callable[[Any], Response]) -> Entry:
    """An ACL API: the same answer from any controller, read-only."""
    return Entry(
        lambda request, _error: respond(request.body),
        lambda _controller, request: respond(request.body),
        writes=False,
    )


ENTRIES: Final[Mapping[int, Entry]] = {
    ApiKey.BROKER_REGISTRATION: Entry(
        lambda request, e: brokers.registration_response(request.body, None, e)
    ),
    ApiKey.BROKER_HEARTBEAT: Entry(
        lambda request, e: brokers.heartbeat_response(request.body, None, e)
    ),
    ApiKey.ALLOCATE_PRODUCER_IDS: Entry(_on_body(brokers.allocate_producer_ids_error)),
    ApiKey.ALTER_PARTITION: Entry(_on_body(partitions.alter_partition_error), _alter_partition),
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: Entry(_assign_replicas_to_dirs_error, _assign_replicas_to_dirs),
    ApiKey.CREATE_TOPICS: Entry(_on_body(topics.create_topics_error), _create_topics),
    ApiKey.CREATE_PARTITIONS: Entry(_on_body(topics.create_partitions_error), _create_partitions),
    ApiKey.DELETE_TOPICS: Entry(_on_body(topics.delete_topics_error), _delete_topics),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: Entry(
        _on_body(partitions.alter_partition_reassignments_error), _alter_partition_reassignments
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: Entry(
        _on_body(partitions.list_partition_reassignments_error),
        _list_partition_reassignments,
        writes=False,
    ),
    ApiKey.CREATE_REPLICA_PLACEMENT: Entry(
        _create_replica_placement_error, _create_replica_placement, writes=False
    ),
    ApiKey.DESCRIBE_CONFIGS: Entry(_describe_configs_error, _describe_configs, writes=False),
    ApiKey.ELECT_LEADERS: Entry(_on_body(partitions.elect_leaders_error), _elect_leaders),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: Entry(
        _on_body(configs.alter_configs_error), _incremental_alter_configs
    ),
    ApiKey.ALTER_CONFIGS: Entry(_on_body(configs.alter_configs_error), _alter_configs),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Entry(_on_body(scram.alter_error), _alter_scram),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: Entry(
        _on_body(scram.describe_error), _describe_scram, writes=False
    ),
    # No authorizer: every controller, active or not, answers as Kafka's AclApis without one.
    ApiKey.DESCRIBE_ACLS: _no_authorizer(acl_apis.describe_acls),
    ApiKey.CREATE_ACLS: _no_authorizer(acl_apis.create_acls),
    ApiKey.DELETE_ACLS: _no_authorizer(acl_apis.delete_acls),
}


def _describe_acls(controller: Controller, request: Request) -> Response:
    return acl_apis.describe_acls_from(request.body, controller.image.acls)


def _create_acls(controller: Controller, request: Request) -> Response:
    body = request.body
    return acl_apis.create_acls_response(body, controller.create_acls(acl_apis.creations_of(body)))


def _delete_acls(controller: Controller, request: Request) -> Response:
    body = request.body
    return acl_apis.delete_acls_response(body, controller.delete_acls(acl_apis.filters_of(body)))


def _acls_error(error: Callable[[Any, int, str | None], Response]) -> Error:
    return lambda request, e: error(request.body, e.error_code, e.message)


AUTHORIZER_ENTRIES: Final[Mapping[int, Entry]] = {
    **ENTRIES,
    ApiKey.DESCRIBE_ACLS: Entry(
        _acls_error(acl_apis.describe_acls_error), _describe_acls, writes=False
    ),
    ApiKey.CREATE_ACLS: Entry(_acls_error(acl_apis.create_acls_error), _create_acls),
    ApiKey.DELETE_ACLS: Entry(_acls_error(acl_apis.delete_acls_error), _delete_acls),
}
"""The table with an authorizer: the ACL APIs answered from the image and written through
the log (a controller that is not active answers them NOT_CONTROLLER)."""


def describe_quorum_response(
    version: int,
    config: NodeConfig,
    *,
    leader_id: int,
    leader_epoch: int,
    high_watermark: int,
    voters: list[dict[str, Any]],
    observers: list[dict[str, Any]] | None = None,
    error_code: int = 0,
) -> Response:
    """DescribeQuorum's answer for ``__cluster_metadata``-0: the leader, its epoch and high
    watermark, each voter's and observer's state, and the voters' endpoints on this
    controller's listener (a controller named in no ``controller.quorum.voters`` gives its
    own)."""
    endpoint = config.controller_endpoint
    addresses = [(v.node_id, v.host, v.port) for v in config.voters] or [
        (config.node_id, endpoint.host, endpoint.port)
    ]
    partition = {
        "partition_index": 0,
        "error_code": error_code,
        "error_message": None,
        "leader_id": leader_id,
        "leader_epoch": leader_epoch,
        "high_watermark": high_watermark,
        "current_voters": voters,
        "observers": observers or [],
    }
    return make(
        response_class(ApiKey.DESCRIBE_QUORUM, version),
        error_code=NONE,
        error_message=None,
        topics=[{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
        nodes=[
            {
                "node_id": node_id,
                "listeners": [{"name": endpoint.listener_name, "host": host, "port": port}],
            }
            for node_id, host, port in addresses
        ],
    )
