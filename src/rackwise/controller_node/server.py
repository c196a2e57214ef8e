"""The controller process (KIP-631), ``rackwise controller start``: a
:class:`~rackwise.controller_node.node.ControllerNode`, one voter of the quorum
``controller.quorum.voters`` names (this controller alone, or 3 or 5), served until SIGTERM or
SIGINT.

Constraints
    * The process reports itself ready (one line naming its listener) only once the metadata
      log is recovered and the listener bound.
    * The metadata log failing (a write or fsync error) is fatal: every waiting command fails,
      the process logs one line and exits with status 1, as Kafka's controller does on a fault
      in its log. Recovery happens at the next start. A clean stop exits with status 0.
    * A configuration that is not a controller's is refused before anything is opened.

Worked example
    ``rackwise controller start --config controller.properties`` with
    ``controller.quorum.voters=3000@127.0.0.1:9093``: the log in ``metadata.log.dir`` is
    recovered, the controller leads epoch 1 of its one-voter quorum at once, the listener is
    bound on 9093, the ready line is printed; SIGTERM closes the
    listener, fails what waits, closes the log and the process exits with status 0.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Final

from rackwise.controller_node.metrics import controller_collector
from rackwise.controller_node.node import ControllerNode
from rackwise.node.config import load_node_config
from rackwise.node.metrics import authentication_collector, chain, serve_metrics
from rackwise.node.process import configure_logging, report_ready, run_until_stopped
from rackwise.node.properties_file import ConfigException

LOG: Final = logging.getLogger("rackwise.controller")


def run_controller(config_path: str, overrides: Mapping[str, str] | None = None) -> int:
    """``rackwise controller start --config FILE [--override KEY=VALUE]``: serve until SIGTERM
    or SIGINT."""
    config = load_node_config(config_path, overrides)
    if not config.is_controller:
        raise ConfigException(
            f"{config_path}: process.roles={config.role}; start it with rackwise {config.role} "
            "start"
        )
    configure_logging("controller", config.node_id)

    async def main(stop: asyncio.Event) -> int:
        node = ControllerNode(config)
        node.open()
        metrics = None
        try:
            await node.start()
            metrics = serve_metrics(
                config.properties,
                chain(
                    node.requests.collect,
                    authentication_collector(
                        lambda: [] if node.server is None else [node.server.server]
                    ),
                    controller_collector(lambda: node.controller),
                ),
            )
            report_ready("controller", config.node_id, [node.endpoint])
            LOG.info("serving on %s", node.endpoint)
            stopping = asyncio.ensure_future(stop.wait())
            dying = asyncio.ensure_future(node.stopped.wait())
            await asyncio.wait([stopping, dying], return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            dying.cancel()
        finally:
            if metrics is not None:
                metrics.close()
            await node.close()
        if node.fatal is not None:
            return 1
        LOG.info("stopped")
        return 0

    return run_until_stopped(main)
