"""What each API needs of the authorizer, one gate per API key, both listeners' (Kafka's
``KafkaApis`` and ``ControllerApis`` checks; ``AuthorizerIntegrationTest`` lists them).

Goals
    A listener runs the gate of a request's API before answering it (:func:`judge`): the
    request passes whole, is refused whole (one error code for every item, in the request's
    own shape), or passes in part: the items the caller may touch are answered, the others
    get their error, merged into one response as Kafka answers a partly authorized request.

Constraints
    * Pure: a gate reads the request and the caller's :class:`~rackwise.node.authorization.Check`
      (and the image, to name a topic given by id); the listener builds the error answers and
      runs the answer.
    * Produce, Fetch and Metadata are judged per topic inside their handlers (their bodies are
      the broker's own), with the predicates the check gives.
    * Codes are Kafka's: CLUSTER_AUTHORIZATION_FAILED for a cluster operation,
      GROUP_AUTHORIZATION_FAILED for a group, TOPIC_AUTHORIZATION_FAILED ("Authorization
      failed.") per topic, TRANSACTIONAL_ID_AUTHORIZATION_FAILED for a transactional id.

Worked example
    A CreateTopics of ``a`` and ``b`` from a principal with CREATE on the topic ``a`` only
    (none on the cluster): the gate gives ``Split(allowed=<CreateTopics of a>,
    refused=[(<CreateTopics of b>, 29, "Authorization failed.")], field="topics")``; the broker
    forwards the first, builds the error answer of the second, and answers both topics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.common.acl import AclOperation
from rackwise.common.error_codes import (
    CLUSTER_AUTHORIZATION_FAILED,
    GROUP_AUTHORIZATION_FAILED,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
)
from rackwise.image import MetadataImage
from rackwise.node.authorization import AUTHORIZATION_FAILED, Check
from rackwise.protocol import ApiKey, Response, make, response_class
from rackwise.protocol.values import with_required
from rackwise.security.acl import ResourceType

TOPIC_CONFIG: Final = 2
BROKER_CONFIG: Final = 4
BROKER_LOGGER_CONFIG: Final = 8


@dataclass(frozen=True, slots=True)
class Refuse:
    """The whole request refused with one error."""

    error_code: int
    message: str | None = None


@dataclass(frozen=True, slots=True)
class Split:
    """Part of the request allowed (None: nothing), the rest refused by groups: a body of the
    refused items with their error each; ``field`` is the response's list of items."""

    allowed: Any | None
    refused: list[tuple[Any, int, str | None]]
    field: str


Verdict = Refuse | Split | None
"""None: the request passes whole."""
Gate = Callable[[Check, Any, MetadataImage], Verdict]


def _cluster(operation: AclOperation) -> Gate:
    def gate(check: Check, _body: Any, _image: MetadataImage) -> Verdict:
        return None if check.may_cluster(operation) else Refuse(CLUSTER_AUTHORIZATION_FAILED)

    return gate


def _group(operation: AclOperation, attribute: str = "group_id") -> Gate:
    def gate(check: Check, body: Any, _image: MetadataImage) -> Verdict:
        if check.may(operation, ResourceType.GROUP, str(getattr(body, attribute))):
            return None
        return Refuse(GROUP_AUTHORIZATION_FAILED)

    return gate


def split(
    body: Any,
    items_field: str,
    response_field: str,
    code_of: Callable[[Any], int | None],
    message: str | None = AUTHORIZATION_FAILED,
) -> Verdict:
    """The verdict on ``body`` whose items are ``body.<items_field>``: ``code_of`` an item's
    error, None where it is allowed."""
    items: Sequence[Any] = getattr(body, items_field) or ()
    allowed = []
    refused: dict[int, list[Any]] = {}
    for item in items:
        code = code_of(item)
        if code is None:
            allowed.append(item)
        else:
            refused.setdefault(code, []).append(item)
    if not refused:
        return None
    keep = dataclasses.replace(body, **{items_field: tuple(allowed)}) if allowed else None
    groups = [
        (dataclasses.replace(body, **{items_field: tuple(group)}), code, message)
        for code, group in refused.items()
    ]
    return Split(keep, groups, response_field)


def _topics(operation: AclOperation, items: str, field: str, *, name: str = "name") -> Gate:
    def gate(check: Check, body: Any, _image: MetadataImage) -> Verdict:
        if operation == AclOperation.CREATE and check.may_cluster(AclOperation.CREATE):
            return None
        may = check.may_topic(operation)
        return split(
            body, items, field, lambda t: None if may(str(getattr(t, name))) else _TOPIC_DENIED
        )

    return gate


_TOPIC_DENIED: Final = TOPIC_AUTHORIZATION_FAILED


def _delete_topics(check: Check, body: Any, image: MetadataImage) -> Verdict:
    may = check.may_topic(AclOperation.DELETE)
    if hasattr(body, "topic_names"):
        return split(body, "topic_names", "responses", lambda n: None if may(n) else _TOPIC_DENIED)

    def code(topic: Any) -> int | None:
        name = topic.name
        if name is None:
            known = image.topics_by_id.get(topic.topic_id)
            if known is None:
                return None  # the controller answers UNKNOWN_TOPIC_ID
            name = known.name
        return None if may(name) else _TOPIC_DENIED

    return split(body, "topics", "responses", code)


def _configs(describe: bool, field: str) -> Gate:
    topic_op = AclOperation.DESCRIBE_CONFIGS if describe else AclOperation.ALTER_CONFIGS

    def gate(check: Check, body: Any, _image: MetadataImage) -> Verdict:
        def code(resource: Any) -> int | None:
            kind = int(resource.resource_type)
            if kind == TOPIC_CONFIG:
                allowed = check.may(topic_op, ResourceType.TOPIC, resource.resource_name)
                return None if allowed else TOPIC_AUTHORIZATION_FAILED
            if kind in (BROKER_CONFIG, BROKER_LOGGER_CONFIG):
                return None if check.may_cluster(topic_op) else CLUSTER_AUTHORIZATION_FAILED
            return None

        return split(body, "resources", field, code, None)

    return gate


def _init_producer_id(check: Check, body: Any, _image: MetadataImage) -> Verdict:
    """WRITE on the transactional id, or without one IDEMPOTENT_WRITE on the cluster or WRITE
    on some topic (Kafka's ``handleInitProducerIdRequest``)."""
    transactional_id = getattr(body, "transactional_id", None)
    if transactional_id:
        if check.may(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return None
        return Refuse(TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if check.may_cluster(
        AclOperation.IDEMPOTENT_WRITE
    ) or check.authorizer.authorize_by_resource_type(
        check.principal, check.host, AclOperation.WRITE, ResourceType.TOPIC
    ):
        return None
    return Refuse(CLUSTER_AUTHORIZATION_FAILED)


def _find_coordinator(check: Check, body: Any, _image: MetadataImage) -> Verdict:
    """DESCRIBE on the group (or on the transactional id) each key names."""
    kind = int(getattr(body, "key_type", 0))
    keys = list(getattr(body, "coordinator_keys", ()) or ()) or [getattr(body, "key", "")]
    resource = ResourceType.GROUP if kind == 0 else ResourceType.TRANSACTIONAL_ID
    if all(check.may(AclOperation.DESCRIBE, resource, str(k)) for k in keys):
        return None
    return Refuse(
        GROUP_AUTHORIZATION_FAILED if kind == 0 else TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    )


def _offset_fetch(check: Check, body: Any, _image: MetadataImage) -> Verdict:
    """DESCRIBE on the group, or on every group of a v8+ request."""
    groups = [g.group_id for g in body.groups] if hasattr(body, "groups") else [body.group_id]
    if all(check.may(AclOperation.DESCRIBE, ResourceType.GROUP, str(g)) for g in groups):
        return None
    return Refuse(GROUP_AUTHORIZATION_FAILED)


def _describe_groups(check: Check, body: Any, _image: MetadataImage) -> Verdict:
    may = check.may
    return split(
        body,
        "groups",
        "groups",
        lambda g: (
            None
            if may(AclOperation.DESCRIBE, ResourceType.GROUP, g)
            else (GROUP_AUTHORIZATION_FAILED)
        ),
        None,
    )


def _consumer_group_describe(check: Check, body: Any, _image: MetadataImage) -> Verdict:
    """DESCRIBE on each group named; the others answered GROUP_AUTHORIZATION_FAILED."""
    may = check.may
    return split(
        body,
        "group_ids",
        "groups",
        lambda g: (
            None
            if may(AclOperation.DESCRIBE, ResourceType.GROUP, g)
            else GROUP_AUTHORIZATION_FAILED
        ),
    )


def _offset_commit(check: Check, body: Any, _image: MetadataImage) -> Verdict:
    """READ on the group, then READ on each topic committed."""
    if not check.may(AclOperation.READ, ResourceType.GROUP, str(body.group_id)):
        return Refuse(GROUP_AUTHORIZATION_FAILED)
    may = check.may_topic(AclOperation.READ)
    return split(body, "topics", "topics", lambda t: None if may(t.name) else _TOPIC_DENIED, None)


def _offset_for_leader_epoch(check: Check, body: Any, _image: MetadataImage) -> Verdict:
    """A follower's (``replica_id`` >= 0): CLUSTER_ACTION; a client's: DESCRIBE per topic."""
    if int(getattr(body, "replica_id", -1)) >= 0:
        trusted = check.is_trusted
        return split(body, "topics", "topics", lambda _t: None if trusted else _TOPIC_DENIED, None)
    may = check.may_topic(AclOperation.DESCRIBE)
    return split(body, "topics", "topics", lambda t: None if may(t.topic) else _TOPIC_DENIED, None)


def _delete_groups(check: Check, body: Any, _image: MetadataImage) -> Verdict:
    def code(group: str) -> int | None:
        allowed = check.may(AclOperation.DELETE, ResourceType.GROUP, group)
        return None if allowed else GROUP_AUTHORIZATION_FAILED

    return split(body, "groups_names", "results", code, None)


GATES: Final[Mapping[int, Gate]] = {
    ApiKey.CREATE_TOPICS: _topics(AclOperation.CREATE, "topics", "topics"),
    ApiKey.CREATE_PARTITIONS: _topics(AclOperation.ALTER, "topics", "results"),
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.DELETE_RECORDS: _topics(AclOperation.DELETE, "topics", "topics"),
    ApiKey.LIST_OFFSETS: _topics(AclOperation.DESCRIBE, "topics", "topics"),
    ApiKey.DESCRIBE_PRODUCERS: _topics(AclOperation.READ, "topics", "topics"),
    ApiKey.DESCRIBE_CONFIGS: _configs(True, "results"),
    ApiKey.ALTER_CONFIGS: _configs(False, "responses"),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _configs(False, "responses"),
    # CreateReplicaPlacement names no topic: it needs what a CreateTopics of an unnamed
    # topic would, CREATE on the cluster.
    ApiKey.CREATE_REPLICA_PLACEMENT: _cluster(AclOperation.CREATE),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _cluster(AclOperation.ALTER),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _cluster(AclOperation.DESCRIBE),
    ApiKey.ELECT_LEADERS: _cluster(AclOperation.ALTER),
    ApiKey.ALTER_REPLICA_LOG_DIRS: _cluster(AclOperation.ALTER),
    ApiKey.DESCRIBE_LOG_DIRS: _cluster(AclOperation.DESCRIBE),
    ApiKey.DESCRIBE_QUORUM: _cluster(AclOperation.DESCRIBE),
    ApiKey.CREATE_ACLS: _cluster(AclOperation.ALTER),
    ApiKey.DELETE_ACLS: _cluster(AclOperation.ALTER),
    ApiKey.DESCRIBE_ACLS: _cluster(AclOperation.DESCRIBE),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _cluster(AclOperation.ALTER),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _cluster(AclOperation.DESCRIBE),
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.JOIN_GROUP: _group(AclOperation.READ),
    ApiKey.SYNC_GROUP: _group(AclOperation.READ),
    ApiKey.HEARTBEAT: _group(AclOperation.READ),
    ApiKey.LEAVE_GROUP: _group(AclOperation.READ),
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.OFFSET_DELETE: _group(AclOperation.DELETE),
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _group(AclOperation.READ),
    ApiKey.CONSUMER_GROUP_DESCRIBE: _consumer_group_describe,
}
"""The gate of each API that has one; an API without one needs nothing of the authorizer."""

TRUSTED_APIS: Final = frozenset(
    {
        ApiKey.BROKER_REGISTRATION,
        ApiKey.BROKER_HEARTBEAT,
        ApiKey.ALTER_PARTITION,
        ApiKey.ALLOCATE_PRODUCER_IDS,
        ApiKey.ASSIGN_REPLICAS_TO_DIRS,
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.FETCH,
        ApiKey.FETCH_SNAPSHOT,
    }
)
"""The controller listener's APIs for brokers and voters only: CLUSTER_ACTION on the cluster
(super users, or principals granted it, such as the inter-broker one)."""


def error_answer(body: Any, error_code: int, message: str | None) -> Response:
    """The answer giving ``body``'s request ``error_code`` as a whole: the top-level error code
    (and message) where the response has one, every listed item (topic, partition, group)
    with the error where it lists them (Kafka's ``getErrorResponse`` for these APIs)."""
    cls: Any = response_class(int(type(body).__api_key__), int(type(body).__version__))
    names = {f.name for f in dataclasses.fields(cls)}
    values: dict[str, Any] = {"error_code": error_code, "error_message": message}
    if int(type(body).__api_key__) == ApiKey.OFFSET_FOR_LEADER_EPOCH:
        values["topics"] = [
            {
                "topic": t.topic,
                "partitions": [
                    {"partition": int(p.partition), "error_code": error_code, "leader_epoch": -1,
                     "end_offset": -1}
                    for p in t.partitions
                ],
            }
            for t in body.topics
        ]  # fmt: skip
    elif "topics" in names and hasattr(body, "topics"):
        values["topics"] = [
            {
                "name": getattr(t, "name", None),
                "partitions": [
                    {"partition_index": _index(p), "error_code": error_code}
                    for p in getattr(t, "partitions", ())
                ],
            }
            for t in body.topics or ()
        ]
    if "groups" in names and hasattr(body, "groups") and not isinstance(body.groups, str):
        values["groups"] = [
            {"group_id": getattr(g, "group_id", g), "error_code": error_code, "topics": []}
            for g in body.groups or ()
        ]
    if "groups" in names and hasattr(body, "group_ids"):
        values["groups"] = [
            {"group_id": g, "error_code": error_code, "error_message": message}
            for g in body.group_ids
        ]
    if "coordinators" in names:
        values["coordinators"] = [
            {
                "key": key,
                "node_id": -1,
                "host": "",
                "port": -1,
                "error_code": error_code,
                "error_message": message,
            }
            for key in getattr(body, "coordinator_keys", ()) or ()
        ]
    if "results" in names and hasattr(body, "groups_names"):
        values["results"] = [{"group_id": g, "error_code": error_code} for g in body.groups_names]
    if "results" in names and hasattr(body, "dirs"):
        values["results"] = [
            {
                "topic_name": t.name,
                "partitions": [
                    {"partition_index": int(p), "error_code": error_code} for p in t.partitions
                ],
            }
            for d in body.dirs
            for t in d.topics
        ]
    if "results" in names and hasattr(body, "upsertions"):
        users = [d.name for d in body.deletions] + [u.name for u in body.upsertions]
        values["results"] = [
            {"user": u, "error_code": error_code, "error_message": message}
            for u in dict.fromkeys(users)
        ]
    if "results" in names and hasattr(body, "resources"):
        values["results"] = [
            {
                "error_code": error_code,
                "error_message": message,
                "resource_type": int(r.resource_type),
                "resource_name": r.resource_name,
                "configs": [],
            }
            for r in body.resources
        ]
    values = {k: v for k, v in values.items() if k in names}
    answer: Response = make(cls, with_required(cls, values))
    return answer


def _index(partition: Any) -> int:
    for name in ("partition_index", "partition"):
        if hasattr(partition, name):
            return int(getattr(partition, name))
    return int(partition)


def judge(check: Check | None, api_key: int, body: Any, image: MetadataImage) -> Verdict:
    """The gate's verdict (None without an authorizer or a gate)."""
    if check is None:
        return None
    gate = GATES.get(api_key)
    return None if gate is None else gate(check, body, image)


def merge(answer: Response, refused: Sequence[Response], field: str) -> Response:
    """``answer`` with the items of each refused answer's ``field`` after its own."""
    items = list(getattr(answer, field))
    for other in refused:
        items.extend(getattr(other, field))
    merged: Response = dataclasses.replace(answer, **{field: tuple(items)})  # type: ignore[type-var]
    return merged
