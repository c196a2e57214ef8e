"""The ``rackwise`` command: one module per subcommand, argument parsing only."""
