"""A server whose process runs out of file descriptors, for real: a child process with a low
``RLIMIT_NOFILE`` serves a listener and opens connections to it until ``socket()`` fails.
Accepting pauses and is retried, the condition is logged once per interval (not once per
attempt, with no traceback), and once descriptors are free again the listener serves."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import asyncio, json, logging, resource, socket, sys, time
    from rackwise.net import KafkaConnection, start_server
    from rackwise.protocol import ApiKey, Listener, api_versions_response

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
    resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))

    async def handler(request):
        return api_versions_response(request.header.api_version, Listener.BROKER)

    async def main():
        server = await start_server(handler, Listener.BROKER, name="broker 1 PLAINTEXT")
        clients = []
        while True:  # until this process has no descriptor left
            try:
                client = socket.socket()
            except OSError:
                break
            client.setblocking(False)
            try:
                client.connect(("127.0.0.1", server.port))
            except BlockingIOError:
                pass
            clients.append(client)
            await asyncio.sleep(0.002)
        await asyncio.sleep(1.5)  # accepting fails and is retried meanwhile
        for client in clients:
            client.close()
        await asyncio.sleep(0.5)
        conn = await KafkaConnection.connect("127.0.0.1", server.port, timeout_s=5)
        versions = await conn.request(ApiKey.API_VERSIONS, version=3,
                                      client_software_name="t", client_software_version="1")
        await conn.close()
        await server.close()
        print(json.dumps({"clients": len(clients), "error_code": int(versions.error_code)}))

    asyncio.run(main())
    """
)


def test_running_out_of_descriptors_is_logged_once_and_serving_resumes() -> None:
    child = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, check=False
    )
    assert child.returncode == 0, child.stderr[-3000:]
    outcome = json.loads(child.stdout)
    assert outcome["error_code"] == 0
    assert outcome["clients"] > 5
    lines = child.stderr.splitlines()
    refusals = [line for line in lines if "cannot accept connections" in line]
    assert len(refusals) == 1, child.stderr[-3000:]
    assert refusals[0].startswith("WARNING broker 1 PLAINTEXT: cannot accept connections:")
    assert "Too many open files (errno 24)" in refusals[0]
    assert "Traceback" not in child.stderr
    assert len(child.stderr) < 4000  # not a line per attempt
