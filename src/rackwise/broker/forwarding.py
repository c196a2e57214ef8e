"""Forwarding admin writes from a broker to the active controller (Kafka's ``ForwardingManager``,
without the envelope: the same request goes on at a version both ends speak).

Goals
    A client may send CreateTopics, CreatePartitions, DeleteTopics, CreateReplicaPlacement,
    AlterPartitionReassignments or ListPartitionReassignments to any broker (and
    IncrementalAlterConfigs or AlterConfigs, which the broker checks first:
    :mod:`rackwise.broker.alter_configs`); the broker passes it to the controller and answers
    with the controller's answer, in the client's version. Once a write succeeded, the broker
    waits (a short while at most) until its own image shows it, so that the client's next
    Metadata request to this broker sees the topic it just created, as a client of Kafka
    expects.

Constraints
    * The request is converted field by field (:func:`convert`), never reinterpreted: the
      controller is the one judge of a write.
    * A controller that cannot be reached is retried, the request kept, until the request's
      own timeout (``timeout_ms``, at least :data:`MIN_RETRY_S` and at most
      :data:`MAX_RETRY_S`), as Kafka's ``NodeToControllerRequestThread`` keeps a request queued
      until its retry timeout (60 s for forwarding, whatever the request's own): a controller
      restart within it loses no write. Past it, each item is REQUEST_TIMED_OUT (7), as Kafka
      answers a forwarded request that timed out. A controller lost after the request went
      out may have applied it: the retry then gets the controller's answer to a repeat (a
      topic created twice is TOPIC_ALREADY_EXISTS), as with Kafka.
    * A request is converted, encoded, and its answer decoded and converted back on worker
      threads (:func:`off_the_loop`, ``off_loop`` of
      :meth:`~rackwise.net.KafkaConnection.send`, and the connection's own rule for a large
      answer): the loop keeps answering other connections while a huge CreateTopics passes.
    * The pure parts (conversion, error answers, the "has the image caught up" predicates) take
      messages and images; :class:`Forwarder` holds the connection.

Algorithm
    Version: the highest both the broker's table and the controller's ApiVersions allow, no
    higher than the client's. The answer is converted back to the client's version. The wait
    predicate of a write is built from the request and the answer: every topic created is in
    the image with its partitions, every topic deleted is gone, every topic grown has its new
    count, every partition reassigned is headed for its target (a cancelled one reassigning no
    more). Retries back off from :data:`RETRY_BACKOFF_S`, doubling to :data:`MAX_RETRY_BACKOFF_S`,
    and never sleep past the deadline.

Worked example
    kafka-python sends CreateTopics v7 for ``t`` (3 partitions); the controller speaks 2-7, so
    v7 goes on unchanged; it answers ``t`` with error 0 and 3 partitions; the broker waits until
    its image has ``t`` with 3 partitions (milliseconds: its fetch is a long poll the
    controller wakes on commit), then answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeVar

from rackwise.broker.alter_configs import alter_configs_error, configs_applied
from rackwise.broker.controller_channel import carries_not_controller
from rackwise.common.error_codes import (
    NONE,
    REQUEST_TIMED_OUT,
    UNKNOWN_SERVER_ERROR,
    UNSUPPORTED_VERSION,
)
from rackwise.image import MetadataImage
from rackwise.net import (
    ConnectionSlot,
    KafkaConnection,
    NetworkException,
    RequestTimedOutException,
)
from rackwise.node import acl_apis
from rackwise.protocol import (
    ApiKey,
    MessageEncodeError,
    ProtocolError,
    Response,
    UnsupportedVersionException,
    make,
    request_class,
    response_class,
)
from rackwise.protocol.values import with_required
from rackwise.security.acl import AclBinding

LOG: Final = logging.getLogger("rackwise.broker.forwarding")


FORWARDED: Final = frozenset(
    {
        ApiKey.CREATE_TOPICS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.DELETE_TOPICS,
        ApiKey.CREATE_REPLICA_PLACEMENT,
        ApiKey.DESCRIBE_QUORUM,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        ApiKey.ELECT_LEADERS,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    }
)
"""The client APIs a broker forwards to the controller (and, with an authorizer, CreateAcls
and DeleteAcls: :mod:`rackwise.broker.requests`)."""
DEFAULT_APPLY_WAIT_S: Final = 5.0
"""The longest a broker waits for its image to show a forwarded write it answers."""
EXTRA_TIMEOUT_S: Final = 5.0
"""Time allowed beyond a request's own timeout for the controller's answer."""
DEFAULT_TIMEOUT_MS: Final = 30_000
"""The timeout of a forwarded request that has none (CreateReplicaPlacement)."""
MIN_RETRY_S: Final = 1.0
"""The shortest time a forwarded request is retried for (a CreateTopics may say 0 ms)."""
MAX_RETRY_S: Final = 60.0
"""The longest time a forwarded request is retried for, whatever timeout it asks (Kafka's
broker keeps every forwarded request this long)."""
RETRY_BACKOFF_S: Final = 0.05
"""The first wait before trying an unreachable controller again; doubled on each failure."""
MAX_RETRY_BACKOFF_S: Final = 1.0
"""The longest wait between two tries of an unreachable controller."""

ImagePredicate = Callable[[MetadataImage], bool]


# ---- pure parts ------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A message (or part of one) as plain values :func:`rackwise.protocol.make` takes back."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    return value


M = TypeVar("M")


def convert(message: Any, cls: type[M]) -> M:
    """``message`` as an instance of ``cls`` (the same API at another version, or the same
    class): fields ``cls`` lacks are dropped, fields it adds take their defaults."""
    if type(message) is cls:
        same: M = message
        return same
    values = plain(message)
    if int(getattr(cls, "__api_key__", -1)) == ApiKey.DELETE_TOPICS:
        values = _delete_topics_values(values, int(cls.__version__))  # type: ignore[attr-defined]
    return make(cls, with_required(cls, values))


def _delete_topics_values(values: dict[str, Any], version: int) -> dict[str, Any]:
    """DeleteTopics names topics in ``topic_names`` before v6 and in ``topics`` from v6."""
    if version >= 6 and "topic_names" in values:
        values["topics"] = [{"name": n, "topic_id": None} for n in values.pop("topic_names")]
    elif version < 6 and "topics" in values:
        values["topic_names"] = [t["name"] for t in values.pop("topics") if t.get("name")]
    return values


def error_response(request: Any, error_code: int, message: str | None) -> Response:
    """The answer giving every item of a forwarded ``request`` the same error (Kafka's
    ``AbstractRequest.getErrorResponse``)."""
    cls = type(request)
    api_key = int(cls.__api_key__)
    version = int(cls.__version__)
    response = response_class(api_key, version)
    item: dict[str, Any] = {"error_code": error_code, "error_message": message}
    values: dict[str, Any]
    if api_key == ApiKey.CREATE_TOPICS:
        values = {"topics": [{"name": t.name, "topic_id": None, **item} for t in request.topics]}
    elif api_key == ApiKey.CREATE_PARTITIONS:
        values = {"results": [{"name": t.name, **item} for t in request.topics]}
    elif api_key == ApiKey.DELETE_TOPICS:
        if version >= 6:
            named = [{"name": t.name, "topic_id": t.topic_id} for t in request.topics]
        else:
            named = [{"name": n, "topic_id": None} for n in request.topic_names]
        values = {"responses": [{**n, **item} for n in named]}
    elif api_key == ApiKey.CREATE_REPLICA_PLACEMENT:
        values = {"throttle_time_ms": 0, "replica_placement": [], **item}
    elif api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        values = {
            **item,
            "responses": [
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p.partition_index, **item} for p in t.partitions
                    ],
                }
                for t in request.topics
            ],
        }
    elif api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
        values = {**item, "topics": []}
    elif api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        return alter_configs_error(request, error_code, message)
    elif api_key == ApiKey.CREATE_ACLS:
        return acl_apis.create_acls_error(request, error_code, message)
    elif api_key == ApiKey.DELETE_ACLS:
        return acl_apis.delete_acls_error(request, error_code, message)
    elif api_key == ApiKey.DESCRIBE_QUORUM:
        values = {"topics": [], "nodes": [], **item}
    elif api_key == ApiKey.ELECT_LEADERS:
        values = {
            "error_code": error_code,
            "replica_election_results": [
                {
                    "topic": t.topic,
                    "partition_result": [{"partition_id": p, **item} for p in t.partitions],
                }
                for t in request.topic_partitions or ()
            ],
        }
    elif api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        users = [d.name for d in request.deletions] + [u.name for u in request.upsertions]
        values = {"results": [{"user": user, **item} for user in dict.fromkeys(users)]}
    else:
        raise ValueError(f"BUG: api key {api_key} is not forwarded")
    return make(response, with_required(response, values))


def _ok(item: Any) -> bool:
    return int(item.error_code) == NONE


def applied_predicate(request: Any, response: Any) -> ImagePredicate | None:
    """What the image must show once the successful writes of ``response`` are applied, or
    None when nothing was written (validation only, every item failed, a placement)."""
    api_key = int(type(request).__api_key__)
    if getattr(request, "validate_only", False):
        return None
    if api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        return configs_applied(request, response)
    if api_key == ApiKey.CREATE_TOPICS:
        created = {t.name: int(getattr(t, "num_partitions", -1)) for t in response.topics if _ok(t)}
        if not created:
            return None
        return lambda image: all(
            (topic := image.topic(name)) is not None and len(topic.partitions) >= max(count, 1)
            for name, count in created.items()
        )
    if api_key == ApiKey.CREATE_PARTITIONS:
        counts = {t.name: int(t.count) for t in request.topics}
        grown = {r.name: counts.get(r.name, 0) for r in response.results if _ok(r)}
        if not grown:
            return None
        return lambda image: all(
            (topic := image.topic(name)) is not None and len(topic.partitions) >= count
            for name, count in grown.items()
        )
    if api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        return _reassigned_predicate(request, response)
    if api_key in (ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
        return _acls_predicate(request, response)
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        return _scram_predicate(request, response)
    if api_key == ApiKey.DELETE_TOPICS:
        names = {r.name for r in response.responses if _ok(r) and r.name}
        ids = {r.topic_id for r in response.responses if _ok(r) and getattr(r, "topic_id", None)}
        if not names and not ids:
            return None
        return lambda image: (
            not any(n in image.topics_by_name for n in names)
            and not any(i in image.topics_by_id for i in ids)
        )
    return None


def _acls_predicate(request: Any, response: Any) -> ImagePredicate | None:
    """Every ACL created is in the image, every ACL deleted is gone from it."""
    if int(type(request).__api_key__) == ApiKey.CREATE_ACLS:
        created = {
            b
            for b, r in zip(acl_apis.creations_of(request), response.results, strict=False)
            if _ok(r) and isinstance(b, AclBinding)
        }
        if not created:
            return None
        return lambda image: created <= set(image.acls.values())
    gone = {acl_apis.binding_of_match(m) for r in response.filter_results for m in r.matching_acls}
    if not gone:
        return None
    return lambda image: not gone & set(image.acls.values())


def _scram_predicate(request: Any, response: Any) -> ImagePredicate | None:
    """Each credential upserted is in the image with its iterations, each one deleted gone."""
    done = {r.user for r in response.results if _ok(r)}
    kept = {(u.name, int(u.mechanism)): int(u.iterations) for u in request.upsertions}
    wanted = {key: i for key, i in kept.items() if key[0] in done}
    gone = {(d.name, int(d.mechanism)) for d in request.deletions if d.name in done}
    if not wanted and not gone:
        return None
    return lambda image: (
        all(
            (c := image.scram_credentials.get(key)) is not None and c.iterations == i
            for key, i in wanted.items()
        )
        and not any(key in image.scram_credentials for key in gone)
    )


def _reassigned_predicate(request: Any, response: Any) -> ImagePredicate | None:
    """Each partition reassigned is headed for its target (replicas less those being removed:
    true from the first record of the reassignment on), each one cancelled is reassigning no
    more."""
    accepted = {
        (t.name, int(p.partition_index)) for t in response.responses for p in t.partitions if _ok(p)
    }
    targets = {
        (t.name, int(p.partition_index)): (
            None if p.replicas is None else tuple(int(b) for b in p.replicas)
        )
        for t in request.topics
        for p in t.partitions
        if (t.name, int(p.partition_index)) in accepted
    }
    if not targets:
        return None

    def shows(image: MetadataImage) -> bool:
        for (name, index), replicas in targets.items():
            topic = image.topic(name)
            partition = None if topic is None else topic.partitions.get(index)
            if partition is None:
                return False
            removing = set(partition.removing_replicas)
            if replicas is None and (partition.adding_replicas or removing):
                return False
            heading = tuple(r for r in partition.replicas if r not in removing)
            if replicas is not None and heading != replicas:
                return False
        return True

    return shows


def forward_version(
    api_key: int, client_version: int, controller: Mapping[int, tuple[int, int]]
) -> int:
    """The version to forward a request of ``client_version`` at: the client's, or the highest
    the controller speaks below it; raises UnsupportedVersionException when there is none."""
    low, high = controller.get(api_key, (0, -1))
    version = min(client_version, high)
    if version < low:
        raise UnsupportedVersionException(
            f"the controller speaks versions {low}-{high} of api key {api_key}, "
            f"the client sent version {client_version}"
        )
    return version


def request_timeout_s(request: Any) -> float:
    """The timeout ``request`` carries (``timeout`` or ``timeout_ms``), in seconds."""
    timeout = getattr(request, "timeout", None)
    if timeout is None:
        return int(getattr(request, "timeout_ms", DEFAULT_TIMEOUT_MS)) / 1000
    if isinstance(timeout, int | float):
        return float(timeout) / 1000
    return float(timeout.total_seconds())


def retry_window_s(request: Any) -> float:
    """How long a forwarded ``request`` is retried while the controller cannot be reached:
    its own timeout, within :data:`MIN_RETRY_S` and :data:`MAX_RETRY_S`."""
    return min(max(request_timeout_s(request), MIN_RETRY_S), MAX_RETRY_S)


# ---- the connection ---------------------------------------------------------------------------


async def off_the_loop(message: Any, cls: type[M]) -> M:
    """:func:`convert` ``(message, cls)``, on a worker thread unless there is nothing to do: a
    forwarded request of 100,000 topics takes seconds to convert, and the loop answers the
    other connections meanwhile."""
    if type(message) is cls:
        same: M = message
        return same
    return await asyncio.to_thread(convert, message, cls)


Connector = Callable[[], Awaitable[KafkaConnection]]


class Forwarder:
    """Forwards requests over one connection to the controller (opened on first use, and
    again after it breaks); requests from many clients are pipelined on it."""

    def __init__(
        self,
        connect: Connector,
        wait_applied: Callable[[ImagePredicate, float], Awaitable[bool]],
        *,
        apply_wait_s: float = DEFAULT_APPLY_WAIT_S,
    ) -> None:
        self.wait_applied = wait_applied
        self.apply_wait_s = apply_wait_s
        self._controller = ConnectionSlot(connect)

    async def forward(self, request: Any) -> Response:
        """The controller's answer to ``request``, in ``request``'s version, once this broker's
        image shows its writes (or :attr:`apply_wait_s` has passed); while the controller
        cannot be reached, or answers NOT_CONTROLLER (the quorum's leader changed), retried
        until :func:`retry_window_s` has passed. A write the old leader appended and the new
        one committed is refused on its retry as a duplicate (TOPIC_ALREADY_EXISTS for a
        CreateTopics), never applied twice, as with Kafka."""
        cls = type(request)
        api_key = int(cls.__api_key__)
        version = int(cls.__version__)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + retry_window_s(request)
        backoff = RETRY_BACKOFF_S
        failures = 0
        while True:
            try:
                answer = await self._send(request, deadline)
                if not carries_not_controller(answer) or loop.time() >= deadline:
                    break
                # The leader changed under the request: the channel finds the new one.
                raise NetworkException("the controller answered NOT_CONTROLLER")
            except RequestTimedOutException as e:
                return error_response(request, REQUEST_TIMED_OUT, str(e))
            except UnsupportedVersionException as e:
                return error_response(request, UNSUPPORTED_VERSION, str(e))
            except MessageEncodeError as e:
                LOG.error("forwarding %s v%d: %s", cls.__name__, version, e)
                return error_response(request, UNKNOWN_SERVER_ERROR, str(e))
            except (NetworkException, ProtocolError) as e:
                failures += 1
                await self._drop(is_broken=isinstance(e, ProtocolError))
                remaining = deadline - loop.time()
                if remaining <= 0:
                    LOG.info(
                        "forwarding %s v%d timed out after %d tries: %s",
                        cls.__name__,
                        version,
                        failures,
                        e,
                    )
                    return error_response(
                        request,
                        REQUEST_TIMED_OUT,
                        f"The controller was not reachable within the request's timeout: {e}",
                    )
                if failures == 1:
                    LOG.info(
                        "forwarding %s v%d: controller unreachable, retrying: %s",
                        cls.__name__,
                        version,
                        e,
                    )
                await asyncio.sleep(min(backoff, remaining))
                backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
        if failures:
            LOG.info("forwarded %s v%d after %d failed tries", cls.__name__, version, failures)
        response = await off_the_loop(answer, response_class(api_key, version))
        predicate = applied_predicate(request, response)
        if predicate is not None and not await self.wait_applied(predicate, self.apply_wait_s):
            LOG.info("%s answered before this broker's image showed it", cls.__name__)
        return response

    async def _send(self, request: Any, deadline: float) -> Response:
        """One try: connect if need be (no later than ``deadline``) and send ``request`` at the
        version both ends speak; the controller's answer, in that version."""
        cls = type(request)
        api_key = int(cls.__api_key__)
        remaining = deadline - asyncio.get_running_loop().time()
        try:
            async with asyncio.timeout(max(remaining, 0.0)):
                connection = await self._controller.get()
        except (TimeoutError, RequestTimedOutException) as e:
            # Not the controller's answer timing out: the controller is not reachable yet.
            raise NetworkException(f"connecting to the controller timed out: {e}") from None
        target = forward_version(api_key, int(cls.__version__), connection.api_versions)
        outgoing: object = await off_the_loop(request, request_class(api_key, target))
        answer: Response = await connection.send(
            outgoing, timeout_s=request_timeout_s(request) + EXTRA_TIMEOUT_S, off_loop=True
        )
        return answer

    async def _drop(self, *, is_broken: bool) -> None:
        """Forget the connection once closed, or when ``is_broken`` (the next try opens
        another); one another request just opened is left alone."""
        await self._controller.drop(only_if_closed=not is_broken)

    async def close(self) -> None:
        await self._controller.drop()
