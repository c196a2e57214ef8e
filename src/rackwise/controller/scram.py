"""Users' SCRAM credentials: AlterUserScramCredentials turned into records, and
DescribeUserScramCredentials answered from the image (Kafka's ``ScramControlManager`` and
``ScramImage.describe``).

Goals
    Kafka's checks and answers, user by user: a user named twice in one request is refused
    with DUPLICATE_RESOURCE (``A user credential cannot be altered twice in the same
    request``), an unknown mechanism with UNSUPPORTED_SASL_MECHANISM, iterations outside
    4096-16384 with UNACCEPTABLE_CREDENTIAL (``Too few iterations`` / ``Too many
    iterations``), deleting a credential that does not exist with RESOURCE_NOT_FOUND. The
    request carries the salted password (the client salts it); the record carries only the
    StoredKey and ServerKey derived from it.

Constraints
    Pure functions of the image and the request's items; the controller writes the records
    atomically, in one batch.

Worked example
    Upserting alice's SCRAM-SHA-512 with 8192 iterations gives one UserScramCredentialRecord
    and ``[("alice", NONE, None)]``; the same request naming alice again under SCRAM-SHA-256
    gives no record and ``[("alice", DUPLICATE_RESOURCE, "A user credential cannot be altered
    twice in the same request")]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.common.error_codes import (
    DUPLICATE_RESOURCE,
    NONE,
    RESOURCE_NOT_FOUND,
    UNACCEPTABLE_CREDENTIAL,
    UNSUPPORTED_SASL_MECHANISM,
)
from rackwise.controller.errors import ApiError
from rackwise.image import MetadataImage
from rackwise.records.metadata import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from rackwise.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism

TWICE: Final = "A user credential cannot be altered twice in the same request"
DESCRIBE_DUPLICATE_USER: Final = (
    "Cannot describe SCRAM credentials for the same user twice in a single request: "
)
DESCRIBE_UNKNOWN_USER: Final = "Attempt to describe a user credential that does not exist: "


@dataclass(frozen=True, slots=True)
class ScramDeletion:
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class ScramUpsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


AlterScram = tuple[Sequence[ScramDeletion], Sequence[ScramUpsertion]]
"""An AlterUserScramCredentials request: its deletions and its upsertions."""
UserResult = tuple[str, ApiError]
"""A user's outcome: its name and error (NONE for success)."""


def _check_name_and_mechanism(name: str, mechanism: int) -> ApiError | None:
    if not name:
        return ApiError(UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    if ScramMechanism.by_type(mechanism) is None:
        return ApiError(UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    return None


def _check_deletion(image: MetadataImage, deletion: ScramDeletion) -> ApiError | None:
    error = _check_name_and_mechanism(deletion.name, deletion.mechanism)
    if error is None and (deletion.name, deletion.mechanism) not in image.scram_credentials:
        return ApiError(
            RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        )
    return error


def _check_upsertion(upsertion: ScramUpsertion) -> ApiError | None:
    error = _check_name_and_mechanism(upsertion.name, upsertion.mechanism)
    if error is not None:
        return error
    if upsertion.iterations < MIN_ITERATIONS:
        return ApiError(UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    if upsertion.iterations > MAX_ITERATIONS:
        return ApiError(UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    return None


def alter_user_scram_credentials(
    image: MetadataImage,
    deletions: Sequence[ScramDeletion],
    upsertions: Sequence[ScramUpsertion],
    records: list[Any],
) -> list[UserResult]:
    """Append the request's records to ``records``; each user's result, deletions first,
    then upsertions, then the users refused (Kafka's order)."""
    to_delete: dict[str, ScramDeletion] = {}
    to_upsert: dict[str, ScramUpsertion] = {}
    errors: dict[str, ApiError] = {}
    for deletion in deletions:
        if deletion.name in errors:
            continue
        if to_delete.pop(deletion.name, None) is not None:
            errors[deletion.name] = ApiError(DUPLICATE_RESOURCE, TWICE)
            continue
        error = _check_deletion(image, deletion)
        if error is None:
            to_delete[deletion.name] = deletion
        else:
            errors[deletion.name] = error
    for upsertion in upsertions:
        if upsertion.name in errors:
            continue
        if (
            to_delete.pop(upsertion.name, None) is not None
            or to_upsert.pop(upsertion.name, None) is not None
        ):
            errors[upsertion.name] = ApiError(DUPLICATE_RESOURCE, TWICE)
            continue
        error = _check_upsertion(upsertion)
        if error is None:
            to_upsert[upsertion.name] = upsertion
        else:
            errors[upsertion.name] = error
    results: list[UserResult] = []
    for deletion in to_delete.values():
        records.append(
            RemoveUserScramCredentialRecord(name=deletion.name, mechanism=deletion.mechanism)
        )
        results.append((deletion.name, ApiError()))
    for upsertion in to_upsert.values():
        records.append(credential_record(upsertion))
        results.append((upsertion.name, ApiError()))
    results.extend(errors.items())
    return results


def credential_record(upsertion: ScramUpsertion) -> UserScramCredentialRecord:
    """The record of an upsertion: StoredKey and ServerKey from its salted password."""
    mechanism = ScramMechanism.by_type(upsertion.mechanism)
    assert mechanism is not None
    credential = mechanism.credential(
        upsertion.salt, upsertion.salted_password, upsertion.iterations
    )
    return UserScramCredentialRecord(
        name=upsertion.name,
        mechanism=upsertion.mechanism,
        salt=credential.salt,
        stored_key=credential.stored_key,
        server_key=credential.server_key,
        iterations=credential.iterations,
    )


@dataclass(frozen=True, slots=True)
class DescribedUser:
    """A user's answer: its credentials as (mechanism type, iterations), or an error."""

    user: str
    error: ApiError
    credentials: tuple[tuple[int, int], ...] = ()


def describe_user_scram_credentials(
    credentials: Mapping[tuple[str, int], Any], users: Sequence[str] | None
) -> list[DescribedUser]:
    """Every user with credentials when ``users`` is None or empty, else each one named (a
    user named twice: DUPLICATE_RESOURCE; one without credentials: RESOURCE_NOT_FOUND)."""
    by_user: dict[str, list[tuple[int, int]]] = {}
    for (name, mechanism), record in sorted(credentials.items()):
        by_user.setdefault(name, []).append((mechanism, int(record.iterations)))
    named: dict[str, bool] = {}
    for user in users or sorted(by_user):
        named[user] = user in named
    out: list[DescribedUser] = []
    for user, twice in named.items():
        if twice:
            out.append(
                DescribedUser(user, ApiError(DUPLICATE_RESOURCE, DESCRIBE_DUPLICATE_USER + user))
            )
        elif user not in by_user:
            out.append(
                DescribedUser(user, ApiError(RESOURCE_NOT_FOUND, DESCRIBE_UNKNOWN_USER + user))
            )
        else:
            out.append(DescribedUser(user, ApiError(NONE), tuple(by_user[user])))
    return out
