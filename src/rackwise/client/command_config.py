"""``--command-config FILE``: the admin client properties every command that talks to a
cluster reads, as Kafka's tools read them (a Java properties file), checked before the command
connects.

Constraints
    * The keys served are :data:`KEYS`; ``bootstrap.servers`` is accepted and the
      ``--bootstrap-server`` flag wins over it. ``security.protocol`` is served as PLAINTEXT
      only: any other value, and any other key, is refused by name, with the file, in one
      line (:class:`CommandConfigError`).
    * The timeouts and the back-off are whole numbers of milliseconds; another value is
      refused naming the key and the value.
    * Light to import (no protocol code), so that a refusal costs no client start-up.

Worked example
    A file ``c.properties`` holding ``client.id=ops`` and ``request.timeout.ms=5000`` reads as
    ``{"client.id": "ops", "request.timeout.ms": "5000"}``; one holding
    ``security.protocol=SASL_SSL`` is refused with ``--command-config c.properties: not served:
    security.protocol=SASL_SSL (rackwise configs connects over PLAINTEXT and reads only
    bootstrap.servers, client.id, ...)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from rackwise.common.errors import RackwiseError
from rackwise.formats.properties import parse_properties

MS_KEYS: Final = ("request.timeout.ms", "default.api.timeout.ms", "retry.backoff.ms")
"""The keys whose values are numbers of milliseconds."""
KEYS: Final = frozenset({"bootstrap.servers", "client.id", "security.protocol", *MS_KEYS})
"""The keys served."""


class CommandConfigError(RackwiseError):
    """A ``--command-config`` file with a key or a value the command does not serve."""


def read_command_config(path: str, tool: str) -> dict[str, str]:
    """The properties of the file at ``path``, once every key is one ``rackwise tool``
    serves and every number is a number (see the module docstring)."""
    config = parse_properties(Path(path).read_text(encoding="utf-8"))
    refused = sorted(k for k in config if k not in KEYS)
    protocol = config.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol != "PLAINTEXT":
        refused.insert(0, f"security.protocol={protocol}")
    if refused:
        raise CommandConfigError(
            f"--command-config {path}: not served: {', '.join(refused)} (rackwise {tool} "
            f"connects over PLAINTEXT and reads only {', '.join(sorted(KEYS))})"
        )
    for key in MS_KEYS:
        if key in config and not config[key].strip().isdigit():
            raise CommandConfigError(
                f"--command-config {path}: {key} must be a number of ms: {config[key]}"
            )
    return config


def timeout_ms(config: dict[str, str], default: int) -> int:
    """``request.timeout.ms`` of a checked config, or ``default``."""
    return int(config.get("request.timeout.ms", default))
