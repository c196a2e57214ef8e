"""BrokerRegistration, BrokerHeartbeat, AllocateProducerIds and AssignReplicasToDirs (KIP-858):
the requests a broker makes for itself, read into :mod:`rackwise.controller.messages` and
answered in the request's version (:mod:`rackwise.controller_node.apis`).

Worked example
    A BrokerHeartbeat v1 of broker 1, epoch 7, offset 12 becomes
    ``BrokerHeartbeatRequest(1, 7, 12)``; the reply ``(is_caught_up=True, is_fenced=False,
    ...)`` becomes a v1 response with error 0, ``is_caught_up`` true, ``is_fenced`` false.
"""

from __future__ import annotations

import uuid
from typing import Any

from rackwise.common.error_codes import NONE
from rackwise.controller import (
    ApiError,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    FeatureRange,
    ProducerIdsBlock,
)
from rackwise.controller import Listener as BrokerListener
from rackwise.controller_node.apis import response
from rackwise.protocol import Response, error_name
from rackwise.records import ZERO_UUID

# ---- brokers ---------------------------------------------------------------------------------


def describe_error(error: ApiError) -> str:
    """``NAME (code): message``, as the controller logs a refusal."""
    text = f"{error_name(error.error_code)} ({error.error_code})"
    return text if error.message is None else f"{text}: {error.message}"


def registration_args(body: Any) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=int(body.broker_id),
        incarnation_id=body.incarnation_id or ZERO_UUID,
        listeners=tuple(
            BrokerListener(str(x.name), str(x.host), int(x.port), int(x.security_protocol))
            for x in body.listeners
        ),
        rack=body.rack,
        log_dirs=tuple(d for d in getattr(body, "log_dirs", ()) if d is not None),
        features=tuple(
            FeatureRange(str(f.name), int(f.min_supported_version), int(f.max_supported_version))
            for f in body.features
        ),
    )


def registration_response(
    body: Any, reply: BrokerRegistrationResponse | None, error: ApiError | None = None
) -> Response:
    if reply is None:
        failure = error or ApiError(-1, None)
        return response(body, {"error_code": failure.error_code, "broker_epoch": -1})
    return response(body, {"error_code": NONE, "broker_epoch": reply.broker_epoch})


def heartbeat_args(body: Any) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(
        broker_id=int(body.broker_id),
        broker_epoch=int(body.broker_epoch),
        current_metadata_offset=int(body.current_metadata_offset),
        want_fence=bool(body.want_fence),
        want_shut_down=bool(body.want_shut_down),
        offline_log_dirs=tuple(getattr(body, "offline_log_dirs", ()) or ()),
    )


def heartbeat_response(
    body: Any, reply: BrokerHeartbeatResponse | None, error: ApiError | None = None
) -> Response:
    if reply is None:
        failure = error or ApiError(-1, None)
        return response(
            body,
            {
                "error_code": failure.error_code,
                "is_caught_up": False,
                "is_fenced": True,
                "should_shut_down": False,
            },
        )
    return response(
        body,
        {
            "error_code": NONE,
            "is_caught_up": reply.is_caught_up,
            "is_fenced": reply.is_fenced,
            "should_shut_down": reply.should_shut_down,
        },
    )


# ---- producer ids -----------------------------------------------------------------------------


def allocate_producer_ids_args(body: Any) -> tuple[int, int]:
    """An AllocateProducerIds request: (broker id, broker epoch)."""
    return int(body.broker_id), int(body.broker_epoch)


def allocate_producer_ids_response(body: Any, block: ProducerIdsBlock) -> Response:
    return response(
        body,
        {
            "error_code": NONE,
            "producer_id_start": block.first_producer_id,
            "producer_id_len": block.size,
        },
    )


def allocate_producer_ids_error(body: Any, error: ApiError) -> Response:
    """Kafka's ``AllocateProducerIdsRequest.getErrorResponse``: the error, an empty block."""
    return response(
        body, {"error_code": error.error_code, "producer_id_start": 0, "producer_id_len": 0}
    )


# ---- log directories (KIP-858) ---------------------------------------------------------------


def assign_replicas_to_dirs_args(
    body: Any,
) -> tuple[int, int, list[tuple[uuid.UUID, int, uuid.UUID]]]:
    """(broker id, broker epoch, [(topic id, partition, directory id)])."""
    items = [
        (topic.topic_id, int(p.partition_index), directory.id_)
        for directory in body.directories
        for topic in directory.topics
        for p in topic.partitions
    ]
    return int(body.broker_id), int(body.broker_epoch), items


def assign_replicas_to_dirs_response(
    body: Any, codes: dict[tuple[uuid.UUID, int], int], error: ApiError | None = None
) -> Response:
    """The per-partition codes in the request's shape; with ``error``, it alone at the top."""
    return response(
        body,
        {
            "throttle_time": 0,
            "error_code": error.error_code if error is not None else 0,
            "directories": [
                {
                    "id_": directory.id_,
                    "topics": [
                        {
                            "topic_id": topic.topic_id,
                            "partitions": [
                                {
                                    "partition_index": int(p.partition_index),
                                    "error_code": codes.get(
                                        (topic.topic_id, int(p.partition_index)), 0
                                    ),
                                }
                                for p in topic.partitions
                            ],
                        }
                        for topic in directory.topics
                    ],
                }
                for directory in (body.directories if error is None else ())
            ],
        },
    )
