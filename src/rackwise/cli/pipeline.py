"""``rackwise pipeline generate|audit|plan``: the fleet pipeline, in process or on Spark.

The options and stages live in :mod:`rackwise.pipeline._command`, which
``spark-submit .../rackwise/pipeline/__main__.py`` runs too; nothing imports Spark (or pyarrow,
pandas) until a subcommand that needs it runs, and Spark only when the engine chosen is Spark.
SIGTERM ends the command as Ctrl-C does, with one line (``error: terminated``) and status 143;
the output directory being written is removed on the way out, and Spark's JVM is stopped.
Running clusters (``--bootstrap-server``) are read here, through the client layer the pipeline
does not import, and handed to the stages as the rows their files would give.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from rackwise.pipeline import _command
from rackwise.pipeline.engines import session

if TYPE_CHECKING:
    from rackwise.pipeline.ingest.source import InputSource

EXIT_TERMINATED: Final = 128 + signal.SIGTERM
DEFAULT_TIMEOUT_MS: Final = 30_000
"""How long reading one running cluster may take, unless ``request.timeout.ms`` says."""


def configure(parser: argparse.ArgumentParser) -> None:
    _command.configure(parser)
    parser.set_defaults(run=run, live_reader=read_live)


def read_live(source: InputSource, progress: Callable[[str], None], name: str | None) -> Any:
    """``--bootstrap-server``'s clusters read into the rows the JSON files give
    (:mod:`rackwise.client.snapshot_tables`), its progress line per cluster to ``progress``;
    ``name`` names a single cluster given without one."""
    from rackwise.client.command_config import read_command_config, timeout_ms  # noqa: PLC0415
    from rackwise.client.snapshot_tables import read_live as read  # noqa: PLC0415

    path = source.command_config
    config = {} if path is None else read_command_config(str(path), "pipeline")
    return read(source.live, config, timeout_ms(config, DEFAULT_TIMEOUT_MS), progress, name)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand, SIGTERM raising :class:`~session.Terminated` meanwhile."""
    if threading.current_thread() is not threading.main_thread():
        return _command.run(args)
    previous = signal.signal(signal.SIGTERM, session.raise_terminated)
    try:
        return _command.run(args)
    except session.Terminated:
        print("error: terminated", file=sys.stderr, flush=True)
        if "pyspark" not in sys.modules:
            return EXIT_TERMINATED
        # Exit handlers would call into the JVM and log their failures: stop it, and go.
        sys.stdout.flush()
        session.stop_jvm()
        os._exit(EXIT_TERMINATED)
    finally:
        signal.signal(signal.SIGTERM, previous)
