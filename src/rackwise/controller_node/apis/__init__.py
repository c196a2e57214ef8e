"""Wire requests to the controller's commands and its replies back to wire responses (Kafka's
``ControllerApis``, without the I/O): each ``*_args`` reads a decoded request message into
:mod:`rackwise.controller.messages`; each ``*_response`` builds the response message, in the
request's version, with :func:`rackwise.protocol.make`.

* :mod:`~rackwise.controller_node.apis.brokers`: registrations, heartbeats, producer ids and
  replicas' directories, the requests a broker makes for itself.
* :mod:`~rackwise.controller_node.apis.topics`: creating and deleting topics and partitions,
  KIP-879's placement.
* :mod:`~rackwise.controller_node.apis.partitions`: ISR changes, reassignments, leader elections.
* :mod:`~rackwise.controller_node.apis.configs`: describing and altering configurations.

Constraints
    Pure functions of their inputs. Fields a version lacks are dropped by ``make``, so one
    function serves every version; requests are read with ``getattr`` where versions differ
    (DeleteTopics names topics by ``topic_names`` before v6, by ``topics`` from v6). A
    request-wide failure (a refused registration, a stale heartbeat) becomes the response's
    error code with Kafka's defaults for the other fields. :func:`response` builds every
    response of the request's API and version.
"""

from __future__ import annotations

from typing import Any

from rackwise.protocol import Response, response_to


def response(body: Any, values: dict[str, Any]) -> Response:
    """The response class of ``body``'s API and version, built from ``values``."""
    values.setdefault("throttle_time", 0)
    return response_to(body, values)
