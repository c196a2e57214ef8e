"""A broker's log directories and their ``meta.properties`` (Kafka's ``MetaProperties`` and
``MetaPropertiesEnsemble``), and the cluster id a broker tells clients.

Goals
    Each ``log.dirs`` entry holds a ``meta.properties`` as Kafka writes it (``version=1``,
    ``node.id``, ``directory.id``, and ``cluster.id`` when known), created on first start and
    kept after; a ``node.id`` there that differs from the configured one is refused, naming the
    file, and so is a ``cluster.id`` that differs from the configured one.

Constraints
    * A directory that cannot be created or read at start is offline (KIP-112), logged in one
      line; a broker left with none refuses to start, with Kafka's message.
    * Directory ids are random, never one of the 100 that Kafka reserves (``Uuid.RESERVED``).
    * ``meta.properties`` is replaced whole: a temporary file, fsynced, renamed into place.

Algorithm
    ``cluster.id`` from the configuration, else from ``meta.properties``, is sent to the
    controller (which refuses a different one). A broker without either tells clients an id
    derived from the controller addresses it was given (the same for every broker of the
    cluster), since clients need one: librdkafka fails on a null cluster id.

Worked example
    ``ensure_log_dirs([Path("/data/a")], 7, None)`` on an empty ``/data/a`` writes
    ``/data/a/meta.properties`` with ``node.id=7``, ``version=1`` and a new ``directory.id``,
    and gives ``[LogDirectory(Path("/data/a"), <that id>)]``; the next start reads the same id
    back, and a start as node 8 is refused.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rackwise.common.errors import RackwiseError
from rackwise.formats.properties import format_properties
from rackwise.node.properties_file import load_properties
from rackwise.records import kafka_uuid, parse_kafka_uuid
from rackwise.storage.checkpoints import atomic_write

LOG: Final = logging.getLogger("rackwise.node.meta_properties")

META_PROPERTIES: Final = "meta.properties"
RESERVED_UUIDS: Final = 100
"""Kafka reserves the uuids below 100 (``Uuid.RESERVED``): no directory id takes one."""


class BrokerStartupError(RackwiseError):
    """A broker that cannot start as configured (its log directories disagree with it)."""


@dataclass(frozen=True, slots=True)
class LogDirectory:
    """One ``log.dirs`` entry and the id its ``meta.properties`` gives it."""

    path: Path
    directory_id: uuid.UUID


def _new_directory_id() -> uuid.UUID:
    while True:
        candidate = uuid.uuid4()
        if candidate.int >= RESERVED_UUIDS:
            return candidate


def render_meta_properties(values: dict[str, str]) -> str:
    """``meta.properties`` as Kafka writes it: a comment, then ``key=value`` lines, sorted."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    return format_properties({key: values[key] for key in sorted(values)}, ["", stamp])


def ensure_log_dirs(
    paths: Sequence[Path], node_id: int, cluster_id: str | None
) -> list[LogDirectory]:
    """Each log directory with its id: read from its ``meta.properties``, or created with a
    new id on first start (written to a temporary file, fsynced and renamed into place)."""
    result = []
    for path in paths:
        try:
            result.append(_ensure_log_dir(path, node_id, cluster_id))
        except OSError as e:  # KIP-112: a directory that fails at start is offline
            LOG.error("Failed to use log dir %s, it is offline: %s", path, e)
    if not result:
        raise BrokerStartupError(
            "Shutdown broker because none of the specified log dirs from "
            f"{','.join(str(p) for p in paths)} can be created or validated"
        )
    return result


def _ensure_log_dir(path: Path, node_id: int, cluster_id: str | None) -> LogDirectory:
    path.mkdir(parents=True, exist_ok=True)
    meta = path / META_PROPERTIES
    props: dict[str, str] = {}
    if meta.exists():
        props = dict(load_properties(meta))
        stored = props.get("node.id")
        if stored is not None and stored.strip() != str(node_id):
            raise BrokerStartupError(
                f"Stored node id {stored.strip()} doesn't match previous node id "
                f"{node_id} in {meta}. If you moved your data, make sure your configured "
                "node id matches."
            )
        stored_cluster = props.get("cluster.id")
        if cluster_id and stored_cluster and stored_cluster != cluster_id:
            raise BrokerStartupError(
                f"Invalid cluster.id in {meta}. Expected {stored_cluster}, but read "
                f"{cluster_id} from the configuration"
            )
        text = props.get("directory.id")
        if text:
            return LogDirectory(path, parse_kafka_uuid(text.strip()))
    values = {**props, "version": "1", "node.id": str(node_id)}
    directory_id = _new_directory_id()
    values["directory.id"] = kafka_uuid(directory_id)
    if cluster_id and "cluster.id" not in values:
        values["cluster.id"] = cluster_id
    atomic_write(meta, render_meta_properties(values).encode())
    return LogDirectory(path, directory_id)


def derived_cluster_id(controller_addresses: Sequence[tuple[str, int]]) -> str:
    """A cluster id for a broker configured without one: the same for every broker given the
    same controller addresses (a hash of them, as a Kafka uuid string). Clients need one
    (librdkafka fails on a null cluster id); it is never written to ``meta.properties`` nor
    sent to the controller, so configuring ``cluster.id`` later is not a mismatch."""
    text = ",".join(f"{host}:{port}" for host, port in sorted(controller_addresses))
    digest = hashlib.sha256(f"rackwise-cluster:{text}".encode()).digest()
    return kafka_uuid(uuid.UUID(bytes=digest[:16]))


def stored_cluster_id(paths: Sequence[Path]) -> str | None:
    """The ``cluster.id`` recorded in the first log directory that has one."""
    for path in paths:
        meta = path / META_PROPERTIES
        if meta.exists():
            value = load_properties(meta).get("cluster.id", "").strip()
            if value:
                return value
    return None
