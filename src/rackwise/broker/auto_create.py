"""Topic auto-creation (``auto.create.topics.enable``, Kafka's ``AutoTopicCreationManager``): a
Metadata or Produce request naming a topic that does not exist creates it through the
controller, with the cluster's defaults (``num.partitions``, ``default.replication.factor``)
and the configured placer.

Constraints
    A name is created at most once at a time (later requests while it is being created do not
    send another CreateTopics); an invalid name is never sent (the caller answers
    INVALID_TOPIC_EXCEPTION); the creation runs in the background so the request that caused it
    is answered at once (LEADER_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION, both retriable).
    A refusal is logged at WARNING once per topic and error, with the error's name, the
    controller's message and, for INVALID_REPLICATION_FACTOR, the setting that asked for the
    factor (Kafka's broker logged it as "... which is configured by
    offsets.topic.replication.factor"); the same refusal again, as clients retry, at DEBUG.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from rackwise.common import error_codes
from rackwise.common.error_table import describe
from rackwise.controller.names import invalid_topic_reason
from rackwise.protocol import ApiKey, make, request_class

LOG: Final = logging.getLogger("rackwise.broker.auto_create")

CREATE_TOPICS_VERSION: Final = 7
DEFAULT_FROM_CONTROLLER: Final = -1
"""``num_partitions`` / ``replication_factor`` that mean "the cluster's default"."""
TIMEOUT_MS: Final = 30_000
MAX_PENDING: Final = 1_000
"""At most this many topics are being created at once; more are refused (retried later)."""
MAX_REFUSED: Final = 1_000
"""At most this many topics' last refusals are remembered (to log each once)."""
REPLICATION_FACTOR_CONFIGS: Final = {
    "__consumer_offsets": "offsets.topic.replication.factor",
    "__transaction_state": "transaction.state.log.replication.factor",
    "__share_group_state": "share.coordinator.state.topic.replication.factor",
}
"""The setting that gives an internal topic's replication factor, as Kafka's
``AutoTopicCreationManager`` reads it; other topics get ``default.replication.factor``."""


class AutoTopicCreator:
    """Creates topics named by clients (module docstring)."""

    def __init__(self, forward: Callable[[Any], Awaitable[Any]]) -> None:
        self.forward = forward
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._refused: dict[str, int] = {}
        """The error last logged at WARNING for each topic whose creation was refused."""

    def __call__(self, name: str) -> None:
        self.create(name)

    def create(
        self,
        name: str,
        num_partitions: int = DEFAULT_FROM_CONTROLLER,
        replication_factor: int = DEFAULT_FROM_CONTROLLER,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """Create ``name`` in the background, with the cluster's defaults unless told (an
        internal topic has its own: ``__consumer_offsets``)."""
        if name in self._pending or invalid_topic_reason(name) is not None:
            return
        if len(self._pending) >= MAX_PENDING:
            return
        topic = {
            "name": name,
            "num_partitions": num_partitions,
            "replication_factor": replication_factor,
            "assignments": [],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
        }
        self._pending[name] = asyncio.create_task(self._create(topic), name=f"auto-create-{name}")

    async def _create(self, topic: dict[str, Any]) -> None:
        name = topic["name"]
        request: Any = make(
            request_class(ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION),
            {
                "topics": [topic],
                "timeout": TIMEOUT_MS,
                "validate_only": False,
            },
        )
        try:
            response = await self.forward(request)
            for answered in response.topics:
                code = int(answered.error_code)
                if code in (error_codes.NONE, error_codes.TOPIC_ALREADY_EXISTS):
                    self._refused.pop(name, None)
                    LOG.info("topic %r auto-created", name)
                else:
                    self._log_refusal(topic, code, answered.error_message)
        except Exception as e:
            LOG.info("auto-creation of topic %r failed: %s", name, e)
        finally:
            self._pending.pop(name, None)

    def _log_refusal(self, topic: Mapping[str, Any], code: int, message: str | None) -> None:
        """WARNING the first time ``topic`` is refused with ``code``, DEBUG after."""
        name = topic["name"]
        text = refusal_text(name, code, message, topic["replication_factor"])
        if self._refused.get(name) == code:
            LOG.debug("%s", text)
            return
        if len(self._refused) >= MAX_REFUSED:
            self._refused.clear()
        self._refused[name] = code
        LOG.warning("%s", text)

    async def close(self) -> None:
        for task in list(self._pending.values()):
            task.cancel()
        await asyncio.gather(*self._pending.values(), return_exceptions=True)
        self._pending.clear()


def refusal_text(name: str, code: int, message: str | None, replication_factor: int) -> str:
    """``auto-creation of topic '__consumer_offsets' refused: INVALID_REPLICATION_FACTOR
    (error 38): <the controller's message>``, and for that error the setting behind the
    factor."""
    error = describe(code)
    text = f"auto-creation of topic {name!r} refused: "
    text += f"{error.name if error else 'UNKNOWN_SERVER_ERROR'} (error {code})"
    reason = message or (error.message if error else None)
    if reason:
        text += f": {reason.rstrip('.')}"
    if code == error_codes.INVALID_REPLICATION_FACTOR:
        config = REPLICATION_FACTOR_CONFIGS.get(name, "default.replication.factor")
        factor = "" if replication_factor == DEFAULT_FROM_CONTROLLER else f"={replication_factor}"
        text += (
            f" ({config}{factor}); this can be ignored if the cluster is starting up and not "
            "all brokers are up yet"
        )
    return text
