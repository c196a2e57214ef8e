"""The command line's own error."""


class CommandError(Exception):
    """Bad input at the command line: printed as one line, exit status 1."""
