"""``python -m rackwise``: the same as the ``rackwise`` command."""

from rackwise.cli.main import main

raise SystemExit(main())
