"""``rackwise pipeline generate|audit|plan``: the fleet pipeline, in process or on Spark.

The options and stages live in :mod:`rackwise.pipeline._command`, which
``spark-submit .../rackwise/pipeline/__main__.py`` runs too; nothing imports Spark (or pyarrow,
pandas) until a subcommand that needs it runs, and Spark only when the engine chosen is Spark.
SIGTERM ends the command as Ctrl-C does, with one line (``error: terminated``) and status 143;
the output directory being written is removed on the way out, and Spark's JVM is stopped.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Final

from rackwise.pipeline import _command
from rackwise.pipeline.engines import session

EXIT_TERMINATED: Final = 128 + signal.SIGTERM


def configure(parser: argparse.ArgumentParser) -> None:
    _command.configure(parser)
    parser.set_defaults(run=run)


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
