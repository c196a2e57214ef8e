"""The controller listener's authorization step (Kafka's ``ControllerApis`` checks): run once per
request before it is answered, with the ACLs of the controller's image.

Constraints
    * Registration, heartbeats, ISR changes, producer id blocks, directory assignments and the
      quorum's Raft traffic (:data:`~rackwise.node.gates.TRUSTED_APIS`) need CLUSTER_ACTION on
      the cluster: super users, or a principal granted it (the brokers' and controllers'). Any
      other principal gets CLUSTER_AUTHORIZATION_FAILED, so a forged registration or
      heartbeat changes nothing.
    * A principal with CLUSTER_ACTION is a broker passing on what its clients asked, already
      judged on the broker with the client's principal: its admin requests pass. Anyone else's
      admin request (a tool using ``--bootstrap-controller``) is judged by the API's gate, as
      on a broker.
    * A controller that is not active judges with the ACLs it last saw as the active one (none
      before): only super users pass there until it leads.

Worked example
    A BrokerRegistration from ``User:mallory`` (no ACL) on a controller with
    ``super.users=User:broker`` is answered CLUSTER_AUTHORIZATION_FAILED (31); the same from
    ``User:broker`` registers the broker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from rackwise.common.error_codes import CLUSTER_AUTHORIZATION_FAILED
from rackwise.controller import ApiError
from rackwise.controller_node.requests import Entry
from rackwise.image import MetadataImage
from rackwise.node import gates
from rackwise.node.authorization import Authorization
from rackwise.node.quorum_wire import error_response
from rackwise.protocol import Request, Response


def verdict(authorization: Authorization, image: MetadataImage, request: Request) -> gates.Verdict:
    """The verdict on ``request`` (module docstring)."""
    check = authorization.check(image)
    key = request.header.api_key
    if key in gates.TRUSTED_APIS:
        return None if check.is_trusted else gates.Refuse(CLUSTER_AUTHORIZATION_FAILED)
    if check.is_trusted:
        return None
    return gates.judge(check, key, request.body, image)


def error(
    request: Request, error_code: int, message: str | None, entries: Mapping[int, Entry]
) -> Response:
    """``request``'s answer with ``error_code``: its entry's error answer, the quorum's, or
    :func:`rackwise.node.gates.error_answer`."""
    key = request.header.api_key
    entry = entries.get(key)
    if entry is not None:
        return entry.error(request, ApiError(error_code, message))
    if key in gates.TRUSTED_APIS:
        return error_response(key, request.header.api_version, error_code)
    return gates.error_answer(request.body, error_code, message)


async def answer(
    judged: gates.Refuse | gates.Split,
    request: Request,
    run: Callable[[Request], Awaitable[Response]],
    entries: Mapping[int, Entry],
) -> Response:
    """The answer to a request refused whole or in part: ``run`` answers the allowed part."""
    if isinstance(judged, gates.Refuse):
        return error(request, judged.error_code, judged.message, entries)
    refused = [
        error(dataclasses.replace(request, body=body), code, message, entries)
        for body, code, message in judged.refused
    ]
    if judged.allowed is None:
        return gates.merge(refused[0], refused[1:], judged.field)
    allowed: Any = await run(dataclasses.replace(request, body=judged.allowed))
    return gates.merge(allowed, refused, judged.field)
