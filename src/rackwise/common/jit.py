"""Kernels that run interpreted on small inputs and compiled (numba) on large ones.

A kernel is written once, in the subset of Python that numba compiles: loops over NumPy integer
arrays and ints. Small inputs (a placement from the CLI, its usual case) run it as plain Python,
so starting the command never pays for loading the compiler; large ones run the compiled form,
cached on disk so it is compiled once per installation (``python -m rackwise.placement.warmup``
and ``python -m rackwise.storage.warmup`` do it at install time). Both forms execute the same
statements, so they give the same answer.

A kernel may call other kernels: called from Python, a kernel runs its Python form; compiled,
the calls are bound to the other kernels' compiled forms (in the kernel and in the closures it
defines).

Array reads and writes in a hot loop may index through :data:`idx`: compiled, it makes the
index unsigned, so numba leaves out the wrap-around test a negative index needs (a fifth of the
multi-level placer's time); interpreted, it is ``operator.index``, a C call that returns the
index as it is.
"""

from __future__ import annotations

import operator
import types
from collections.abc import Callable
from typing import Any, Final

import numpy as np

JIT_MIN_WORK: Final = 20_000
"""Units of work from which :meth:`Kernel.for_work` picks the compiled kernel (for the placers:
replica slots, partitions x replication factor)."""

idx: Final = operator.index
"""``a[idx(i)]``: index ``a`` with ``i``, which must not be negative (see the module docstring)."""


class Kernel:
    """A kernel function with its lazily compiled twin."""

    def __init__(self, fn: Callable[..., Any], *, inline: bool = False) -> None:
        self.python = fn
        self.inline = inline
        self._compiled: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        return self.python(*args)

    def compiled(self) -> Callable[..., Any]:
        if self._compiled is None:
            from numba import njit  # noqa: PLC0415 - deferred: loading numba costs ~0.2 s

            fn = self.python
            scope = dict(fn.__globals__)
            for name in _names(fn.__code__):
                value = scope.get(name)
                if isinstance(value, Kernel):
                    scope[name] = value.compiled()
                elif value is idx:
                    scope[name] = _compiled_idx()
            bound = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__)
            bound.__qualname__ = fn.__qualname__
            bound.__module__ = fn.__module__
            options: dict[str, Any] = {"inline": "always"} if self.inline else {}
            self._compiled = njit(cache=True, nogil=True, **options)(bound)
        return self._compiled

    def for_work(self, work: int) -> Callable[..., Any]:
        """The form to run for ``work`` replica slots."""
        return self.compiled() if work >= JIT_MIN_WORK else self.python


def _names(code: types.CodeType) -> set[str]:
    """The global names ``code`` and the functions defined in it refer to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _unsigned_index(i: int) -> Any:
    """``idx`` compiled: the index as an unsigned integer."""
    return np.uint64(i)


_COMPILED_IDX: list[Callable[..., Any]] = []


def _compiled_idx() -> Callable[..., Any]:
    if not _COMPILED_IDX:
        from numba import njit  # noqa: PLC0415 - deferred, as above

        _COMPILED_IDX.append(njit(cache=True, nogil=True, inline="always")(_unsigned_index))
    return _COMPILED_IDX[0]


def kernel(fn: Callable[..., Any]) -> Kernel:
    """A kernel entry point."""
    return Kernel(fn)


def inline_kernel(fn: Callable[..., Any]) -> Kernel:
    """A kernel helper, inlined into the kernels that call it when compiled (passing arrays to a
    compiled call costs reference counting on every call, which dominates a small helper)."""
    return Kernel(fn, inline=True)
