"""What taking in small TLS records costs a listener's event loop, per 100 MB.

librdkafka writes a produce request to its TLS connection piece by piece, about one TLS record
per message: of 1 KiB records, some 75,000 to 105,000 TLS records per 100 MB arrive
(``bench/tls_client_records.py``; kafka-python and aiokafka send about 6,100 of 16 KiB), and
the broker's TLS transport calls the SSL object's ``read`` and ``pending`` for each. This
measures the loop's CPU seconds (``time.thread_time`` of the loop's thread) to take in ``--mb``
MB through a :class:`rackwise.net.frames.FrameStream` on uvloop, read as 256 KiB bodies the
way the broker reads produce requests, from a client process sending ``--record`` bytes per
write:

  plaintext   the same bytes over TCP without TLS (what the loop costs anyway)
  tls         the same bytes over TLS, the listener's own context (``net.tls.server_context``)

The two alternate ``--rounds`` times; medians, and the median of each round's ratio
tls / plaintext. The difference is the least a TLS listener adds per 100 MB to the loop's
thread, before any request is served.

    .venv/bin/python bench/tls_records.py [--mb 100] [--record 1386] [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import ssl
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import uvloop

from rackwise.cluster.certificates import ensure_ca, save_ca, write_node_keystore
from rackwise.net.frames import FrameStream
from rackwise.net.tls import server_context
from rackwise.security.ssl_config import ssl_settings

BODY = 262_144
STORE_PASSWORD = "store-pw"


def send(port: int, ca: str | None, total: int, record: int) -> None:
    """The client process: ``total`` bytes in writes of ``record`` bytes."""
    sock = socket.create_connection(("127.0.0.1", port))
    if ca is not None:
        context = ssl.create_default_context(cafile=ca)
        context.check_hostname = False
        sock = context.wrap_socket(sock)
    chunk = b"x" * record
    for _ in range(total // record):
        sock.sendall(chunk)
    sock.recv(1)  # the server's one byte once it has read everything
    sock.close()


async def receive(context: ssl.SSLContext | None, ca: str, total: int, record: int) -> float:
    """Loop CPU seconds to take in ``total // record * record`` bytes."""
    loop = asyncio.get_running_loop()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    sender = multiprocessing.get_context("fork").Process(
        target=send,
        args=(listener.getsockname()[1], None if context is None else ca, total, record),
    )
    sender.start()
    sock, _ = await loop.sock_accept(listener)
    listener.close()
    stream = FrameStream()
    await loop.connect_accepted_socket(lambda: stream, sock, ssl=context)
    expected = total // record * record
    began = time.thread_time()
    taken = 0
    while taken < expected:
        size = min(BODY, expected - taken)
        await stream.read_body(size)
        taken += size
    cpu = time.thread_time() - began
    stream.write(b"!")
    await stream.drain()
    await asyncio.get_running_loop().run_in_executor(None, sender.join)
    stream.close()
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--record", type=int, default=1386)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    total = args.mb * 1_000_000
    with tempfile.TemporaryDirectory() as directory:
        ca = ensure_ca(Path(directory))
        save_ca(ca)
        keystore = Path(directory) / "listener.p12"
        write_node_keystore(ca, keystore, "listener", STORE_PASSWORD)
        settings = ssl_settings(
            {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": str(keystore),
                "ssl.keystore.password": STORE_PASSWORD,
                "ssl.key.password": STORE_PASSWORD,
            },
            "SSL",
        )
        tls = server_context(settings)
        tls.num_tickets = 0  # the client reads none; unread tickets would reset its close
        contexts: dict[str, ssl.SSLContext | None] = {"plaintext": None, "tls": tls}
        runs: dict[str, list[float]] = {name: [] for name in contexts}
        for r in range(args.rounds):
            for name, context in contexts.items():
                cpu = uvloop.run(receive(context, str(ca.pem_path), total, args.record))
                runs[name].append(cpu / (total / 1e8))
            print(
                f"round {r + 1}/{args.rounds}: "
                + ", ".join(f"{n} {v[-1]:.3f} s" for n, v in runs.items())
                + " per 100 MB",
                flush=True,
            )
    figures: dict[str, Any] = {
        f"{name}_cpu_s_per_100mb": statistics.median(v) for name, v in runs.items()
    }
    figures["tls_over_plaintext"] = statistics.median(
        t / p for t, p in zip(runs["tls"], runs["plaintext"], strict=True)
    )
    figures["tls_added_cpu_s_per_100mb"] = (
        figures["tls_cpu_s_per_100mb"] - figures["plaintext_cpu_s_per_100mb"]
    )
    figures["records_per_100mb"] = int(1e8 // args.record)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for name, value in figures.items():
            print(f"{name:28} {value:.3f}" if isinstance(value, float) else f"{name:28} {value}")


if __name__ == "__main__":
    main()
