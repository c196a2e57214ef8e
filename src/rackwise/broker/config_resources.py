"""ListConfigResources (KIP-1142): the resources that can carry configuration, as a Kafka 4.1
broker lists them from its metadata image (pure: image and request in, response out).

Goals
    ``kafka-configs.sh`` and the admin clients can enumerate the resources they may describe
    or alter configuration for: topics, brokers (and their loggers), client-metrics
    subscriptions and groups with configuration of their own.

Constraints
    * The types a version may ask for are Kafka's ``supportedResourceTypes``: v0 only
      CLIENT_METRICS (16); v1 TOPIC (2), BROKER (4), BROKER_LOGGER (8), CLIENT_METRICS and
      GROUP (32). An empty list is all of them. If any type asked for is outside that set,
      the answer is UNSUPPORTED_VERSION (35) with no resource at all.
    * Each type is listed once however often it is asked for, in Kafka's order: groups,
      client-metrics subscriptions, broker loggers, brokers, topics. Groups and subscriptions
      are those with configuration in the image; brokers are every registered broker with an
      endpoint on the listener the request came in on, fenced or not, named by id, once as a
      logger and once as a broker; topics are every topic of the image, internal ones
      included.
    * Within a type Kafka lists in the order of its hash maps; rackwise sorts (names as
      strings, broker ids as numbers), so that the same cluster always gives the same list.
    * rackwise has no authorizer, so nobody gets CLUSTER_AUTHORIZATION_FAILED.

Worked example
    A v1 request with ``resource_types=[2, 4]`` on a cluster with brokers 1 and 2 and topics
    ``orders`` and ``__consumer_offsets`` answers ``("1", 4), ("2", 4),
    ("__consumer_offsets", 2), ("orders", 2)``; with ``[2, 64]`` it answers
    UNSUPPORTED_VERSION and nothing else.
"""

from __future__ import annotations

from typing import Any, Final

from rackwise.common.error_codes import NONE, UNSUPPORTED_VERSION
from rackwise.image import MetadataImage
from rackwise.protocol import Response, response_to

TOPIC: Final = 2
BROKER: Final = 4
BROKER_LOGGER: Final = 8
CLIENT_METRICS: Final = 16
GROUP: Final = 32
SUPPORTED: Final = {
    0: frozenset({CLIENT_METRICS}),
    1: frozenset({TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP}),
}
"""The resource types each version may ask for (Kafka's ``supportedResourceTypes``)."""


def _configured(image: MetadataImage, resource_type: int) -> list[str]:
    """The names of resources of ``resource_type`` with configuration of their own."""
    return sorted(
        r.name
        for r, configs in image.configs.items()
        if r.resource_type == resource_type and configs
    )


def _brokers(image: MetadataImage, listener_name: str) -> list[str]:
    """Every registered broker with an endpoint on ``listener_name``, by id."""
    return [
        str(broker_id)
        for broker_id, registration in sorted(image.brokers.items())
        if any(e.name == listener_name for e in registration.end_points)
    ]


def list_config_resources(body: Any, image: MetadataImage, listener_name: str) -> Response:
    """The answer to one ListConfigResources request that came in on ``listener_name``."""
    supported = SUPPORTED[int(type(body).__version__)]
    asked = {int(t) for t in getattr(body, "resource_types", ())} or supported
    values: dict[str, Any] = {"throttle_time": 0, "error_code": NONE, "config_resources": []}
    if not asked <= supported:
        values["error_code"] = UNSUPPORTED_VERSION
        return response_to(body, values)
    listed: list[tuple[str, int]] = []
    if GROUP in asked:
        listed += [(name, GROUP) for name in _configured(image, GROUP)]
    if CLIENT_METRICS in asked:
        listed += [(name, CLIENT_METRICS) for name in _configured(image, CLIENT_METRICS)]
    brokers = _brokers(image, listener_name) if asked & {BROKER, BROKER_LOGGER} else []
    if BROKER_LOGGER in asked:
        listed += [(name, BROKER_LOGGER) for name in brokers]
    if BROKER in asked:
        listed += [(name, BROKER) for name in brokers]
    if TOPIC in asked:
        listed += [(name, TOPIC) for name in sorted(image.topics_by_name)]
    values["config_resources"] = [{"resource_name": n, "resource_type": t} for n, t in listed]
    return response_to(body, values)
