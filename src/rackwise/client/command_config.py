"""``--command-config FILE``: the admin client properties every command that talks to a
cluster reads, as Kafka's tools read them (a Java properties file), checked before the command
connects.

Constraints
    * The keys served are :data:`KEYS`; ``bootstrap.servers`` is accepted and the
      ``--bootstrap-server`` flag wins over it. ``security.protocol`` is any of Kafka's four:
      PLAINTEXT, SSL (with Kafka's ``ssl.*`` client keys: trust store, key store for a client
      certificate, PEM or PKCS12), SASL_PLAINTEXT and SASL_SSL (with ``sasl.mechanism`` and
      ``sasl.jaas.config``: PlainLoginModule or ScramLoginModule with ``username`` and
      ``password``); any other value, and any other key, is refused by name, with the file,
      in one line (:class:`CommandConfigError`).
    * With SSL or SASL_SSL, every connection the command opens afterwards speaks TLS
      (:func:`rackwise.net.tls.use_client_tls`), and with a SASL protocol it logs in
      (:func:`rackwise.net.set_login`): rackwise's own connections and kafka-python's admin
      client alike; a store that cannot be read, a mechanism not served or a JAAS
      configuration without credentials is refused naming it.
    * The timeouts and the back-off are whole numbers of milliseconds; another value is
      refused naming the key and the value.
    * Light to import (no protocol code), so that a refusal costs no client start-up.

Worked example
    A file ``c.properties`` holding ``client.id=ops`` and ``request.timeout.ms=5000`` reads as
    ``{"client.id": "ops", "request.timeout.ms": "5000"}``; one holding
    ``sasl.kerberos.service.name=kafka`` is refused with ``--command-config c.properties: not
    served: sasl.kerberos.service.name (rackwise configs reads only bootstrap.servers,
    client.id, ..., sasl.jaas.config, sasl.mechanism, security.protocol and ssl.*)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from rackwise.common.errors import RackwiseError
from rackwise.formats.properties import parse_properties

MS_KEYS: Final = ("request.timeout.ms", "default.api.timeout.ms", "retry.backoff.ms")
"""The keys whose values are numbers of milliseconds."""
KEYS: Final = frozenset(
    {
        "bootstrap.servers",
        "client.id",
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
        *MS_KEYS,
    }
)
"""The keys served (and the ``ssl.*`` client keys, :data:`CLIENT_SSL_KEYS`)."""
CLIENT_SSL_KEYS: Final = frozenset(
    {
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.enabled.protocols",
        "ssl.protocol",
        "ssl.endpoint.identification.algorithm",
    }
)
PROTOCOLS_SERVED: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class CommandConfigError(RackwiseError):
    """A ``--command-config`` file with a key or a value the command does not serve."""


def read_command_config(path: str, tool: str) -> dict[str, str]:
    """The properties of the file at ``path``, once every key is one ``rackwise tool``
    serves and every number is a number (see the module docstring)."""
    config = parse_properties(Path(path).read_text(encoding="utf-8"))
    refused = sorted(k for k in config if k not in KEYS and k not in CLIENT_SSL_KEYS)
    protocol = config.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS_SERVED:
        refused.insert(0, f"security.protocol={protocol}")
    if refused:
        raise CommandConfigError(
            f"--command-config {path}: not served: {', '.join(refused)} (rackwise {tool} "
            f"reads only {', '.join(sorted(KEYS))} and ssl.*)"
        )
    for key in MS_KEYS:
        if key in config and not config[key].strip().isdigit():
            raise CommandConfigError(
                f"--command-config {path}: {key} must be a number of ms: {config[key]}"
            )
    if protocol in ("SSL", "SASL_SSL"):
        _use_tls(path, config)
    if protocol.startswith("SASL_"):
        _use_sasl(path, config)
    return config


def _use_tls(path: str, config: dict[str, str]) -> None:
    """Every connection the command opens from now on speaks TLS with ``config``'s stores."""
    from rackwise.net.tls import TlsConfigError, client_context, use_client_tls  # noqa: PLC0415
    from rackwise.security.ssl_config import ssl_settings  # noqa: PLC0415

    try:
        use_client_tls(client_context(ssl_settings(config)))
    except (TlsConfigError, ValueError) as e:
        raise CommandConfigError(f"--command-config {path}: {e}") from None


def _use_sasl(path: str, config: dict[str, str]) -> None:
    """Every connection the command opens from now on logs in with ``sasl.mechanism`` as the
    user of ``sasl.jaas.config``."""
    from rackwise.net import SaslLogin, set_login  # noqa: PLC0415
    from rackwise.security.jaas import JaasConfigException  # noqa: PLC0415
    from rackwise.security.sasl_config import (  # noqa: PLC0415
        CLIENT_MECHANISM,
        SaslConfigException,
        login_settings,
    )

    try:
        set_login(SaslLogin(*login_settings(config, None, CLIENT_MECHANISM)))
    except (SaslConfigException, JaasConfigException) as e:
        raise CommandConfigError(f"--command-config {path}: {e}") from None


def timeout_ms(config: dict[str, str], default: int) -> int:
    """``request.timeout.ms`` of a checked config, or ``default``."""
    return int(config.get("request.timeout.ms", default))
