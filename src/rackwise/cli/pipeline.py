"""``rackwise pipeline generate|audit|plan``: the fleet pipeline, in process or on Spark.

The options and stages live in :mod:`rackwise.pipeline._command`, which
``spark-submit .../rackwise/pipeline/__main__.py`` runs too; nothing imports Spark (or pyarrow,
pandas) until a subcommand that needs it runs, and Spark only when the engine chosen is Spark.
"""

from __future__ import annotations

import argparse

from rackwise.pipeline import _command


def configure(parser: argparse.ArgumentParser) -> None:
    _command.configure(parser)
    parser.set_defaults(run=_command.run)
