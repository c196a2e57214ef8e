"""Kernels that run interpreted on small inputs and compiled (numba) on large ones.

A kernel is written once, in the subset of Python that numba compiles: loops over NumPy int64
arrays. Small placements (the CLI's usual case) run it as plain Python, so starting the command
never pays for loading the compiler; large ones run the compiled form, cached on disk so it is
compiled once per installation (``python -m rackwise.placement.warmup`` does it at install time).
Both forms execute the same statements, so they give the same answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

JIT_MIN_WORK: Final = 20_000
"""Replica slots (partitions x replication factor) from which the compiled kernel is used."""


class Kernel(Generic[F]):
    """A kernel function with its lazily compiled twin."""

    def __init__(self, fn: F) -> None:
        self.python: F = fn
        self._compiled: F | None = None

    def compiled(self) -> F:
        if self._compiled is None:
            from numba import njit  # noqa: PLC0415 - deferred: loading numba costs ~0.2 s

            self._compiled = njit(cache=True, nogil=True)(self.python)
        return self._compiled

    def for_work(self, work: int) -> F:
        """The form to run for ``work`` replica slots."""
        return self.compiled() if work >= JIT_MIN_WORK else self.python


def kernel(fn: F) -> Kernel[F]:
    return Kernel(fn)
