"""``spark-submit .../rackwise/pipeline/__main__.py audit|plan|generate ...``: the pipeline
command under ``spark-submit``, which sets the master and resources (or ``python -m
rackwise.pipeline``). The options are those of ``rackwise pipeline``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rackwise.pipeline import _command


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="rackwise-pipeline", description="The rackwise fleet pipeline, on Spark or in process."
    )
    _command.configure(parser)
    args = parser.parse_args(argv)
    from rackwise.common import RackwiseError  # noqa: PLC0415

    try:
        return _command.run(args)
    except (RackwiseError, OSError, ValueError) as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return _command.EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
