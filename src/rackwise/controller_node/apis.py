"""Wire requests to the controller's commands and its replies back to wire responses (Kafka's
``ControllerApis``, without the I/O): each ``*_args`` reads a decoded request message into
:mod:`rackwise.controller.messages`; each ``*_response`` builds the response message, in the
request's version, with :func:`rackwise.protocol.make`.

Constraints
    Pure functions of their inputs. Fields a version lacks are dropped by ``make``, so one
    function serves every version; requests are read with ``getattr`` where versions differ
    (DeleteTopics names topics by ``topic_names`` before v6, by ``topics`` from v6). A
    request-wide failure (a refused registration, a stale heartbeat) becomes the response's
    error code with Kafka's defaults for the other fields.

Worked example
    A BrokerHeartbeat v1 of broker 1, epoch 7, offset 12 becomes
    ``BrokerHeartbeatRequest(1, 7, 12)``; the reply ``(is_caught_up=True, is_fenced=False,
    ...)`` becomes a v1 response with error 0, ``is_caught_up`` true, ``is_fenced`` false.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any, Final

from rackwise.common.errors import InvalidRequestException
from rackwise.controller import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsResourceResult,
    ApiError,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    CreateReplicaPlacementRequest,
    CreateReplicaPlacementResponse,
    DeletableTopicResult,
    DescribeConfigsResult,
    FeatureRange,
    ProducerIdsBlock,
)
from rackwise.controller import Listener as BrokerListener
from rackwise.controller.alter_partition import (
    AlterPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopic,
    AlterPartitionTopicResult,
    IsrMember,
)
from rackwise.controller.elections import ElectionType
from rackwise.controller.messages import (
    ListPartitionReassignmentsTopic,
    OngoingTopicReassignment,
    ReassignablePartition,
    ReassignablePartitionResult,
    ReassignableTopic,
    ReassignableTopicResult,
)
from rackwise.image import ConfigResource
from rackwise.protocol import ApiKey, error_name, make, response_class, response_to
from rackwise.records import ZERO_UUID

NONE: Final = 0
UNKNOWN_CONFIG_TYPE: Final = 0


def _response(body: Any, values: dict[str, Any]) -> Any:
    """The response class of ``body``'s API and version, built from ``values``."""
    values.setdefault("throttle_time", 0)
    return response_to(body, values)


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
) -> Any:
    if reply is None:
        failure = error or ApiError(-1, None)
        return _response(body, {"error_code": failure.error_code, "broker_epoch": -1})
    return _response(body, {"error_code": NONE, "broker_epoch": reply.broker_epoch})


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
) -> Any:
    if reply is None:
        failure = error or ApiError(-1, None)
        return _response(
            body,
            {
                "error_code": failure.error_code,
                "is_caught_up": False,
                "is_fenced": True,
                "should_shut_down": False,
            },
        )
    return _response(
        body,
        {
            "error_code": NONE,
            "is_caught_up": reply.is_caught_up,
            "is_fenced": reply.is_fenced,
            "should_shut_down": reply.should_shut_down,
        },
    )


# ---- partitions (KIP-497) ------------------------------------------------------------------


def alter_partition_args(body: Any) -> AlterPartitionRequest:
    """An AlterPartition v2 or v3 (v2's ISR members have no broker epochs)."""
    topics = []
    for topic in body.topics:
        partitions = []
        for p in topic.partitions:
            if hasattr(p, "new_isr_with_epochs"):
                isr = tuple(
                    IsrMember(int(m.broker_id), int(m.broker_epoch)) for m in p.new_isr_with_epochs
                )
            else:
                isr = tuple(IsrMember(int(b)) for b in p.new_isr)
            partitions.append(
                AlterPartitionData(
                    partition_index=int(p.partition_index),
                    leader_epoch=int(p.leader_epoch),
                    partition_epoch=int(p.partition_epoch),
                    new_isr=isr,
                    leader_recovery_state=int(p.leader_recovery_state),
                )
            )
        topics.append(AlterPartitionTopic(topic.topic_id or ZERO_UUID, tuple(partitions)))
    return AlterPartitionRequest(int(body.broker_id), int(body.broker_epoch), tuple(topics))


def alter_partition_response(body: Any, results: Iterable[AlterPartitionTopicResult]) -> Any:
    return _response(
        body,
        {
            "error_code": NONE,
            "topics": [
                {
                    "topic_id": t.topic_id,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": p.error_code,
                            "leader_id": p.leader_id,
                            "leader_epoch": p.leader_epoch,
                            "isr": list(p.isr),
                            "leader_recovery_state": p.leader_recovery_state,
                            "partition_epoch": p.partition_epoch,
                        }
                        for p in t.partitions
                    ],
                }
                for t in results
            ],
        },
    )


def alter_partition_error(body: Any, error: ApiError) -> Any:
    """The whole request refused (Kafka's ``AlterPartitionRequest.getErrorResponse``): the
    error at the top level, no topics."""
    return _response(body, {"error_code": error.error_code, "topics": []})


# ---- producer ids -----------------------------------------------------------------------------


def allocate_producer_ids_args(body: Any) -> tuple[int, int]:
    """An AllocateProducerIds request: (broker id, broker epoch)."""
    return int(body.broker_id), int(body.broker_epoch)


def allocate_producer_ids_response(body: Any, block: ProducerIdsBlock) -> Any:
    return _response(
        body,
        {
            "error_code": NONE,
            "producer_id_start": block.first_producer_id,
            "producer_id_len": block.size,
        },
    )


def allocate_producer_ids_error(body: Any, error: ApiError) -> Any:
    """Kafka's ``AllocateProducerIdsRequest.getErrorResponse``: the error, an empty block."""
    return _response(
        body, {"error_code": error.error_code, "producer_id_start": 0, "producer_id_len": 0}
    )


# ---- topics ----------------------------------------------------------------------------------


def create_topics_args(body: Any) -> list[CreatableTopic]:
    topics = []
    for topic in body.topics:
        assignments = (
            {int(a.partition_index): tuple(int(b) for b in a.broker_ids) for a in topic.assignments}
            if topic.assignments
            else None
        )
        topics.append(
            CreatableTopic(
                name=str(topic.name),
                num_partitions=int(topic.num_partitions),
                replication_factor=int(topic.replication_factor),
                assignments=assignments,
                configs={str(c.name): c.value for c in topic.configs},
            )
        )
    return topics


def create_topics_response(body: Any, results: Sequence[CreatableTopicResult]) -> Any:
    return _response(body, {"topics": [_topic_result(r) for r in results]})


def create_topics_error(body: Any, error: ApiError) -> Any:
    """Every topic of the request failed with ``error`` (Kafka answers per topic)."""
    return create_topics_response(body, [CreatableTopicResult(t.name, error) for t in body.topics])


def _topic_result(result: CreatableTopicResult) -> dict[str, Any]:
    return {
        "name": result.name,
        "topic_id": result.topic_id,
        "error_code": result.error.error_code,
        "error_message": result.error.message,
        "topic_config_error_code": NONE,
        "num_partitions": result.num_partitions,
        "replication_factor": result.replication_factor,
        "configs": [
            {
                "name": e.name,
                "value": e.value,
                "read_only": e.is_read_only,
                "config_source": int(e.source),
                "is_sensitive": e.is_sensitive,
            }
            for e in result.configs
        ],
    }


def create_partitions_args(body: Any) -> list[CreatePartitionsTopic]:
    return [
        CreatePartitionsTopic(
            name=str(t.name),
            count=int(t.count),
            assignments=(
                None
                if t.assignments is None
                else tuple(tuple(int(b) for b in a.broker_ids) for a in t.assignments)
            ),
        )
        for t in body.topics
    ]


def create_partitions_response(body: Any, results: Iterable[CreatePartitionsTopicResult]) -> Any:
    return _response(
        body,
        {
            "results": [
                {"name": r.name, "error_code": r.error.error_code, "error_message": r.error.message}
                for r in results
            ]
        },
    )


def create_partitions_error(body: Any, error: ApiError) -> Any:
    return create_partitions_response(
        body, [CreatePartitionsTopicResult(t.name, error) for t in body.topics]
    )


def delete_topics_args(body: Any) -> tuple[list[str], list[uuid.UUID]]:
    """The names and the ids to delete (before v6 every topic is named)."""
    if hasattr(body, "topic_names"):
        return [str(n) for n in body.topic_names], []
    names: list[str] = []
    ids: list[uuid.UUID] = []
    for topic in body.topics:
        if topic.name is not None:
            names.append(str(topic.name))
        elif topic.topic_id is not None:
            ids.append(topic.topic_id)
    return names, ids


def delete_topics_response(body: Any, results: Iterable[DeletableTopicResult]) -> Any:
    return _response(
        body,
        {
            "responses": [
                {
                    "name": r.name,
                    "topic_id": r.topic_id,
                    "error_code": r.error.error_code,
                    "error_message": r.error.message,
                }
                for r in results
            ]
        },
    )


def delete_topics_error(body: Any, error: ApiError) -> Any:
    names, ids = delete_topics_args(body)
    results = [DeletableTopicResult(n, ZERO_UUID, error) for n in names]
    results += [DeletableTopicResult(None, i, error) for i in ids]
    return delete_topics_response(body, results)


# ---- placement (KIP-879) ---------------------------------------------------------------------


def replica_placement_args(body: Any) -> CreateReplicaPlacementRequest:
    return CreateReplicaPlacementRequest(
        num_partitions=int(body.num_partitions),
        replication_factor=int(body.replication_factor),
        force_simple_placement=bool(body.force_simple_placement),
        node_ids=tuple(int(n) for n in body.node_id),
    )


def replica_placement_response(body: Any, reply: CreateReplicaPlacementResponse) -> Any:
    return make(
        response_class(ApiKey.CREATE_REPLICA_PLACEMENT, int(type(body).__version__)),
        replica_placement=[
            {"partition_id": i, "replicas": list(replicas)}
            for i, replicas in enumerate(reply.placements)
        ],
        error_code=reply.error.error_code,
        error_message=reply.error.message,
        throttle_time_ms=0,
    )


# ---- configs ---------------------------------------------------------------------------------


def describe_configs_args(body: Any) -> dict[ConfigResource, tuple[str, ...] | None]:
    return {
        ConfigResource(int(r.resource_type), str(r.resource_name)): (
            None if r.configuration_keys is None else tuple(str(k) for k in r.configuration_keys)
        )
        for r in body.resources
    }


def describe_configs_response(body: Any, results: Iterable[DescribeConfigsResult]) -> Any:
    return _response(
        body,
        {
            "results": [
                {
                    "error_code": r.error.error_code,
                    "error_message": r.error.message,
                    "resource_type": r.resource.resource_type,
                    "resource_name": r.resource.name,
                    "configs": [
                        {
                            "name": e.name,
                            "value": e.value,
                            "read_only": e.is_read_only,
                            "is_default": e.is_default,
                            "config_source": int(e.source),
                            "is_sensitive": e.is_sensitive,
                            "synonyms": [],
                            "config_type": UNKNOWN_CONFIG_TYPE,
                            "documentation": None,
                        }
                        for e in r.entries
                    ],
                }
                for r in results
            ]
        },
    )


def alter_configs_args(body: Any) -> dict[ConfigResource, tuple[AlterableConfig, ...]]:
    """The changes by resource; an unknown operation raises InvalidRequestException."""
    changes = {}
    for r in body.resources:
        configs = []
        for c in r.configs:
            try:
                op = AlterConfigOp(int(c.config_operation))
            except ValueError:
                raise InvalidRequestException(
                    f"Unknown alter config operation {int(c.config_operation)} for {c.name}"
                ) from None
            configs.append(AlterableConfig(str(c.name), op, c.value))
        changes[ConfigResource(int(r.resource_type), str(r.resource_name))] = tuple(configs)
    return changes


def alter_configs_response(body: Any, results: Iterable[AlterConfigsResourceResult]) -> Any:
    return _response(
        body,
        {
            "responses": [
                {
                    "error_code": r.error.error_code,
                    "error_message": r.error.message,
                    "resource_type": r.resource.resource_type,
                    "resource_name": r.resource.name,
                }
                for r in results
            ]
        },
    )


def alter_configs_error(body: Any, error: ApiError) -> Any:
    return alter_configs_response(
        body,
        [
            AlterConfigsResourceResult(
                ConfigResource(int(r.resource_type), str(r.resource_name)), error
            )
            for r in body.resources
        ],
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
) -> Any:
    """The per-partition codes in the request's shape; with ``error``, it alone at the top."""
    return _response(
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


# ---- partition reassignment -------------------------------------------------------------------


def alter_partition_reassignments_args(body: Any) -> tuple[list[ReassignableTopic], bool]:
    """The topics and KIP-860's ``allow_replication_factor_change`` (true before v1)."""
    topics = [
        ReassignableTopic(
            name=str(t.name),
            partitions=tuple(
                ReassignablePartition(
                    int(p.partition_index),
                    None if p.replicas is None else tuple(int(b) for b in p.replicas),
                )
                for p in t.partitions
            ),
        )
        for t in body.topics
    ]
    return topics, bool(getattr(body, "allow_replication_factor_change", True))


def alter_partition_reassignments_response(
    body: Any, results: Iterable[ReassignableTopicResult], error: ApiError | None = None
) -> Any:
    """Per partition results; ``error`` (a request-wide failure) goes to the top-level error
    and every partition, as Kafka's ``getErrorResponse`` does."""
    top = error or ApiError()
    return _response(
        body,
        {
            "allow_replication_factor_change": bool(
                getattr(body, "allow_replication_factor_change", True)
            ),
            "error_code": top.error_code,
            "error_message": top.message,
            "responses": [
                {
                    "name": r.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": p.error.error_code,
                            "error_message": p.error.message,
                        }
                        for p in r.partitions
                    ],
                }
                for r in results
            ],
        },
    )


def alter_partition_reassignments_error(body: Any, error: ApiError) -> Any:
    results = [
        ReassignableTopicResult(
            str(t.name),
            tuple(ReassignablePartitionResult(int(p.partition_index), error) for p in t.partitions),
        )
        for t in body.topics
    ]
    return alter_partition_reassignments_response(body, results, error)


def list_partition_reassignments_args(body: Any) -> list[ListPartitionReassignmentsTopic] | None:
    """The topics asked about; None lists every reassignment in progress."""
    if body.topics is None:
        return None
    return [
        ListPartitionReassignmentsTopic(str(t.name), tuple(int(p) for p in t.partition_indexes))
        for t in body.topics
    ]


def list_partition_reassignments_response(
    body: Any, topics: Iterable[OngoingTopicReassignment], error: ApiError | None = None
) -> Any:
    top = error or ApiError()
    return _response(
        body,
        {
            "error_code": top.error_code,
            "error_message": top.message,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "replicas": list(p.replicas),
                            "adding_replicas": list(p.adding_replicas),
                            "removing_replicas": list(p.removing_replicas),
                        }
                        for p in t.partitions
                    ],
                }
                for t in topics
            ],
        },
    )


def list_partition_reassignments_error(body: Any, error: ApiError) -> Any:
    return list_partition_reassignments_response(body, [], error)


# ---- leader elections (KIP-460) ---------------------------------------------------------------


def elect_leaders_args(body: Any) -> tuple[ElectionType, dict[str, list[int]] | None]:
    """The election (PREFERRED before v1, which has no ``election_type``) and the partitions
    named by topic; None for every partition."""
    election = ElectionType.of(int(getattr(body, "election_type", ElectionType.PREFERRED)))
    if body.topic_partitions is None:
        return election, None
    topics: dict[str, list[int]] = {}
    for topic in body.topic_partitions:
        topics.setdefault(str(topic.topic), []).extend(int(p) for p in topic.partitions)
    return election, topics


def elect_leaders_response(
    body: Any,
    results: Iterable[tuple[str, Sequence[tuple[int, int, str | None]]]],
    error: ApiError | None = None,
) -> Any:
    return _response(
        body,
        {
            "error_code": error.error_code if error is not None else NONE,
            "replica_election_results": [
                {
                    "topic": topic,
                    "partition_result": [
                        {"partition_id": p, "error_code": code, "error_message": message}
                        for p, code, message in partitions
                    ],
                }
                for topic, partitions in results
            ],
        },
    )


def elect_leaders_error(body: Any, error: ApiError) -> Any:
    """Every named partition with ``error``, and ``error`` at the top (Kafka's
    ``ElectLeadersRequest.getErrorResponse``)."""
    results = [
        (str(t.topic), [(int(p), error.error_code, error.message) for p in t.partitions])
        for t in body.topic_partitions or ()
    ]
    return elect_leaders_response(body, results, error)


def legacy_alter_configs_args(body: Any) -> dict[ConfigResource, dict[str, str]]:
    """AlterConfigs (33) as the controller takes it: each resource's whole new set of keys (a
    key with a null value is left out, so deleted; a broker refuses such a request before)."""
    return {
        ConfigResource(int(r.resource_type), str(r.resource_name)): {
            str(c.name): str(c.value) for c in r.configs if c.value is not None
        }
        for r in body.resources
    }
