"""DescribeCluster as both listeners answer it (Kafka's
``AuthHelper.computeDescribeClusterResponse``): a broker lists the brokers, a controller the
controllers (KIP-919, what ``--bootstrap-controller`` tools ask), each refusing a request meant
for the other kind of endpoint.

Constraints
    * ``endpoint_type`` (v1 on) is 1 for brokers and 2 for controllers; another value is
      UNSUPPORTED_ENDPOINT_TYPE, one for the other kind of listener MISMATCHED_ENDPOINT_TYPE
      (INVALID_REQUEST in v0, which has no such field), with Kafka's messages.
    * Without an authorizer, ``cluster_authorized_operations`` (asked for with
      ``include_cluster_authorized_operations``) is every operation the cluster supports.

Worked example
    A DescribeCluster v1 with endpoint type 1 reaching a controller is answered
    MISMATCHED_ENDPOINT_TYPE, ``The request was sent to an endpoint of type CONTROLLER, but we
    wanted an endpoint of type BROKER``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from rackwise.common.acl import OPERATIONS_NOT_ASKED, AclOperation, operations_field
from rackwise.common.error_codes import (
    INVALID_REQUEST,
    MISMATCHED_ENDPOINT_TYPE,
    NONE,
    UNSUPPORTED_ENDPOINT_TYPE,
)
from rackwise.protocol import Response, response_to

BROKER_ENDPOINT_TYPE: Final = 1
"""DescribeCluster's ``endpoint_type`` for brokers (Kafka's ``EndpointType.BROKER``)."""
CONTROLLER_ENDPOINT_TYPE: Final = 2
"""DescribeCluster's ``endpoint_type`` for controllers."""
ENDPOINT_TYPE_NAMES: Final = {
    BROKER_ENDPOINT_TYPE: "BROKER",
    CONTROLLER_ENDPOINT_TYPE: "CONTROLLER",
}
CLUSTER_OPERATIONS: Final = operations_field(
    (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    )
)
"""8096, the cluster's: CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
IDEMPOTENT_WRITE, ALTER, DESCRIBE."""


def refusal(body: Any, serving: int) -> Response | None:
    """The error answer to a DescribeCluster this listener (``serving``: its endpoint type)
    does not answer, or None."""
    version = int(type(body).__version__)
    asked = int(getattr(body, "endpoint_type", BROKER_ENDPOINT_TYPE))
    if asked not in ENDPOINT_TYPE_NAMES:
        code = INVALID_REQUEST if version == 0 else UNSUPPORTED_ENDPOINT_TYPE
        message = f"Unsupported endpoint type {asked}"
    elif asked != serving:
        code = INVALID_REQUEST if version == 0 else MISMATCHED_ENDPOINT_TYPE
        message = (
            f"The request was sent to an endpoint of type {ENDPOINT_TYPE_NAMES[serving]}, but "
            f"we wanted an endpoint of type {ENDPOINT_TYPE_NAMES[asked]}"
        )
    else:
        return None
    return response_to(
        body,
        {
            "throttle_time": 0,
            "error_code": code,
            "error_message": message,
            "cluster_id": "",
            "brokers": [],
        },
    )


def describe_cluster(
    body: Any,
    *,
    serving: int,
    cluster_id: str | None,
    controller_id: int,
    nodes: Sequence[dict[str, Any]],
) -> Response:
    """The answer of a listener of type ``serving`` listing ``nodes`` (``broker_id``,
    ``host``, ``port``, ``rack``, ``is_fenced``); ``controller_id`` -1 if it is not among them,
    as Kafka answers rather than name a node the client cannot reach."""
    refused = refusal(body, serving)
    if refused is not None:
        return refused
    known = {int(node["broker_id"]) for node in nodes}
    asked = bool(getattr(body, "include_cluster_authorized_operations", False))
    return response_to(
        body,
        {
            "throttle_time": 0,
            "error_code": NONE,
            "endpoint_type": serving,
            "cluster_id": cluster_id or "",
            "controller_id": controller_id if controller_id in known else -1,
            "cluster_authorized_operations": CLUSTER_OPERATIONS if asked else OPERATIONS_NOT_ASKED,
            "brokers": list(nodes),
        },
    )
