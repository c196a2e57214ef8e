"""rackwise's own messages: their schemas are checked as strictly as the records', their
classes pass for kio's, their codec writes kio's bytes, and the stub matches them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

import rackwise.protocol
from rackwise.protocol import SUPPORTED
from rackwise.protocol import messages as own
from rackwise.protocol.bodies import read_body, write_body
from rackwise.protocol.specs import OWN_APIS, build_own_apis, parse_api_spec
from rackwise.protocol.stubs import render_stub
from rackwise.records.errors import SchemaError
from tests.protocol.helpers import OWN_API_SPECS, every_class
from tests.records.strategies import records_of

STUB = Path(rackwise.protocol.__file__).parent / "messages.pyi"
SCHEMAS = Path(rackwise.protocol.__file__).parent / "schemas"
OWN_CLASSES = every_class(OWN_API_SPECS)


def _schema(**changes: object) -> str:
    document: dict[str, object] = {
        "apiKey": 1000,
        "type": "request",
        "listeners": ["broker"],
        "name": "ThingRequest",
        "validVersions": "0",
        "flexibleVersions": "0+",
        "fields": [{"name": "Id", "type": "int32", "versions": "0+", "about": "An id."}],
    }
    document.update(changes)
    return json.dumps({k: v for k, v in document.items() if v is not None})


def _response(**changes: object) -> str:
    values: dict[str, object] = {"type": "response", "name": "ThingResponse", "listeners": None}
    return _schema(**{**values, **changes})


def test_the_apis_and_their_listeners_match_the_table() -> None:
    assert sorted(OWN_APIS) == [1000]
    for key, api in OWN_APIS.items():
        assert {listener.value for listener in SUPPORTED[key].listeners} == api.listeners
    assert OWN_APIS[1000].name == "CreateReplicaPlacement"


def test_the_classes_pass_for_kios() -> None:
    request = own.CreateReplicaPlacementRequest
    response = own.CreateReplicaPlacementResponse
    assert request.__type__ is EntityType.request  # type: ignore[attr-defined]
    assert response.__type__ is EntityType.response  # type: ignore[attr-defined]
    assert response.ReplicaPlacement.__type__ is EntityType.nested  # type: ignore[attr-defined]
    assert request.__header_schema__.__version__ == 2  # type: ignore[attr-defined]
    assert response.__header_schema__.__version__ == 1  # type: ignore[attr-defined]
    assert request.__module__ == "rackwise.protocol.messages"
    assert (request.__api_key__, request.__version__) == (1000, 0)


def test_kip_879s_fields_and_defaults() -> None:
    request = own.CreateReplicaPlacementRequest(num_partitions=6, replication_factor=3, node_id=())
    assert request.force_simple_placement is False
    assert request.timeout_ms == 60000
    response = own.CreateReplicaPlacementResponse(replica_placement=())
    assert (response.error_code, response.error_message, response.throttle_time_ms) == (0, None, 0)


@pytest.mark.parametrize(("name", "cls"), OWN_CLASSES, ids=[n for n, _ in OWN_CLASSES])
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_our_codec_writes_and_reads_kios_bytes(name: str, cls: type, data: st.DataObject) -> None:
    message = data.draw(records_of(cls))
    ours = write_body(message)
    out = io.BytesIO()
    entity_writer(cls)(out, message)  # type: ignore[arg-type]
    assert ours == out.getvalue()
    assert entity_reader(cls)(ours, 0) == (message, len(ours))  # type: ignore[arg-type]
    assert read_body(cls, ours) == (message, len(ours))


def test_the_stub_matches_the_schemas() -> None:
    assert STUB.read_text() == render_stub(), (
        'regenerate it: .venv/bin/python -c "from rackwise.protocol.stubs import render_stub; '
        "print(render_stub(), end='')\" > src/rackwise/protocol/messages.pyi"
    )
    for name in own.__all__:
        assert f'"{name}"' in STUB.read_text()


def test_the_packaged_schemas_are_the_ones_loaded() -> None:
    texts = {path.name: path.read_text() for path in SCHEMAS.glob("*.json")}
    assert len(texts) == 2
    rebuilt = build_own_apis(texts)
    assert {k: api.request for k, api in rebuilt.items()} == {
        k: api.request for k, api in OWN_APIS.items()
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_schema(type="metadata"), "type must be 'request' or 'response', not 'metadata'"),
        (_schema(listeners=None), "a request must list its listeners"),
        (_schema(listeners=["zkBroker"]), r"unknown listener\(s\) zkBroker"),
        (_response(listeners=["broker"]), "only a request has listeners"),
        (_schema(validVersions="0-1", flexibleVersions="1+"), "every version .* must be flexible"),
        (
            _schema(fields=[{"name": "Id", "type": "int32", "versions": "0+"}]),
            "about must be a string",
        ),
        ("not json", "not JSON"),
    ],
)
def test_malformed_schemas_are_refused(text: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        parse_api_spec(text, "ThingRequest.json")


def test_a_request_needs_its_response_and_matching_names() -> None:
    with pytest.raises(SchemaError, match=r"api key\(s\) \[1000\] lack a request or a response"):
        build_own_apis({"ThingRequest.json": _schema()})
    with pytest.raises(SchemaError, match=r"must be named ThingRequest\.json"):
        build_own_apis({"Other.json": _schema(), "ThingResponse.json": _response()})
    with pytest.raises(SchemaError, match="a request name must end in Request"):
        build_own_apis({"Thing.json": _schema(name="Thing"), "ThingResponse.json": _response()})
    with pytest.raises(SchemaError, match="must have the same versions"):
        build_own_apis(
            {
                "ThingRequest.json": _schema(),
                "ThingResponse.json": _response(validVersions="0-1"),
            }
        )
    apis = build_own_apis({"ThingRequest.json": _schema(), "ThingResponse.json": _response()})
    assert apis[1000].name == "Thing"
    assert apis[1000].listeners == frozenset({"broker"})
