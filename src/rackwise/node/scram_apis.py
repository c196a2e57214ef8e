"""AlterUserScramCredentials and DescribeUserScramCredentials on the wire: the requests read
into :mod:`rackwise.controller.scram`'s items and answered in the request's version. The
controller serves both; a broker forwards the first and answers the second from its own image
(as Kafka's brokers answer it from their metadata cache), with the same functions.

Worked example
    A DescribeUserScramCredentials naming ``alice`` twice gets one result for ``alice``:
    DUPLICATE_RESOURCE, ``Cannot describe SCRAM credentials for the same user twice in a
    single request: alice``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rackwise.controller import ApiError
from rackwise.controller.scram import (
    AlterScram,
    ScramDeletion,
    ScramUpsertion,
    UserResult,
    describe_user_scram_credentials,
)
from rackwise.protocol import Response, response_to


def response(body: Any, values: dict[str, Any]) -> Response:
    values.setdefault("throttle_time", 0)
    return response_to(body, values)


def alter_args(body: Any) -> AlterScram:
    deletions = [ScramDeletion(str(d.name), int(d.mechanism)) for d in body.deletions]
    upsertions = [
        ScramUpsertion(
            str(u.name),
            int(u.mechanism),
            int(u.iterations),
            bytes(u.salt),
            bytes(u.salted_password),
        )
        for u in body.upsertions
    ]
    return deletions, upsertions


def alter_response(body: Any, results: Iterable[UserResult]) -> Response:
    return response(
        body,
        {
            "results": [
                {"user": user, "error_code": e.error_code, "error_message": e.message}
                for user, e in results
            ]
        },
    )


def alter_error(body: Any, error: ApiError) -> Response:
    """Every user of the request with ``error`` (NOT_CONTROLLER, a request refused whole)."""
    users = dict.fromkeys(
        [str(d.name) for d in body.deletions] + [str(u.name) for u in body.upsertions]
    )
    return alter_response(body, [(user, error) for user in users])


def describe(body: Any, credentials: Mapping[tuple[str, int], Any]) -> Response:
    """DescribeUserScramCredentials from the image's credentials (Kafka's
    ``ScramImage.describe``)."""
    users = None if body.users is None else [str(u.name) for u in body.users]
    return response(
        body,
        {
            "error_code": 0,
            "error_message": None,
            "results": [
                {
                    "user": r.user,
                    "error_code": r.error.error_code,
                    "error_message": r.error.message,
                    "credential_infos": [
                        {"mechanism": m, "iterations": i} for m, i in r.credentials
                    ],
                }
                for r in describe_user_scram_credentials(credentials, users)
            ],
        },
    )


def describe_error(body: Any, error: ApiError) -> Response:
    return response(
        body, {"error_code": error.error_code, "error_message": error.message, "results": []}
    )
