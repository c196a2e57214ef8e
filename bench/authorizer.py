"""Authorizer benchmark: what an authorization check costs with 10,000 ACLs, in process and per
request on a real broker, against the same request on a broker without an authorizer, in the
same run.

In process: ``--acls`` ACLs (literal ACLs on topics ``t-0`` .., prefixed ones on ``p-0-`` ..,
spread over 100 principals, a tenth of them DENY, and the ``*`` wildcard) indexed once; then
the mean time of one check (DESCRIBE on a topic that has ACLs of the principal) and of a whole
KIP-430 answer (the eight topic operations), and the same check with no ACL at all.

On processes: two one-broker clusters (``rackwise cluster up``), one with
``authorizer.class.name=...StandardAuthorizer`` and ``allow.everyone.if.no.acl.found=true``
(the brokers register as User:ANONYMOUS, which no cluster ACL names) holding the same ACLs
(created through CreateAcls), one without an authorizer. A Metadata request for one topic
whose name has ACLs of the caller is sent ``--requests`` times to each broker, alternating,
one at a time; the figures are each broker's mean and p99 and the ratio with/without.

    .venv/bin/python bench/authorizer.py [--acls 10000] [--requests 3000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from data_path import BenchCluster, create_topic, percentiles
from rackwise.common.acl import AclOperation
from rackwise.net import KafkaConnection
from rackwise.node.authorization import TOPIC_OPERATIONS
from rackwise.protocol import ApiKey
from rackwise.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from rackwise.security.authorizer import AUTHORIZER_CLASS, Authorizer

TOPIC = "t-7"
"""The topic the requests name: it has ACLs of the caller among the others."""
CALLER = "User:ANONYMOUS"


def bench_acls(count: int) -> list[AclBinding]:
    """``count`` ACLs over topics, prefixes and 100 principals; ``t-7`` allows the caller."""
    out = []
    for i in range(count):
        principal = CALLER if i % 100 == 7 else f"User:u{i % 100}"
        permission = AclPermissionType.DENY if i % 10 == 3 else AclPermissionType.ALLOW
        if i % 4 == 0:
            pattern = ResourcePattern(ResourceType.TOPIC, f"p-{i % 500}-", PatternType.PREFIXED)
        else:
            pattern = ResourcePattern(ResourceType.TOPIC, f"t-{i % 2500}", PatternType.LITERAL)
        op = (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE)[i % 3]
        out.append(AclBinding(pattern, AccessControlEntry(principal, "*", op, permission)))
    out.append(
        AclBinding(
            ResourcePattern(ResourceType.TOPIC, TOPIC, PatternType.LITERAL),
            AccessControlEntry(CALLER, "*", AclOperation.READ, AclPermissionType.ALLOW),
        )
    )
    return out


def in_process(acls: list[AclBinding], rounds: int = 200_000) -> dict[str, float]:
    def per_call_us(authorizer: Authorizer, *, operations: bool = False) -> float:
        began = time.perf_counter()
        if operations:
            for _ in range(rounds // 10):
                authorizer.authorized_operations(
                    CALLER, "127.0.0.1", ResourceType.TOPIC, TOPIC, TOPIC_OPERATIONS
                )
            return (time.perf_counter() - began) / (rounds // 10) * 1e6
        for _ in range(rounds):
            authorizer.authorize(
                CALLER, "127.0.0.1", AclOperation.DESCRIBE, ResourceType.TOPIC, TOPIC
            )
        return (time.perf_counter() - began) / rounds * 1e6

    began = time.perf_counter()
    full = Authorizer.build(acls)
    build_ms = (time.perf_counter() - began) * 1000
    assert full.authorize(CALLER, "h", AclOperation.DESCRIBE, ResourceType.TOPIC, TOPIC)
    return {
        "build_ms": round(build_ms, 1),
        "check_us": round(per_call_us(full), 3),
        "operations_us": round(per_call_us(full, operations=True), 3),
        "check_no_acls_us": round(per_call_us(Authorizer.build([])), 3),
    }


async def create_acls(address: tuple[str, int], acls: list[AclBinding]) -> None:
    async with await KafkaConnection.connect(*address, timeout_s=30) as conn:
        await conn.negotiate_versions()
        creations = [
            {
                "resource_type": int(a.pattern.resource_type),
                "resource_name": a.pattern.name,
                "resource_pattern_type": int(a.pattern.pattern_type),
                "principal": a.entry.principal,
                "host": a.entry.host,
                "operation": int(a.entry.operation),
                "permission_type": int(a.entry.permission),
            }
            for a in acls
        ]
        answer = await conn.request(ApiKey.CREATE_ACLS, creations=creations, timeout_s=120)
        assert all(int(r.error_code) == 0 for r in answer.results), answer.results[:3]
        for _ in range(600):  # until the broker's image holds them
            described = await conn.request(
                ApiKey.DESCRIBE_ACLS,
                resource_type_filter=1,
                resource_name_filter=None,
                pattern_type_filter=1,
                principal_filter=None,
                host_filter=None,
                operation=1,
                permission_type=1,
            )
            if sum(len(r.acls) for r in described.resources) >= len(set(acls)):
                return
            await asyncio.sleep(0.1)
        raise SystemExit("the broker's image never held the ACLs")


async def timed(addresses: Sequence[tuple[str, int]], requests: int) -> list[list[float]]:
    """Per address, the latency in seconds of each Metadata request, the addresses
    alternating."""
    conns = []
    for address in addresses:
        conn = await KafkaConnection.connect(*address, timeout_s=30)
        await conn.negotiate_versions()
        conns.append(conn)
    times: list[list[float]] = [[] for _ in conns]
    try:
        for i in range(requests + 200):
            for k, conn in enumerate(conns):
                began = time.perf_counter()
                answer = await conn.request(
                    ApiKey.METADATA,
                    topics=[{"name": TOPIC, "topic_id": None}],
                    allow_auto_topic_creation=False,
                    include_topic_authorized_operations=True,
                )
                elapsed = time.perf_counter() - began
                assert int(answer.topics[0].error_code) == 0, answer.topics[0]
                if i >= 200:  # the first are warm-up
                    times[k].append(elapsed)
    finally:
        for conn in conns:
            await conn.close()
    return times


def on_processes(acls: list[AclBinding], requests: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="rackwise-bench-authorizer-") as tmp:
        plain = BenchCluster(Path(tmp) / "plain", 1)
        try:
            secured = BenchCluster(
                Path(tmp) / "secured",
                1,
                f"authorizer.class.name={AUTHORIZER_CLASS}",
                "allow.everyone.if.no.acl.found=true",
            )
            try:
                for cluster in (plain, secured):
                    create_topic(cluster.bootstrap, TOPIC, 1, 1)
                asyncio.run(create_acls(secured.address(1), acls))
                with_auth, without = asyncio.run(
                    timed([secured.address(1), plain.address(1)], requests)
                )
            finally:
                secured.down()
        finally:
            plain.down()
    out: dict[str, Any] = {}
    for name, sample in (("with_authorizer", with_auth), ("without", without)):
        out[name] = {"mean_ms": round(statistics.fmean(sample) * 1000, 4), **percentiles(sample)}
    out["ratio_mean"] = round(out["with_authorizer"]["mean_ms"] / out["without"]["mean_ms"], 3)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acls", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    acls = bench_acls(args.acls)
    figures: dict[str, Any] = {"acls": len(acls), "in_process": in_process(acls)}
    figures["metadata_request"] = on_processes(acls, args.requests)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    inner, outer = figures["in_process"], figures["metadata_request"]
    print(f"{len(acls)} ACLs indexed in {inner['build_ms']} ms")
    print(
        f"one check {inner['check_us']} us (no ACLs: {inner['check_no_acls_us']} us), "
        f"eight topic operations {inner['operations_us']} us"
    )
    mean_with, mean_without = outer["with_authorizer"]["mean_ms"], outer["without"]["mean_ms"]
    share = inner["operations_us"] / 1000 / mean_without
    print(
        f"Metadata request: {mean_with} ms with the authorizer, {mean_without} ms without "
        f"(x{outer['ratio_mean']}); the checks are {share:.1%} of a request"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
