"""Fixtures every test package may use: controller processes started for real.

The tests that send SIGINT to a command they started need it to arrive as it would from a
terminal. A process started in the background by a non-interactive shell (``make test &``,
a CI runner) ignores SIGINT, and every process it starts inherits that, through exec, until
one sets a handler: so this session takes Python's own handler back, and the commands the
tests start get SIGINT's default action."""

import signal

from tests.processes import controller_factory

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

__all__ = ["controller_factory"]
