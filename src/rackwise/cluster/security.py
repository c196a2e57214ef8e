"""``cluster up --security ssl|sasl_ssl|sasl_plaintext``: what a secured local cluster's nodes
and its admin client are configured with, and the files behind it.

Goals
    * Every listener of the cluster speaks the mode's protocol: the brokers' client and
      inter-broker listener (named after the protocol, ``SSL://127.0.0.1:P``) and the
      controllers' ``CONTROLLER`` listener.
    * TLS modes: a private CA, a PKCS12 key store per node (:mod:`rackwise.cluster.certificates`)
      and the CA as every node's trust store; ``ssl`` requires client certificates, whose
      subject ``CN=<name>,OU=rackwise-cluster`` maps to ``User:<name>``
      (:data:`PRINCIPAL_MAPPING_RULES`).
    * ``DIR/client.properties`` for the admin (``User:admin``): the trust store, and for
      ``ssl`` its certificate; :func:`usage` says how to pass it to the commands and to Kafka's
      tools.
    * SASL modes: the nodes log in to each other with PLAIN as ``User:broker``, the admin with
      SCRAM-SHA-512, its credential stored once the brokers serve
      (:mod:`rackwise.cluster.sasl_users`); the brokers' listeners serve both mechanisms, the
      controllers' PLAIN.
    * Every secured mode turns Kafka's StandardAuthorizer on, the admin and the nodes (their
      certificates' names, and ``User:broker``) its super users.

Constraints
    * Files are made once, like the nodes' ``.properties``: a restart reuses them.
    * A key the nodes of this build do not know is not written: the file stays one the node
      accepts.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rackwise.cluster.certificates import (
    ORGANIZATIONAL_UNIT,
    TLS_DIR,
    Authority,
    ensure_ca,
    save_ca,
    write_client_pem,
    write_node_keystore,
)
from rackwise.cluster.plan import ClusterError, NodeSpec
from rackwise.cluster.sasl_users import (
    ADMIN_MECHANISM,
    NODE_MECHANISM,
    NODE_USER,
    Passwords,
    admin_jaas,
    ensure_passwords,
    node_jaas,
)
from rackwise.formats.properties import format_properties, parse_properties
from rackwise.net.tls import client_context
from rackwise.node.config import ROLE_KEYS
from rackwise.security.protocols import (
    PLAINTEXT,
    SASL_PLAINTEXT,
    SASL_SSL,
    SSL,
    uses_sasl,
    uses_tls,
)
from rackwise.security.ssl_config import ssl_settings

MODES: Final = {
    "plaintext": PLAINTEXT,
    "ssl": SSL,
    "sasl_ssl": SASL_SSL,
    "sasl_plaintext": SASL_PLAINTEXT,
}
"""``--security``'s values and the protocol each gives every listener."""
CLIENT_PROPERTIES: Final = "client.properties"
ADMIN: Final = "admin"
SCRAM_MECHANISM: Final = str(ADMIN_MECHANISM)
AUTHORIZER: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PRINCIPAL_MAPPING_RULES: Final = f"RULE:^CN=([^,]+),OU={ORGANIZATIONAL_UNIT}$/$1/,DEFAULT"
"""``CN=broker-1,OU=rackwise-cluster`` is ``User:broker-1``; any other name is kept whole."""
KEYSTORE_FILE: Final = "keystore.p12"
ADMIN_PEM: Final = "admin.pem"


@dataclass(frozen=True, slots=True)
class ClusterSecurity:
    """A secured cluster's settings (see the module docstring)."""

    mode: str
    directory: Path
    authority: Authority | None
    node_names: tuple[str, ...] = ()
    """Every node's name (its certificate's CN): the super users, with the admin."""
    passwords: Passwords | None = None
    """The node user's and the admin's passwords (SASL modes)."""

    @property
    def protocol(self) -> str:
        return MODES[self.mode]

    @property
    def password(self) -> str:
        assert self.authority is not None
        return self.authority.password

    def keystore(self, node: NodeSpec) -> Path:
        return self.directory / node.name / TLS_DIR / KEYSTORE_FILE

    def node_properties(self, node: NodeSpec) -> dict[str, str]:
        """The keys of ``node``'s ``.properties`` that secure it (its listener among them)."""
        protocol = self.protocol
        props: dict[str, str] = {}
        if node.role == "broker":
            props["listeners"] = f"{protocol}://{node.address}"
            props["listener.security.protocol.map"] = f"{protocol}:{protocol},CONTROLLER:{protocol}"
            props["security.inter.broker.protocol"] = protocol
        else:
            props["listener.security.protocol.map"] = f"CONTROLLER:{protocol}"
        if uses_tls(protocol):
            assert self.authority is not None
            props.update(
                {
                    "ssl.keystore.type": "PKCS12",
                    "ssl.keystore.location": str(self.keystore(node)),
                    "ssl.keystore.password": self.password,
                    "ssl.key.password": self.password,
                    "ssl.truststore.type": "PEM",
                    "ssl.truststore.location": str(self.authority.pem_path),
                    "ssl.client.auth": "required" if protocol == SSL else "none",
                    "ssl.principal.mapping.rules": PRINCIPAL_MAPPING_RULES,
                }
            )
        if uses_sasl(protocol):
            assert self.passwords is not None
            jaas = node_jaas(self.passwords)
            if node.role == "broker":
                listener = protocol.lower()
                props["sasl.enabled.mechanisms"] = f"{SCRAM_MECHANISM},{NODE_MECHANISM}"
                props["sasl.mechanism.inter.broker.protocol"] = NODE_MECHANISM
                props[f"listener.name.{listener}.plain.sasl.jaas.config"] = jaas
            props["listener.name.controller.sasl.enabled.mechanisms"] = NODE_MECHANISM
            props["listener.name.controller.plain.sasl.jaas.config"] = jaas
            props["sasl.mechanism.controller.protocol"] = NODE_MECHANISM
        props["authorizer.class.name"] = AUTHORIZER
        users = (ADMIN, *self.node_names, *([NODE_USER] if uses_sasl(protocol) else []))
        props["super.users"] = ";".join(f"User:{n}" for n in users)
        known = ROLE_KEYS[node.role]
        return {k: v for k, v in props.items() if k in known or k.startswith("listener.name.")}

    def client_properties(self) -> dict[str, str]:
        """``DIR/client.properties``: the admin's settings."""
        props = {"security.protocol": self.protocol}
        if uses_tls(self.protocol):
            assert self.authority is not None
            props.update(
                {
                    "ssl.truststore.type": "PEM",
                    "ssl.truststore.location": str(self.authority.pem_path),
                }
            )
        if self.protocol == SSL:
            props.update(
                {
                    "ssl.keystore.type": "PEM",
                    "ssl.keystore.location": str(self.directory / TLS_DIR / ADMIN_PEM),
                    "ssl.key.password": self.password,
                }
            )
        if uses_sasl(self.protocol):
            assert self.passwords is not None
            props["sasl.mechanism"] = SCRAM_MECHANISM
            props["sasl.jaas.config"] = admin_jaas(self.passwords)
        return props

    def write_files(self, new_nodes: list[NodeSpec]) -> None:
        """The key stores of ``new_nodes``, the admin's files and ``client.properties``, those
        that do not exist yet."""
        if uses_tls(self.protocol):
            assert self.authority is not None
            save_ca(self.authority)
            for node in new_nodes:
                write_node_keystore(self.authority, self.keystore(node), node.name, self.password)
            admin = self.directory / TLS_DIR / ADMIN_PEM
            if self.protocol == SSL and not admin.exists():
                write_client_pem(self.authority, admin, ADMIN, self.password)
        path = self.directory / CLIENT_PROPERTIES
        if not path.exists():
            header = [f" the admin ({ADMIN}) of this cluster, by rackwise cluster up"]
            path.write_text(format_properties(self.client_properties(), header), encoding="utf-8")
            path.chmod(0o600)


def cluster_security(
    directory: Path, mode: str | None, node_names: Sequence[str] = (), *, existing: bool = False
) -> ClusterSecurity | None:
    """The security of the cluster in ``directory``: ``mode`` (``--security``) for a new one;
    for one that has its files, the mode its ``client.properties`` records, which ``mode``
    must be. An ``existing`` cluster without that file is a plaintext one: its nodes'
    ``.properties`` are kept, so it cannot be secured in place. None: plaintext."""
    recorded = recorded_mode(directory)
    if mode is not None and mode not in MODES:
        raise ClusterError(f"--security {mode}: expected one of {', '.join(MODES)}")
    if recorded is None and existing and mode not in (None, "plaintext"):
        raise ClusterError(
            f"{directory} holds a PLAINTEXT cluster, made without --security: it cannot be "
            f"secured with --security {mode} in place: run `rackwise cluster down --dir "
            f"{directory}` and remove it, or use another --dir"
        )
    if recorded is not None and mode is not None and mode != recorded:
        raise ClusterError(
            f"{directory} holds a cluster secured with --security {recorded}, not {mode}: "
            f"run `rackwise cluster down --dir {directory}` and remove it, or use another --dir"
        )
    mode = mode or recorded
    if mode is None or mode == "plaintext":
        return None
    authority = ensure_ca(directory) if uses_tls(MODES[mode]) else None
    passwords = ensure_passwords(directory) if uses_sasl(MODES[mode]) else None
    return ClusterSecurity(mode, directory, authority, tuple(node_names), passwords)


def admin_tls(directory: Path) -> ssl.SSLContext | None:
    """The TLS context of ``DIR/client.properties`` (None: the cluster speaks no TLS)."""
    settings = admin_settings(directory)
    if not uses_tls(settings.get("security.protocol", PLAINTEXT).strip().upper()):
        return None
    return client_context(ssl_settings(settings))


def recorded_mode(directory: Path) -> str | None:
    """The ``--security`` mode of the cluster in ``directory`` (None: plaintext or none)."""
    protocol = admin_settings(directory).get("security.protocol", "")
    if not protocol:
        return None
    for mode, named in MODES.items():
        if named == protocol.strip().upper():
            return mode
    return None


def usage(directory: Path, bootstrap: str) -> str:
    """How to reach the secured cluster, as ``up`` prints it."""
    path = directory / CLIENT_PROPERTIES
    mode = recorded_mode(directory)
    how = "its certificate" if mode == "ssl" else f"{SCRAM_MECHANISM}"
    return (
        f"security: {MODES[mode or 'plaintext']} on every listener, the StandardAuthorizer on; "
        f"User:{ADMIN} (logging in with {how}) is a super user\n"
        f"client settings: {path}\n"
        f"  rackwise topics --bootstrap-server {bootstrap} --command-config {path} --list\n"
        f"  kafka-topics.sh --bootstrap-server {bootstrap} --command-config {path} --list"
    )


def admin_settings(directory: Path) -> Mapping[str, str]:
    """``DIR/client.properties`` as written (empty for a plaintext cluster)."""
    path = directory / CLIENT_PROPERTIES
    if not path.exists():
        return {}
    return parse_properties(path.read_text(encoding="utf-8"))
