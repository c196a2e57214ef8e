"""Topic auto-creation (``auto.create.topics.enable``, Kafka's ``AutoTopicCreationManager``): a
Metadata or Produce request naming a topic that does not exist creates it through the
controller, with the cluster's defaults (``num.partitions``, ``default.replication.factor``)
and the configured placer.

Constraints
    A name is created at most once at a time (later requests while it is being created do not
    send another CreateTopics); an invalid name is never sent (the caller answers
    INVALID_TOPIC_EXCEPTION); the creation runs in the background so the request that caused it
    is answered at once (LEADER_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION, both retriable).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from rackwise.controller.names import invalid_topic_reason
from rackwise.protocol import ApiKey, make, request_class

LOG: Final = logging.getLogger("rackwise.broker.auto_create")

CREATE_TOPICS_VERSION: Final = 7
DEFAULT_FROM_CONTROLLER: Final = -1
"""``num_partitions`` / ``replication_factor`` that mean "the cluster's default"."""
TIMEOUT_MS: Final = 30_000
MAX_PENDING: Final = 1_000
"""At most this many topics are being created at once; more are refused (retried later)."""


class AutoTopicCreator:
    """Creates topics named by clients (module docstring)."""

    def __init__(self, forward: Callable[[Any], Awaitable[Any]]) -> None:
        self.forward = forward
        self._pending: dict[str, asyncio.Task[None]] = {}

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
                if code not in (0, 36):  # NONE, TOPIC_ALREADY_EXISTS
                    LOG.info("auto-creation of topic %r refused: error %d", name, code)
                else:
                    LOG.info("topic %r auto-created", name)
        except Exception as e:
            LOG.info("auto-creation of topic %r failed: %s", name, e)
        finally:
            self._pending.pop(name, None)

    async def close(self) -> None:
        for task in list(self._pending.values()):
            task.cancel()
        await asyncio.gather(*self._pending.values(), return_exceptions=True)
        self._pending.clear()
