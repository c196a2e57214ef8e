"""``python -m rackwise``: the command line, as the ``rackwise`` entry point runs it."""

from rackwise.cli.main import main

raise SystemExit(main())
