"""``kafka-configs.sh --entity-type users`` for SCRAM credentials (Kafka's ``ConfigCommand``
over AlterUserScramCredentials and DescribeUserScramCredentials): the checks of the configs
to add and delete, the credential salted here, and the lines.

Constraints
    * The keys are the SCRAM mechanisms' names (``SCRAM-SHA-256``, ``SCRAM-SHA-512``); a value
      is ``[iterations=N,]password=P`` (Kafka's pattern), iterations absent or -1 meaning
      Kafka's default 4096 and fewer than the mechanism's minimum refused before connecting,
      each in Kafka's words; more than the maximum is the controller's to refuse
      (UNACCEPTABLE_CREDENTIAL, ``Too many iterations``).
    * The password never leaves this process: the upsertion carries a random salt and the
      salted password, as Kafka's admin client sends them.
    * Quota configs (Kafka's other user configs) are not served: refused by name.

Worked example
    ``SCRAM-SHA-512=[iterations=8192,password=alice-secret]`` for ``alice`` is one upsertion
    with 8192 iterations; ``--describe`` then prints ``SCRAM credential configs for
    user-principal 'alice' are SCRAM-SHA-512=iterations=8192``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from rackwise.client.config_args import ConfigsArgumentError
from rackwise.client.configs import ConfigsFailure, _failure, _refused
from rackwise.client.connections import Connections
from rackwise.client.groups import GroupsError
from rackwise.common.error_codes import NONE
from rackwise.protocol import ApiKey
from rackwise.security.scram import ScramMechanism, random_string

DEFAULT_ITERATIONS: Final = 4096
"""``ConfigCommand``'s ``DefaultScramIterations``."""
MIN_ITERATIONS: Final = 4096
"""Both mechanisms' ``minIterations``."""
_CREDENTIAL: Final = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Upsertion:
    mechanism: ScramMechanism
    iterations: int
    password: str


def _scala_set(names: Sequence[str]) -> str:
    return f"Set({', '.join(names)})"


def check_user_configs(
    name: str, add: Mapping[str, str], delete: Sequence[str]
) -> tuple[list[Upsertion], list[ScramMechanism]]:
    """The upsertions and deletions of one user's alteration, checked as Kafka checks them."""
    unknown_add = [k for k in add if ScramMechanism.by_name(k) is None]
    unknown_delete = [k for k in delete if ScramMechanism.by_name(k) is None]
    if unknown_add:
        raise ConfigsArgumentError(
            "Only quota and SCRAM credential configs can be added for 'users' using "
            f"--bootstrap-server. Unexpected config names: {_scala_set(unknown_add)} "
            "(rackwise serves no quota configs)"
        )
    if unknown_delete:
        raise ConfigsArgumentError(
            "Only quota and SCRAM credential configs can be deleted for 'users' using "
            f"--bootstrap-server. Unexpected config names: {_scala_set(unknown_delete)} "
            "(rackwise serves no quota configs)"
        )
    if not name:
        raise ConfigsArgumentError(
            "The use of --entity-default or --user-defaults is not allowed with User SCRAM "
            "Credentials using --bootstrap-server."
        )
    upsertions = []
    for key, value in add.items():
        mechanism = ScramMechanism.by_name(key)
        assert mechanism is not None
        matched = _CREDENTIAL.fullmatch(value)
        if matched is None:
            raise ConfigsArgumentError(f"Invalid credential property {mechanism.name}={value}")
        given, password = matched.groups()
        iterations = int(given) if given not in (None, "", "-1") else DEFAULT_ITERATIONS
        if iterations < MIN_ITERATIONS:
            raise ConfigsArgumentError(
                f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS} required "
                f"for {mechanism.mechanism_name}"
            )
        upsertions.append(Upsertion(mechanism, iterations, password))
    deletions = [m for k in delete if (m := ScramMechanism.by_name(k)) is not None]
    return upsertions, deletions


async def alter(
    connections: Connections,
    user: str,
    upsertions: Sequence[Upsertion],
    deletions: Sequence[ScramMechanism],
) -> None:
    """One AlterUserScramCredentials; a user's error raises :class:`ConfigsFailure`."""
    values = {
        "deletions": [{"name": user, "mechanism": m.type_id} for m in deletions],
        "upsertions": [_upsertion(user, u) for u in upsertions],
    }
    try:
        response = await connections.send(None, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, values)
    except GroupsError as e:
        raise _failure(e) from None
    for result in response.results:
        if int(result.error_code) != NONE:
            raise _refused(int(result.error_code), result.error_message)


def _upsertion(user: str, upsertion: Upsertion) -> dict[str, object]:
    salt = random_string().encode()
    mechanism = upsertion.mechanism
    return {
        "name": user,
        "mechanism": mechanism.type_id,
        "iterations": upsertion.iterations,
        "salt": salt,
        "salted_password": mechanism.salted_password(
            upsertion.password, salt, upsertion.iterations
        ),
    }


async def describe(connections: Connections, users: Sequence[str]) -> list[str]:
    """The lines of ``--describe``: each user's credentials (every user's, ``users`` empty),
    or the error retrieving them, as ``ConfigCommand`` prints them."""
    values = {"users": [{"name": u} for u in users] if users else None}
    try:
        response = await connections.send(None, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, values)
    except GroupsError as e:
        raise _failure(e) from None
    if int(response.error_code) != NONE:
        raise _refused(int(response.error_code), response.error_message)
    lines = []
    for result in response.results:
        user = str(result.user)
        code = int(result.error_code)
        if code != NONE:
            java_text = _refused(code, result.error_message).java_text
            lines.append(
                f"Error retrieving SCRAM credential configs for user-principal '{user}': "
                f"{java_text}"
            )
            continue
        text = ", ".join(
            f"{_name(int(c.mechanism))}=iterations={int(c.iterations)}"
            for c in result.credential_infos
        )
        lines.append(f"SCRAM credential configs for user-principal '{user}' are {text}")
    return lines


def _name(type_id: int) -> str:
    mechanism = ScramMechanism.by_type(type_id)
    return "UNKNOWN" if mechanism is None else mechanism.mechanism_name


__all__ = ["ConfigsFailure", "Upsertion", "alter", "check_user_configs", "describe"]
