"""A broker's client listeners: one server per listener of ``listeners`` that is not a
controller listener, each speaking its security protocol, and what the broker registers of
them (Kafka's ``SocketServer`` data-plane acceptors with the endpoints of
``advertised.listeners``).

Goals
    * :meth:`BrokerListeners.start` binds every client listener, its TLS context loaded
      (:mod:`rackwise.node.tls_setup`); each connection knows its listener's name and
      protocol, so that answers listing brokers list the endpoints of that listener.
    * :meth:`BrokerListeners.registration` gives BrokerRegistration's listeners: the advertised
      ones, a configured port 0 replaced by the port bound, each with its protocol's id.
    * A SASL listener authenticates its clients (:mod:`rackwise.node.sasl_setup`), SCRAM
      against the credentials of the broker's image.
    * The TLS contexts a broker's own connections use: to the controllers
      (``controller.listener.names``' first) and to other brokers (the inter-broker listener).

Worked example
    ``listeners=PLAINTEXT://:0,SSL://:0`` binds two free ports; the registration lists
    ``{"name": "SSL", "host": "127.0.0.1", "port": <bound>, "security_protocol": 1}``.
"""

from __future__ import annotations

import ssl
from typing import Any

from rackwise.net import KafkaServer, start_server
from rackwise.net.pipelining import Handler
from rackwise.node.addresses import Endpoint
from rackwise.node.config import NodeConfig
from rackwise.node.sasl_setup import Credentials, listener_sasl
from rackwise.node.tls_setup import client_tls, listener_security
from rackwise.protocol import Listener
from rackwise.security.protocols import protocol_id


class BrokerListeners:
    """A broker's client listeners (module docstring)."""

    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        self.servers: list[KafkaServer] = []
        self.controller_tls: ssl.SSLContext | None = client_tls(
            config, config.controller_listener_names[0]
        )
        """The TLS of the broker's connections to the controllers (None: plaintext)."""
        self.inter_broker_tls: ssl.SSLContext | None = client_tls(
            config, config.inter_broker_listener_name or config.broker_endpoints[0].listener_name
        )
        """The TLS of the broker's connections to other brokers (None: plaintext)."""

    async def start(self, handler: Handler, credentials: Credentials) -> None:
        """Bind every client listener (a SASL one finding SCRAM's ``credentials`` in the
        broker's image)."""
        for endpoint in self.config.broker_endpoints:
            server = await start_server(
                handler,
                Listener.BROKER,
                host=endpoint.host,
                port=endpoint.port,
                max_request_bytes=self.config.socket_request_max_bytes,
                name=f"broker {self.config.node_id} {endpoint.listener_name}",
                limits=self.config.server_limits(),
                security=listener_security(self.config, endpoint.listener_name),
                sasl=listener_sasl(self.config, endpoint.listener_name, credentials),
            )
            self.servers.append(server)

    async def close(self) -> None:
        for server in self.servers:
            await server.close()

    def bound_endpoints(self) -> list[Endpoint]:
        """The client listeners as bound (a configured port 0 shows the real one)."""
        return [
            Endpoint(e.listener_name, e.host, server.port)
            for e, server in zip(self.config.broker_endpoints, self.servers, strict=True)
        ]

    def advertised_endpoints(self) -> list[Endpoint]:
        """The listeners registered with the controller: ``advertised.listeners`` (default:
        the bound listeners), with a configured port 0 replaced by the bound port."""
        bound = {e.listener_name: e for e in self.bound_endpoints()}
        out = []
        for endpoint in self.config.advertised_listeners:
            if endpoint.listener_name in self.config.controller_listener_names:
                continue
            actual = bound.get(endpoint.listener_name)
            port = endpoint.port or (actual.port if actual else 0)
            out.append(Endpoint(endpoint.listener_name, endpoint.host, port))
        return out

    def registration(self) -> list[dict[str, Any]]:
        """BrokerRegistration's listeners, as plain values."""
        return [
            {
                "name": e.listener_name,
                "host": e.host,
                "port": e.port,
                "security_protocol": protocol_id(self.config.protocol_of(e.listener_name)),
            }
            for e in self.advertised_endpoints()
        ]
