"""SCRAM credentials: AlterUserScramCredentials' checks and records, their replay into the image
(brokers and controllers alike) and snapshots, and DescribeUserScramCredentials' answers."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.common.error_codes import (
    DUPLICATE_RESOURCE,
    NONE,
    RESOURCE_NOT_FOUND,
    UNACCEPTABLE_CREDENTIAL,
    UNSUPPORTED_SASL_MECHANISM,
)
from rackwise.controller.scram import (
    ScramDeletion,
    ScramUpsertion,
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from rackwise.image import MetadataImage
from rackwise.image.delta import ReplayError, replay
from rackwise.records.metadata import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from rackwise.security.scram import ScramMechanism

SHA256, SHA512 = 1, 2


def upsert(name: str, mechanism: int = SHA512, iterations: int = 8192) -> ScramUpsertion:
    salted = hashlib.pbkdf2_hmac("sha512", b"secret", b"salt", iterations)
    return ScramUpsertion(name, mechanism, iterations, b"salt", salted)


def alter(
    image: MetadataImage, deletions: list[ScramDeletion], upsertions: list[ScramUpsertion]
) -> tuple[MetadataImage, list[tuple[str, int, str | None]]]:
    records: list[object] = []
    results = alter_user_scram_credentials(image, deletions, upsertions, records)
    return replay(records, image), [(u, e.error_code, e.message) for u, e in results]


def test_an_upsertion_stores_keys_never_the_password() -> None:
    image, results = alter(MetadataImage(), [], [upsert("alice")])
    assert results == [("alice", NONE, None)]
    record = image.scram_credentials[("alice", SHA512)]
    salted = hashlib.pbkdf2_hmac("sha512", b"secret", b"salt", 8192)
    client_key = hmac.digest(salted, b"Client Key", "sha512")
    assert record.stored_key == hashlib.sha512(client_key).digest()
    assert record.server_key == hmac.digest(salted, b"Server Key", "sha512")
    assert salted not in (record.salt, record.stored_key, record.server_key)
    assert (record.salt, record.iterations) == (b"salt", 8192)


@pytest.mark.parametrize(
    ("upsertion", "code", "message"),
    [
        (upsert("alice", iterations=4095), UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        (upsert("alice", iterations=16385), UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        (upsert("", iterations=8192), UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        (upsert("alice", mechanism=3), UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        (upsert("alice", mechanism=0), UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    ],
)
def test_unacceptable_upsertions(upsertion: ScramUpsertion, code: int, message: str) -> None:
    image, results = alter(MetadataImage(), [], [upsertion])
    assert results == [(upsertion.name, code, message)]
    assert not image.scram_credentials


def test_bounds_are_inclusive() -> None:
    image, results = alter(MetadataImage(), [], [upsert("a", iterations=4096)])
    image, more = alter(image, [], [upsert("b", SHA256, iterations=16384)])
    assert [r[1] for r in results + more] == [NONE, NONE]
    assert set(image.scram_credentials) == {("a", SHA512), ("b", SHA256)}


def test_a_user_twice_in_one_request_is_a_duplicate_and_writes_nothing() -> None:
    image, _ = alter(MetadataImage(), [], [upsert("alice", SHA256)])
    after, results = alter(
        image,
        [ScramDeletion("alice", SHA256)],
        [upsert("alice", SHA512), upsert("bob"), upsert("bob", SHA256)],
    )
    twice = "A user credential cannot be altered twice in the same request"
    assert results == [("alice", DUPLICATE_RESOURCE, twice), ("bob", DUPLICATE_RESOURCE, twice)]
    assert after.scram_credentials == image.scram_credentials


def test_deleting_what_does_not_exist_is_not_found() -> None:
    image, results = alter(MetadataImage(), [ScramDeletion("alice", SHA512)], [])
    assert results == [
        ("alice", RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
    ]
    image, _ = alter(image, [], [upsert("alice")])
    image, results = alter(image, [ScramDeletion("alice", SHA512)], [])
    assert results == [("alice", NONE, None)] and not image.scram_credentials


def test_replaying_a_removal_of_nothing_is_a_bug() -> None:
    with pytest.raises(ReplayError, match="no such credential"):
        replay([RemoveUserScramCredentialRecord(name="x", mechanism=SHA512)])


def test_describe_as_kafka_answers() -> None:
    image, _ = alter(MetadataImage(), [], [upsert("alice"), upsert("bob", SHA256, 4096)])
    image, _ = alter(image, [], [upsert("alice", SHA256, 5000)])
    every = describe_user_scram_credentials(image.scram_credentials, None)
    assert [(d.user, d.credentials) for d in every] == [
        ("alice", ((SHA256, 5000), (SHA512, 8192))),
        ("bob", ((SHA256, 4096),)),
    ]
    named = describe_user_scram_credentials(image.scram_credentials, ["carol", "bob", "bob"])
    assert [(d.user, d.error.error_code, d.error.message) for d in named] == [
        (
            "carol",
            RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: carol",
        ),
        (
            "bob",
            DUPLICATE_RESOURCE,
            "Cannot describe SCRAM credentials for the same user twice in a single request: bob",
        ),
    ]


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("abc"), st.sampled_from([SHA256, SHA512]), st.booleans()),
        max_size=12,
    )
)
def test_snapshots_keep_the_credentials(steps: list[tuple[str, int, bool]]) -> None:
    image = MetadataImage()
    for name, mechanism, delete in steps:
        if delete:
            image, _ = alter(image, [ScramDeletion(name, mechanism)], [])
        else:
            image, _ = alter(image, [], [upsert(name, mechanism, 4096)])
    records = image.to_records()
    assert replay(records).scram_credentials == image.scram_credentials
    assert all(
        isinstance(r, UserScramCredentialRecord)
        for r in records
        if type(r).__name__.startswith("User")
    )
    for (name, mechanism), record in image.scram_credentials.items():
        scram = ScramMechanism.by_type(mechanism)
        assert scram is not None and record.name == name
