"""A controller and a broker for real with SASL: the controller listener SASL_PLAINTEXT with
PLAIN (the broker logs in to it), the broker's listeners SASL_PLAINTEXT (PLAIN and
SCRAM-SHA-256/512, the inter-broker listener) and PLAINTEXT beside it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from rackwise.formats.properties import format_properties
from rackwise.node.process import parse_ready_line

PLAIN_JAAS: Final = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_bob="bob-secret";'
)
SECURITY_MAP: Final = "CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT"
CONTROLLER_SASL: Final = {
    "listener.security.protocol.map": SECURITY_MAP,
    "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
    "listener.name.controller.plain.sasl.jaas.config": PLAIN_JAAS,
    "sasl.mechanism.controller.protocol": "PLAIN",
}


@dataclass
class Node:
    role: str
    directory: Path
    props: Mapping[str, str]
    proc: subprocess.Popen[str] | None = None
    ports: dict[str, int] = field(default_factory=dict)

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{self.role}.properties"
        path.write_text(format_properties(self.props), encoding="utf-8")
        with (self.directory / "stderr.log").open("a", encoding="utf-8") as stderr:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rackwise.cli.main",
                    self.role,
                    "start",
                    "--config",
                    str(path),
                ],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        ready = parse_ready_line(line)
        if ready is None:
            code = self.proc.wait(timeout=30)
            log = (self.directory / "stderr.log").read_text(encoding="utf-8")
            raise AssertionError(f"{self.role} exited with {code}: {line!r}\n{log}")
        self.ports = {e.listener_name: e.port for e in ready.listeners}

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None


@dataclass
class SaslCluster:
    controller: Node
    broker: Node

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker.ports['SASL_PLAINTEXT']}"

    @property
    def plain_bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker.ports['PLAINTEXT']}"

    def stop(self) -> None:
        self.broker.stop()
        self.controller.stop()


def start_sasl_cluster(directory: Path, ports: tuple[int, int], **broker_extra: str) -> SaslCluster:
    """Start the controller, then the broker on ``ports`` (SASL_PLAINTEXT, PLAINTEXT)."""
    controller = Node(
        "controller",
        directory / "controller",
        {
            "node.id": "1",
            "process.roles": "controller",
            "listeners": "CONTROLLER://127.0.0.1:0",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": "1@127.0.0.1:0",
            "metadata.log.dir": str(directory / "controller" / "meta"),
            **CONTROLLER_SASL,
        },
    )
    controller.start()
    sasl_port, plain_port = ports
    broker = Node(
        "broker",
        directory / "broker",
        {
            "node.id": "2",
            "process.roles": "broker",
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{sasl_port},PLAINTEXT://127.0.0.1:{plain_port}",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller.ports['CONTROLLER']}",
            "log.dirs": str(directory / "broker" / "data"),
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "offsets.topic.replication.factor": "1",
            **CONTROLLER_SASL,
            **broker_extra,
        },
    )
    try:
        broker.start()
    except BaseException:
        controller.stop()
        raise
    return SaslCluster(controller, broker)
