"""The users of a SASL cluster made by ``cluster up --security sasl_ssl|sasl_plaintext``: the
nodes' own user, which they log in to each other as, and the admin, whose SCRAM-SHA-512
credential ``up`` stores in the metadata log once the brokers serve.

Goals
    * ``User:broker`` (:data:`NODE_USER`) logs in with PLAIN, its password in the JAAS
      configuration of every node's listeners: the nodes need no credential in the metadata
      log to reach each other, so a new cluster starts with nothing stored; it is a super user.
    * ``User:admin`` logs in with SCRAM-SHA-512 (the mechanism operators are told to use):
      after the brokers registered, :func:`ensure_admin_credential` asks a broker, as the node
      user, whether the admin has a credential, stores one (AlterUserScramCredentials, salted
      here: the password never leaves this process) if not, and waits until the broker
      answers with it, so that ``client.properties`` works as soon as ``up`` returns.

Constraints
    * The passwords are made once (:func:`ensure_passwords`) in ``DIR/sasl.password``, mode
      0600, like the key stores' password; a restart reads them back.

Worked example
    A new ``--security sasl_ssl`` cluster: brokers get
    ``listener.name.sasl_ssl.plain.sasl.jaas.config=...PlainLoginModule required
    username="broker" password="<p>" user_broker="<p>";`` and ``up`` stores the admin's
    credential with 8192 iterations; ``rackwise configs --entity-type users --describe`` then
    lists ``SCRAM-SHA-512=[iterations=8192]`` for ``admin``.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rackwise.cluster.plan import ClusterError
from rackwise.net import KafkaConnection, SaslLogin, set_login
from rackwise.protocol import ApiKey
from rackwise.security.jaas import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE
from rackwise.security.scram import ScramMechanism, random_string

NODE_USER: Final = "broker"
ADMIN_USER: Final = "admin"
NODE_MECHANISM: Final = "PLAIN"
ADMIN_MECHANISM: Final = ScramMechanism.SCRAM_SHA_512
ADMIN_ITERATIONS: Final = 8192
PASSWORD_FILE: Final = "sasl.password"


@dataclass(frozen=True, slots=True)
class Passwords:
    node: str
    admin: str


def ensure_passwords(directory: Path) -> Passwords:
    """The cluster's two passwords, made the first time (module docstring)."""
    path = directory / PASSWORD_FILE
    if path.exists():
        node, _, admin = path.read_text(encoding="utf-8").strip().partition("\n")
        return Passwords(node.strip(), admin.strip())
    made = Passwords(secrets.token_urlsafe(18), secrets.token_urlsafe(18))
    path.write_text(f"{made.node}\n{made.admin}\n", encoding="utf-8")
    path.chmod(0o600)
    return made


def node_jaas(passwords: Passwords) -> str:
    """The PLAIN JAAS configuration of every node's listeners: whom a node logs in as, and
    the one user the listeners' PLAIN accepts."""
    password = passwords.node
    return (
        f'{PLAIN_LOGIN_MODULE} required username="{NODE_USER}" password="{password}" '
        f'user_{NODE_USER}="{password}";'
    )


def admin_jaas(passwords: Passwords) -> str:
    """``client.properties``' ``sasl.jaas.config``."""
    return f'{SCRAM_LOGIN_MODULE} required username="{ADMIN_USER}" password="{passwords.admin}";'


def log_in_as_node(passwords: Passwords) -> None:
    """This process's connections log in as the node user from now on."""
    set_login(SaslLogin(NODE_MECHANISM, NODE_USER, passwords.node))


def ensure_admin_credential(bootstrap: str, passwords: Passwords, timeout_s: float = 30.0) -> bool:
    """Store the admin's credential unless a broker at ``bootstrap`` already has it, and wait
    until it does; whether one was stored."""
    host, _, port = bootstrap.split(",", maxsplit=1)[0].rpartition(":")
    return asyncio.run(_ensure(host, int(port), passwords, time.monotonic() + timeout_s))


async def _ensure(host: str, port: int, passwords: Passwords, deadline: float) -> bool:
    async with await KafkaConnection.connect(host, port) as conn:
        await conn.negotiate_versions()
        if await _has_credential(conn):
            return False
        salt = random_string().encode()
        salted = ADMIN_MECHANISM.salted_password(passwords.admin, salt, ADMIN_ITERATIONS)
        answer = await conn.request(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            deletions=[],
            upsertions=[
                {
                    "name": ADMIN_USER,
                    "mechanism": ADMIN_MECHANISM.type_id,
                    "iterations": ADMIN_ITERATIONS,
                    "salt": salt,
                    "salted_password": salted,
                }
            ],
        )
        (result,) = answer.results
        if int(result.error_code):
            raise ClusterError(
                f"storing the admin's {ADMIN_MECHANISM} credential failed: "
                f"{result.error_message or int(result.error_code)}"
            )
        while not await _has_credential(conn):
            if time.monotonic() > deadline:
                raise ClusterError("the brokers did not show the admin's credential in time")
            await asyncio.sleep(0.05)
        return True


async def _has_credential(conn: KafkaConnection) -> bool:
    answer: Any = await conn.request(
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, users=[{"name": ADMIN_USER}]
    )
    (result,) = answer.results
    return int(result.error_code) == 0 and any(
        int(c.mechanism) == ADMIN_MECHANISM.type_id for c in result.credential_infos
    )
