"""The record bytes a broker takes in and sends out, counted as the data path goes, for its
metrics (:mod:`rackwise.broker.metrics`).

Constraints
    Counting is one dict ``get`` and store per partition appended or per fetch answered, on
    the event loop, with no lock: the metrics thread copies a dict before reading it. What
    needs the metadata image (the data centre of a follower) is worked out at scrape time, so
    a follower's fetch is counted under its broker id. A consumer's domain is the first
    component of the ``rack_id`` its Fetch carries (KIP-392's ``client.rack``): ``/dc2/r1``
    and ``dc2`` both count as ``/dc2``; a consumer that gives none counts as ``""``. Clients
    choose their rack ids, so at most :data:`MAX_CONSUMER_DOMAINS` are kept apart; the rest
    count as ``"other"``.

Worked example
    A consumer with ``client.rack=/dc2/r1`` fetches 300 bytes of ``t`` from this broker, and
    follower 4 fetches 300: ``consumer_bytes["/dc2"] == 300`` and ``replicated_to[4] == 300``
    (the bytes by topic are :class:`~rackwise.broker.data_apis.DataApis`' ``bytes_served``).
"""

from __future__ import annotations

from typing import Final

MAX_CONSUMER_DOMAINS: Final = 256
"""The most consumer domains counted apart."""
OTHER_DOMAIN: Final = "other"


def top_domain(rack: str | None) -> str:
    """The top-level failure domain of a rack id: ``/dc1`` for ``/dc1/r2``, ``/rack1`` for the
    flat ``rack1``; ``""`` for none."""
    if not rack:
        return ""
    first = rack.lstrip("/").split("/", 1)[0]
    return f"/{first}" if first else ""


class Traffic:
    """A broker's byte counters (module docstring)."""

    def __init__(self) -> None:
        self.bytes_in: dict[str, int] = {}
        """Record bytes appended as leader, by topic (Kafka's ``BytesInPerSec``)."""
        self.replicated_to: dict[int, int] = {}
        """Record bytes sent to followers, by follower broker id."""
        self.consumer_bytes: dict[str, int] = {}
        """Record bytes sent to consumers, by the consumer's top-level domain."""
        self._domains: dict[str, str] = {}

    def appended(self, topic: str, size: int) -> None:
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size

    def replicated(self, follower: int, size: int) -> None:
        if size:
            self.replicated_to[follower] = self.replicated_to.get(follower, 0) + size

    def served(self, rack_id: str | None, size: int) -> None:
        """``size`` bytes sent to a consumer that gave ``rack_id``."""
        if not size:
            return
        key = rack_id or ""
        domain = self._domains.get(key)
        if domain is None:
            domain = top_domain(key)
            if len(self._domains) < MAX_CONSUMER_DOMAINS:
                self._domains[key] = domain
            if domain not in self.consumer_bytes and len(self.consumer_bytes) >= (
                MAX_CONSUMER_DOMAINS
            ):
                domain = OTHER_DOMAIN
        self.consumer_bytes[domain] = self.consumer_bytes.get(domain, 0) + size
