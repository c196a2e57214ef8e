"""The type stub of :mod:`rackwise.protocol.messages`, rendered from the schemas as the
metadata records' stub is (:mod:`rackwise.records.stubs`).

The message classes are built at import time, so a type checker cannot see them;
``messages.pyi`` declares them. It is generated, never edited: a test renders it again and
compares. To regenerate after changing a schema::

    .venv/bin/python -c "from rackwise.protocol.stubs import render_stub; \\
        print(render_stub(), end='')" > src/rackwise/protocol/messages.pyi
"""

from __future__ import annotations

from typing import Final

from rackwise.protocol.specs import OWN_APIS
from rackwise.records.stubs import _class_lines

_HEADER: Final = '''"""Generated from the schemas by rackwise.protocol.stubs; do not edit."""

{uuid}from dataclasses import dataclass
from typing import ClassVar

from rackwise.records.spec import FieldSpec
'''


def render_stub() -> str:
    """The text of ``messages.pyi``."""
    parts: list[str] = []
    names: list[str] = []
    for api_key in sorted(OWN_APIS):
        api = OWN_APIS[api_key]
        for spec, classes in (
            (api.request, api.request_classes),
            (api.response, api.response_classes),
        ):
            for version in sorted(classes):
                name = f"{spec.name}V{version}"
                parts.append("\n" + "\n".join(_class_lines(name, spec.fields, version, 0)) + "\n")
                names.append(name)
            parts.append(f"\n{spec.name} = {spec.name}V{max(classes)}\n")
            names.append(spec.name)
    parts.append("\n__all__ = [\n" + "".join(f'    "{n}",\n' for n in sorted(names)) + "]\n")
    body = "".join(parts)
    header = _HEADER.format(uuid="import uuid\n" if "uuid.UUID" in body else "")
    return header + body
