"""The controller's settings from Kafka's property names."""

from __future__ import annotations

import pytest

from rackwise.controller import ControllerConfig, InvalidConfigurationException, TopicPolicyRequest


class AllowAll:
    """A create-topic policy loaded by name in the tests below."""

    def validate(self, request: TopicPolicyRequest) -> None:
        del request


def test_properties_with_kafkas_names_and_defaults() -> None:
    cfg = ControllerConfig.from_properties(
        {
            "node.id": "3000",
            "controller.quorum.voters": "3000@127.0.0.1:9093,3001@127.0.0.1:9094",
            "broker.session.timeout.ms": "4000",
            "broker.replica.placer": "multi-level",
            "eligible.leader.replicas.enable": "false",
            "log.retention.hours": "1",
        }
    )
    assert cfg.node_id == 3000 and cfg.controller_ids == {3000, 3001}
    assert (cfg.session_timeout_ms, cfg.heartbeat_interval_ms) == (4000, 2000)
    assert (cfg.replica_placer, cfg.elr_enabled, cfg.delete_topic_enable) == (
        "multi-level",
        False,
        True,
    )
    assert (cfg.num_partitions, cfg.default_replication_factor) == (1, 1)
    assert cfg.static["log.retention.hours"] == "1"
    assert ControllerConfig.from_properties({}).controller_ids == frozenset()


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"broker.session.timeout.ms": "soon"}, "Invalid value soon for configuration "
         "broker.session.timeout.ms: Not a number of type INT"),
        ({"num.partitions": "0"}, "Invalid value 0 for configuration num.partitions: Value "
         "must be at least 1"),
        ({"delete.topic.enable": "yes"}, "Invalid value yes for configuration "
         "delete.topic.enable: Expected value to be either true or false"),
        ({"controller.quorum.voters": "localhost:9093"}, "'localhost:9093' is not in the form "
         "id@host:port"),
        ({"min.insync.replicas": "-1"}, "configuration min.insync.replicas: Value must be at "
         "least 1"),
        ({"create.topic.policy.class.name": "no.such.module:Policy"}, "Class cannot be loaded"),
    ],
)  # fmt: skip
def test_invalid_values_name_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigurationException, match=message) as caught:
        ControllerConfig.from_properties(props)
    assert caught.value.error_code == 40


def test_a_create_topic_policy_is_loaded_by_class_name() -> None:
    for name in (f"{__name__}:AllowAll", f"{__name__}.AllowAll"):
        cfg = ControllerConfig.from_properties({"create.topic.policy.class.name": name})
        assert isinstance(cfg.create_topic_policy, AllowAll)
