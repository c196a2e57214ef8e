"""``metadata.pyi`` is generated from the schemas and must stay in step with them."""

from __future__ import annotations

from pathlib import Path

import rackwise.records
from rackwise.records import metadata
from rackwise.records.stubs import render_stub

STUB = Path(rackwise.records.__file__).parent / "metadata.pyi"


def test_the_stub_matches_the_schemas() -> None:
    assert STUB.read_text() == render_stub(), (
        'regenerate it: .venv/bin/python -c "from rackwise.records.stubs import render_stub; '
        "print(render_stub(), end='')\" > src/rackwise/records/metadata.pyi"
    )


def test_the_stub_declares_every_runtime_name() -> None:
    text = STUB.read_text()
    for name in metadata.__all__:
        assert f'"{name}"' in text
