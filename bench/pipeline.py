"""Pipeline benchmark: the two engines on generated fleets, stage by stage, to show where they
cross: the in-process engine (``--engine local``) and Spark on local[2] (``--engine spark``).

    .venv/bin/python bench/pipeline.py [--rows 10000,100000,1000000,10000000]
        [--engines local,spark] [--no-plan] [--data DIR] [--json]

Fleets: up to 100,000 replica rows one cluster of 48 brokers (RF 3); above, ``rows / 100,000``
clusters of 48 brokers, 33,334 partitions each (100,002 replica rows); ``dc=3,rack=2``; written
as Parquet by ``rackwise.pipeline.generate.generate_fleet`` under ``--data`` (kept and reused).
Each engine runs in its own process, started afresh (so Spark's start-up is counted), the way
``rackwise pipeline`` runs it: read and validate the fleet, write the rejected rows, audit it
(``run_audit``, to ``summary.json`` and ``report.html``), then plan it (``run_plan``, strategy
``keep``) on the same tables. This process samples, every 0.1 s, the resident memory of the
child's process tree (the driver's Python, the JVM and any Python workers; read from /proc):
``peak MiB``, overall and per stage; and the machine's load average, since other work shares
these cores. The in-process engine is not started when its estimated peak would not fit in the
memory available (the reason is printed), and is stopped if it grows past that. Both engines'
fleet totals (partitions, spread violations, exposure sums, moves) are printed side by side as a
check that they did the same work. A table by default; ``--json`` for JSON. Not a test: run it
by hand, the big sizes once.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Final

ROWS_PER_CLUSTER: Final = 100_002
BROKERS: Final = 48
PARTITIONS: Final = 33_334
TOPOLOGY: Final = "dc=3,rack=2"
MIN_ISR: Final = 2
LOCAL_BYTES_PER_ROW: Final = 400  # in-process peak: 3.3 GiB at 10M rows (see BENCHMARKS.md)
MEMORY_SHARE: Final = 0.8  # of MemAvailable at the start: the most a run may take
SAMPLE_S: Final = 0.1


# --- memory ------------------------------------------------------------------------------------


def _available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def _run_child(args: list[str], cap_bytes: int) -> tuple[dict[str, Any] | None, int, str]:
    """Run a child engine (its stderr to ``OUT.log``), sampling its memory; kill it past
    ``cap_bytes``."""
    log = Path(args[args.index("--out") + 1] + ".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as err_file:
        proc = subprocess.Popen(
            [sys.executable, __file__, *args],
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
            start_new_session=True,
        )
        return _watch(proc, cap_bytes, log)


def _watch(
    proc: subprocess.Popen[str], cap_bytes: int, log: Path
) -> tuple[dict[str, Any] | None, int, str]:
    peak, load_max, killed = 0, 0.0, threading.Event()
    samples: list[tuple[float, int]] = []

    def sample() -> None:
        nonlocal peak, load_max
        while proc.poll() is None:
            rss = _tree_rss(proc.pid)
            samples.append((time.time(), rss))
            peak = max(peak, rss)
            load_max = max(load_max, _load_average())
            if rss > cap_bytes and not killed.is_set():
                killed.set()
                os.killpg(proc.pid, signal.SIGKILL)
            time.sleep(SAMPLE_S)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    sampler.join()
    last = (log.read_text().strip().splitlines() or [""])[-1][:200]
    if killed.is_set():
        cap = cap_bytes / 2**30
        return None, peak, f"stopped at {peak / 2**30:.1f} GiB (cap {cap:.1f} GiB), after: {last}"
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return None, peak, f"failed ({proc.returncode}), see {log}: {last}"
    result: dict[str, Any] = json.loads(lines[-1])
    result["peak_mib_by_stage"] = _peaks(log, samples)
    result["load_max"] = load_max
    return result, peak, ""


def _peaks(log: Path, samples: list[tuple[float, int]]) -> dict[str, int]:
    """The peak resident MiB during each stage the child logged (``NAME S s ended T``)."""
    out = {}
    for line in log.read_text().splitlines():
        words = line.split()
        if len(words) >= 5 and words[-3:-1] == ["s", "ended"]:
            end, seconds = float(words[-1]), float(words[-4])
            inside = [rss for t, rss in samples if end - seconds - SAMPLE_S <= t <= end]
            out[" ".join(words[:-4])] = round(max(inside, default=0) / 2**20)
    return out


# --- data --------------------------------------------------------------------------------------


def fleet_shape(rows: int) -> tuple[int, int]:
    """Clusters and partitions per cluster for about ``rows`` replica rows (RF 3)."""
    if rows <= ROWS_PER_CLUSTER:
        return 1, max(1, rows // 3)
    return max(1, rows // 100_000), PARTITIONS


def ensure_fleet(data: Path, rows: int) -> Path:
    """The generated fleet of about ``rows`` replica rows (generated once, then reused)."""
    from rackwise.pipeline.generate import generate_fleet  # noqa: PLC0415

    clusters, partitions = fleet_shape(rows)
    fleet = data / f"fleet-{clusters}x{BROKERS}x{partitions}"
    if not (fleet / "generate.json").exists():
        print(f"generating {clusters} clusters into {fleet} ...", file=sys.stderr)
        generate_fleet(fleet, clusters, BROKERS, partitions, TOPOLOGY, seed=1, json_max_clusters=0)
    return fleet


# --- the child: one engine, as the command runs it -----------------------------------------------


def engine_child(name: str, fleet: Path, out: Path, plan: bool) -> dict[str, Any]:
    """Start the engine (Spark on local[2]), read and validate the fleet, write the rejected
    rows, audit it to summary.json and report.html, then plan it (strategy ``keep``) on the
    same tables; each stage's wall time."""
    began = time.perf_counter()
    stages: dict[str, float] = {}

    def stage(stage_name: str, seconds: float) -> None:
        stages[stage_name] = seconds
        print(f"{stage_name} {seconds:.2f} s ended {time.time():.2f}", file=sys.stderr, flush=True)

    engine = _engine(name)
    stages["startup"] = time.perf_counter() - began
    from rackwise.pipeline.ingest.source import InputSource  # noqa: PLC0415

    t = time.perf_counter()
    tables = engine.ingest(InputSource.fleet_dir(fleet), None)
    engine.count(tables)
    stage("ingest", time.perf_counter() - t)
    t = time.perf_counter()
    engine.write_rejected(tables, out / "audit")
    stage("rejected", time.perf_counter() - t)
    summary = engine.audit(tables, out / "audit", MIN_ISR, stage)
    stages["audit_total"] = time.perf_counter() - began
    check = _check(summary, out / "audit" / "audit" / "exposure")
    if plan:
        t = time.perf_counter()
        engine.write_rejected(tables, out / "plan")
        plan_summary = engine.plan(
            tables, out / "plan", "keep", None, MIN_ISR, lambda n, s: stage(f"plan:{n}", s)
        )
        stages["plan_total"] = time.perf_counter() - t
        check["plan_moves"] = sum(
            int(c.get("replica_moves", 0)) for c in plan_summary["clusters"].values()
        )
    stages["total"] = time.perf_counter() - began
    return {"stages": stages, "check": check}


def _engine(name: str) -> Any:
    if name == "local":
        from rackwise.pipeline.engines.local import LocalEngine  # noqa: PLC0415

        return LocalEngine()
    from rackwise.pipeline.engines.session import get_spark  # noqa: PLC0415
    from rackwise.pipeline.engines.spark import SparkEngine  # noqa: PLC0415

    return SparkEngine(get_spark("local[2]"))


def _check(summary: dict[str, Any], exposure: Path) -> dict[str, int]:
    """Fleet totals both engines must agree on (exposure summed over every domain of a kind:
    racks at every level, brokers)."""
    import pyarrow.parquet as pq  # noqa: PLC0415

    clusters = summary["clusters"].values()
    table = pq.read_table(exposure).to_pandas()
    racks = table[~table["level"].isin(["broker", "log_dir"])]
    brokers = table[table["level"] == "broker"]
    return {
        "partitions": sum(c["partitions"] for c in clusters),
        "spread_rows": sum(c["spread_violations"] for c in clusters),
        "offline_now": sum(c["offline_now"] for c in clusters),
        "rack_offline_if_lost": int(racks["offline_if_lost"].sum()),
        "rack_under_min_isr_if_lost": int(racks["under_min_isr_if_lost"].sum()),
        "broker_under_min_isr_if_lost": int(brokers["under_min_isr_if_lost"].sum()),
    }


# --- the parent --------------------------------------------------------------------------------

_AUDIT_STAGES: Final = (
    "rejected",
    "tree",
    "read",
    "placements",
    "partitions",
    "spread",
    "domains",
    "tables",
    "summary",
)
_GROUPS: Final = {
    "startup": ("startup",),
    "ingest": ("ingest",),
    "audit": _AUDIT_STAGES,
    "report": ("report",),
}
_COLUMNS: Final = (*_GROUPS, "audit_s", "audit_rows_per_s", "plan_s")


def _load_average() -> float:
    """The machine's 1-minute load average (other work shares these cores)."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def _row(engine: str, rows: int, result: dict[str, Any], peak: int) -> dict[str, Any]:
    stages = result["stages"]
    row: dict[str, Any] = {"engine": engine, "rows": rows}
    for name, parts in _GROUPS.items():
        row[name] = round(sum(stages.get(p, 0.0) for p in parts), 2)
    row["audit_s"] = round(stages["audit_total"], 2)
    row["audit_rows_per_s"] = round(rows / stages["audit_total"])
    row["plan_s"] = round(stages["plan_total"], 2) if "plan_total" in stages else None
    row["total_s"] = round(stages["total"], 2)
    row["peak_mib"] = round(peak / 2**20)
    by_stage = result.get("peak_mib_by_stage", {})
    row["peak_mib_audit"] = max((v for k, v in by_stage.items() if ":" not in k), default=None)
    row["peak_mib_plan"] = max((v for k, v in by_stage.items() if ":" in k), default=None)
    row["stages"] = {k: round(v, 2) for k, v in stages.items()}
    row["peak_mib_by_stage"] = by_stage
    row["check"] = result["check"]
    row["load_1m"] = result["load_1m"]
    return row


def _cell(value: Any, column: str) -> str:
    if value is None:
        return f"{'-':>9}"
    if column.endswith("per_s") or column.startswith("peak"):
        return f"{value:>9,}"
    return f"{value:>9.2f}"


def _print(results: list[dict[str, Any]]) -> None:
    heads = {"audit_rows_per_s": "rows/s"}
    print(
        f"machine: {os.cpu_count()} cores, {_available_bytes() / 2**30:.1f} GiB available now, "
        f"load average (1 min) now {_load_average():.2f}; Spark on local[2]; seconds"
    )
    names = [heads.get(c, c) for c in (*_COLUMNS, "peak_mib")]
    print(f"{'engine':>6} {'rows':>11} " + " ".join(f"{n:>9}" for n in names) + "  load 1m")
    for r in results:
        if "skipped" in r:
            print(f"{r['engine']:>6} {r['rows']:>11,} skipped: {r['skipped']}")
            continue
        cells = " ".join(_cell(r[c], c) for c in (*_COLUMNS, "peak_mib"))
        load = r["load_1m"]
        print(
            f"{r['engine']:>6} {r['rows']:>11,} {cells}  "
            f"{load['start']:.1f}->{load['end']:.1f} (max {load['max']:.1f})"
        )
    print("audit: the audit's stages from the rejected rows to summary.json; report: report.html;")
    print("audit_s: start-up, ingest, audit and report, end to end; rows/s: rows over audit_s;")
    print("plan_s: run_plan (strategy keep) on the same tables, with its own audit and report.")
    for r in results:
        if "stages" in r:
            print(f"{r['engine']} {r['rows']:,}: seconds {r['stages']}")
            print(f"{r['engine']} {r['rows']:,}: peak MiB {r['peak_mib_by_stage']}")
            print(f"{r['engine']} {r['rows']:,}: check {r['check']}")


def _bench(engine: str, rows: int, fleet: Path, out: Path, plan: bool) -> dict[str, Any]:
    cap = int(_available_bytes() * MEMORY_SHARE)
    if engine == "local" and rows * LOCAL_BYTES_PER_ROW > cap:
        need = rows * LOCAL_BYTES_PER_ROW / 2**30
        reason = (
            f"needs about {need:.0f} GiB ({LOCAL_BYTES_PER_ROW} B a row), "
            f"{cap / 2**30:.0f} GiB may be used here"
        )
        return {"engine": engine, "rows": rows, "skipped": reason}
    child_out = out / f"{engine}-{rows}"
    shutil.rmtree(child_out, ignore_errors=True)
    args = ["--child", engine, "--fleet", str(fleet), "--out", str(child_out)]
    load_start = _load_average()
    result, peak, problem = _run_child([*args, *([] if plan else ["--no-plan"])], cap)
    if result is None:
        return {"engine": engine, "rows": rows, "skipped": problem}
    result["load_1m"] = {"start": load_start, "end": _load_average(), "max": result.pop("load_max")}
    row = _row(engine, rows, result, peak)
    print(json.dumps(row), file=sys.stderr)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows", default="10000,100000,1000000,10000000", help="fleet sizes, comma-separated"
    )
    parser.add_argument("--engines", default="local,spark")
    parser.add_argument("--no-plan", action="store_true", help="audit only (no run_plan)")
    parser.add_argument("--data", type=Path, default=Path("/tmp/rackwise-bench"))
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--child", choices=("local", "spark"), help=argparse.SUPPRESS)
    parser.add_argument("--fleet", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(engine_child(args.child, args.fleet, args.out, plan=not args.no_plan)))
        return
    results = []
    for rows in (int(r) for r in args.rows.split(",")):
        fleet = ensure_fleet(args.data, rows)
        actual = json.loads((fleet / "generate.json").read_text())["replicas"]
        for engine in args.engines.split(","):
            results.append(_bench(engine, actual, fleet, args.data / "out", not args.no_plan))
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        _print(results)


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
