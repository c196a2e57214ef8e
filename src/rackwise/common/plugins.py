"""Loading a plug-in class named in a configuration as ``package.module:ClassName``, for every
setting that takes one (``broker.replica.placer``, ``replica.selector.class``).

The loader imports the module, finds the class, constructs an instance and checks that it has
the method its caller needs. Each step that fails raises the caller's exception with the
caller's wording (:class:`PluginMessages`), so each setting keeps its own error messages; the
exception that made a step fail is chained and shown as ``Type: message``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PluginMessages:
    """What a caller says when its plug-in cannot be loaded, one ``str.format`` template per
    step, over ``path`` (the value as configured), ``module`` and ``cls`` (the module and
    class names) and ``error`` (the exception of the step as ``Type: message``; empty when the
    step raised none)."""

    not_imported: str
    no_class: str
    not_constructed: str
    no_method: str


def load_plugin(
    path: str,
    *,
    method: str,
    messages: PluginMessages,
    error: Callable[[str], Exception],
    construct: Callable[[Any], Any] = lambda cls: cls(),
    classes_only: bool = True,
    shown: str | None = None,
) -> Any:
    """An instance of the class ``path`` (``package.module:ClassName``) names, made by
    ``construct`` (no arguments by default), that has a callable ``method``.

    With ``classes_only`` the attribute must be a class; without, anything ``construct`` can
    call will do. A failing step raises ``error(message)``, the message from ``messages`` with
    ``shown`` (default ``path``) as the path.
    """
    module_name, _, class_name = path.partition(":")

    def fail(template: str, cause: BaseException | None = None) -> Exception:
        text = "" if cause is None else f"{type(cause).__name__}: {cause}"
        return error(
            template.format(
                path=path if shown is None else shown,
                module=module_name,
                cls=class_name,
                error=text,
            )
        )

    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise fail(messages.not_imported, e) from e
    try:
        cls = getattr(module, class_name)
    except Exception as e:
        raise fail(messages.no_class, e) from e
    if classes_only and not isinstance(cls, type):
        raise fail(messages.no_class)
    try:
        instance = construct(cls)
    except Exception as e:
        raise fail(messages.not_constructed, e) from e
    if not callable(getattr(instance, method, None)):
        raise fail(messages.no_method)
    return instance
