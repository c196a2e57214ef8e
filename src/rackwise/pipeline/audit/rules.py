"""The topic rules the audit and the planner judge a domain's loss by: a topic's own
``min.insync.replicas`` (the command's ``--min-insync-replicas`` where it is not known),
``min.insync.racks`` with ``min.insync.racks.level``, and ``leaders.preference``.

Goals
    One :class:`TopicRule` per topic of every cluster: the topic's own configs where the input
    gives them, else the fleet's defaults (the brokers' ``min.insync.racks``,
    ``min.insync.racks.level`` and ``default.leaders.preference``, which the command's
    ``--min-insync-racks``, ``--min-insync-racks-level`` and ``--leaders-preference`` set), else
    Kafka-compatible defaults (1, 1, ``none``: today's behaviour).
Constraints
    Pure and small: a fleet's topic configs are metadata (a row per topic and key), read on
    the driver. A value that does not parse is refused with one line naming the cluster, the
    topic, the key and the value (:class:`IllegalArgumentException`), before any engine runs.
    Keys other than the four are ignored (a topic's full DescribeConfigs may be given).
Worked example
    Defaults ``{"min.insync.racks": "2"}`` and the row ``("c1", "orders", "leaders.preference",
    "ordered_racks:/dc1,/dc2")``: ``orders`` in ``c1`` needs two data centres in its ISR and
    prefers ``/dc1``; every other topic needs two data centres and prefers none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from rackwise.common import IllegalArgumentException
from rackwise.topology import (
    NO_PREFERENCE,
    InvalidLeadersPreferenceException,
    LeadersPreference,
    parse_leaders_preference,
)

MIN_INSYNC_REPLICAS: Final = "min.insync.replicas"
MIN_INSYNC_RACKS: Final = "min.insync.racks"
MIN_INSYNC_RACKS_LEVEL: Final = "min.insync.racks.level"
LEADERS_PREFERENCE: Final = "leaders.preference"
DEFAULT_LEADERS_PREFERENCE: Final = "default.leaders.preference"
"""The broker key that is the default of the topic key ``leaders.preference``."""
TOPIC_KEYS: Final = (
    MIN_INSYNC_REPLICAS,
    MIN_INSYNC_RACKS,
    MIN_INSYNC_RACKS_LEVEL,
    LEADERS_PREFERENCE,
)


@dataclass(frozen=True, slots=True)
class TopicRule:
    """One topic's rules: its ISR must span ``min_insync_racks`` domains at ``level`` for an
    acks=all write, and its leaders go where ``preference`` says; ``min_insync_replicas`` is
    the topic's own ``min.insync.replicas`` where known (None: the command's option)."""

    min_insync_racks: int = 1
    level: int = 1
    preference: LeadersPreference = NO_PREFERENCE
    min_insync_replicas: int | None = None

    def min_isr(self, default: int) -> int:
        """The topic's ``min.insync.replicas``, else ``default``."""
        return default if self.min_insync_replicas is None else self.min_insync_replicas


DEFAULT_RULE: Final = TopicRule()


def _at_least_one(key: str, value: str, where: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        number = 0
    if number < 1:
        raise IllegalArgumentException(
            f"{where}: {key} must be an integer of at least 1, got {value!r}"
        )
    return number


def with_config(rule: TopicRule, key: str, value: str, where: str) -> TopicRule:
    """``rule`` with ``key`` set to ``value`` (a topic key, or the broker key
    ``default.leaders.preference``); another key leaves it as it is."""
    if key == MIN_INSYNC_REPLICAS:
        return replace(rule, min_insync_replicas=_at_least_one(key, value, where))
    if key == MIN_INSYNC_RACKS:
        return replace(rule, min_insync_racks=_at_least_one(key, value, where))
    if key == MIN_INSYNC_RACKS_LEVEL:
        return replace(rule, level=_at_least_one(key, value, where))
    if key in (LEADERS_PREFERENCE, DEFAULT_LEADERS_PREFERENCE):
        try:
            return replace(rule, preference=parse_leaders_preference(value))
        except InvalidLeadersPreferenceException as e:
            raise IllegalArgumentException(f"{where}: {key} {value!r}: {e}") from None
    return rule


@dataclass(frozen=True)
class DomainRules:
    """The fleet's defaults and the topics' own rules, by ``(cluster_id, topic)``."""

    default: TopicRule = DEFAULT_RULE
    topics: Mapping[tuple[str, str], TopicRule] = field(default_factory=dict)

    @property
    def is_trivial(self) -> bool:
        """Whether no topic has a rule that can count anything (``min.insync.racks`` 1 and
        no preference everywhere): the audit then skips the step, its figures all 0."""
        return all(
            r.min_insync_racks == 1 and r.preference.is_none
            for r in (self.default, *self.topics.values())
        )

    def rule(self, cluster_id: str, topic: str) -> TopicRule:
        """The rule of ``topic`` in ``cluster_id``."""
        return self.topics.get((cluster_id, topic), self.default)

    def preferences(self, cluster_id: str, topics: Iterable[str]) -> dict[str, LeadersPreference]:
        """Each of ``topics``' ``leaders.preference`` in ``cluster_id``, those other than
        ``none`` (what the planner's ``leaders_preferences`` takes)."""
        out = {}
        for topic in topics:
            preference = self.rule(cluster_id, topic).preference
            if not preference.is_none:
                out[topic] = preference
        return out

    @classmethod
    def of(
        cls,
        defaults: Mapping[str, str] | None = None,
        topic_configs: Iterable[tuple[str, str, str, str | None]] = (),
    ) -> DomainRules:
        """Rules from broker defaults (``{key: value}``) and topic config rows
        ``(cluster_id, topic, key, value)``; a ``None`` value is the default."""
        default = DEFAULT_RULE
        for key, value in (defaults or {}).items():
            default = with_config(default, key, value, "broker default")
        topics: dict[tuple[str, str], TopicRule] = {}
        for cluster_id, topic, key, given in topic_configs:
            if key not in TOPIC_KEYS or given is None:
                continue
            where = f"cluster {cluster_id} topic {topic}"
            rule = topics.get((cluster_id, topic), default)
            topics[(cluster_id, topic)] = with_config(rule, key, given, where)
        return cls(default, topics)


DEFAULT_RULES: Final = DomainRules()
