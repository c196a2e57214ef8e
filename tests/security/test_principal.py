"""Kafka principals: parsed as Kafka's ``SecurityUtils`` does, printed back the same."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.security import ANONYMOUS, KafkaPrincipal


def test_only_the_first_colon_separates() -> None:
    principal = KafkaPrincipal.parse("User:CN=broker-1,OU=dc1:x")
    assert principal == KafkaPrincipal("User", "CN=broker-1,OU=dc1:x")
    assert str(ANONYMOUS) == "User:ANONYMOUS"


@pytest.mark.parametrize("text", ["alice", ":alice", "User:", ""])
def test_a_malformed_principal_is_refused_by_its_text(text: str) -> None:
    with pytest.raises(ValueError, match="principalType:principalName") as refused:
        KafkaPrincipal.parse(text)
    assert repr(text) in str(refused.value)


@given(st.text(min_size=1).filter(lambda t: ":" not in t), st.text(min_size=1))
def test_printing_then_parsing_gives_the_principal_back(kind: str, name: str) -> None:
    principal = KafkaPrincipal(kind, name)
    assert KafkaPrincipal.parse(str(principal)) == principal
