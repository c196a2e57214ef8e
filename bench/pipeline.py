"""Pipeline benchmark: the Spark audit and plan of generated fleets on local[2], stage by stage,
beside the same audit done single-process with pandas on the same Parquet (the script a user
would otherwise write), for as far as pandas gets on this machine.

    .venv/bin/python bench/pipeline.py [--rows 1000000,10000000,100000000]
        [--engines spark,pandas] [--no-plan] [--data DIR] [--json]

Fleets: ``rows / 100,000`` clusters of 48 brokers, 33,334 partitions at RF 3 (100,002 replica
rows each), ``dc=3,rack=2``, written as Parquet by ``rackwise.pipeline.generate.generate_fleet``
under ``--data`` (kept and reused). Each engine runs in its own process, started afresh (so
Spark's start-up is counted). Spark: ``read_fleet`` (ingest and validation), ``run_audit``,
then ``run_plan`` (strategy ``keep``) on the same tables. This process samples, every 0.1 s,
the resident memory of the child's process tree (the driver's Python, the JVM and any Python
workers; read from /proc): ``peak MiB``, overall and per stage; and the machine's load
average, since other work shares these cores. pandas is not started when its estimated peak
would not fit in the memory available (the reason is printed), and is stopped if it grows past
that. Both engines' fleet totals (partitions, spread violations, exposure sums) are printed
side by side as a check that they did the same audit. A table by default; ``--json`` for JSON.
Not a test: run it by hand, the big sizes once.
"""

from __future__ import annotations

import argparse
import json
import os
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
PANDAS_BYTES_PER_ROW: Final = 650  # peak RSS measured at 10M rows: 5.9 GB (590 B a row)
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


def ensure_fleet(data: Path, rows: int) -> Path:
    """The generated fleet of about ``rows`` replica rows (generated once, then reused)."""
    from rackwise.pipeline.generate import generate_fleet  # noqa: PLC0415

    clusters = max(1, rows // 100_000)
    fleet = data / f"fleet-{clusters}x{BROKERS}x{PARTITIONS}"
    if not (fleet / "generate.json").exists():
        print(f"generating {clusters} clusters into {fleet} ...", file=sys.stderr)
        generate_fleet(fleet, clusters, BROKERS, PARTITIONS, TOPOLOGY, seed=1, json_max_clusters=0)
    return fleet


# --- the Spark child ---------------------------------------------------------------------------


def spark_child(fleet: Path, out: Path, plan: bool) -> dict[str, Any]:
    """Start Spark on local[2], read the fleet, audit it (``run_audit``), then plan it
    (``run_plan``, strategy ``keep``) on the same tables; each stage's wall time."""
    began = time.perf_counter()
    from rackwise.pipeline.session import get_spark  # noqa: PLC0415

    spark = get_spark("local[2]")
    stages: dict[str, float] = {"startup": time.perf_counter() - began}
    from rackwise.pipeline.audit_job import run_audit  # noqa: PLC0415
    from rackwise.pipeline.ingest import read_fleet  # noqa: PLC0415
    from rackwise.pipeline.plan_job import run_plan  # noqa: PLC0415

    def stage(name: str, seconds: float) -> None:
        stages[name] = seconds
        print(f"{name} {seconds:.2f} s ended {time.time():.2f}", file=sys.stderr, flush=True)

    t = time.perf_counter()
    tables = read_fleet(spark, fleet)
    stage("ingest", time.perf_counter() - t)
    summary = run_audit(spark, tables, out / "audit", MIN_ISR, on_stage=stage)
    stages["audit_total"] = time.perf_counter() - began
    check = _check(summary, out / "audit" / "audit" / "exposure")
    if plan:
        t = time.perf_counter()
        plan_summary = run_plan(
            spark,
            tables,
            out / "plan",
            "keep",
            None,
            MIN_ISR,
            on_stage=lambda name, seconds: stage(f"plan:{name}", seconds),
        )
        stages["plan_total"] = time.perf_counter() - t
        check["plan_moves"] = sum(
            int(c.get("replica_moves", 0)) for c in plan_summary["clusters"].values()
        )
    stages["total"] = time.perf_counter() - began
    spark.stop()
    return {"stages": stages, "check": check}


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


# --- the pandas child: the audit a user would write with pandas ------------------------------


def _pd_read(fleet: Path) -> tuple[Any, Any, Any, int]:
    """Replicas with their brokers' node ids (``n0``..``nH``, -1 where none), rack depth and
    log dir liveness; the brokers; the log dirs; H."""
    import pandas as pd  # noqa: PLC0415

    rep = pd.read_parquet(fleet / "replicas")
    bro = pd.read_parquet(fleet / "brokers")
    dirs = bro[["cluster_id", "broker_id", "log_dirs"]].explode("log_dirs", ignore_index=True)
    dirs = dirs.dropna(subset=["log_dirs"])
    fields = pd.DataFrame(dirs["log_dirs"].tolist(), index=dirs.index)
    dirs = dirs[["cluster_id", "broker_id"]].join(fields).rename(columns={"path": "log_dir"})
    rack = bro["rack"].where(
        bro["rack"].isna() | bro["rack"].str.startswith("/"), "/" + bro["rack"]
    )
    parts = rack.fillna("").str.strip("/").str.split("/").map(lambda p: [x for x in p if x])
    bro["depth"] = parts.map(len)
    height = int(bro["depth"].max())
    nodes = {"/": 0}
    for k in range(height + 1):
        paths = parts.map(lambda p, k=k: "/" + "/".join(p[:k]) if len(p) >= k else None)
        bro[f"n{k}"] = [
            nodes.setdefault(f"{c}\t{x}", len(nodes)) if x else -1
            for c, x in zip(bro["cluster_id"], paths, strict=True)
        ]
    keys = ["cluster_id", "broker_id"]
    cats = rep["cluster_id"].astype("category").cat.categories
    for frame in (bro, dirs):
        frame["cluster_id"] = pd.Categorical(frame["cluster_id"], categories=cats)
    rep["cluster_id"] = pd.Categorical(rep["cluster_id"], categories=cats)
    node_cols = [f"n{k}" for k in range(height + 1)]
    df = rep.merge(bro[[*keys, "depth", *node_cols]], on=keys, how="inner")
    df["log_dir"] = df["log_dir"].astype(str)
    live = dirs[[*keys, "log_dir", "is_live"]].astype({"log_dir": str})
    df = df.merge(live, on=[*keys, "log_dir"], how="left")
    df["is_live"] = df["is_live"].fillna(True).astype(bool)
    df["pkey"] = df.groupby(
        ["cluster_id", "topic", "partition"], observed=True, sort=False
    ).ngroup()
    return df, bro, dirs, height


def _pd_tree(bro: Any, height: int) -> tuple[Any, Any]:
    """Brokers beneath and children of every node id."""
    import pandas as pd  # noqa: PLC0415

    under, kids = [], []
    for k in range(height + 1):
        at = bro[bro[f"n{k}"] >= 0]
        under.append(at.groupby(f"n{k}").size())
        direct = at[at["depth"] == k].groupby(f"n{k}").size()
        if k < height:
            deeper = at[at["depth"] > k]
            racks = deeper.groupby(f"n{k}")[f"n{k + 1}"].nunique()
            direct = direct.add(racks, fill_value=0)
        kids.append(direct)
    return pd.concat(under), pd.concat(kids)


def _pd_spread(df: Any, bro: Any, height: int) -> Any:
    import numpy as np  # noqa: PLC0415
    import pandas as pd  # noqa: PLC0415

    under, kids = _pd_tree(bro, height)
    found = []
    for k in range(height):
        sub = df[df["depth"] >= k]
        child = np.where(sub["depth"] > k, sub[f"n{k + 1}"], -1 - sub["broker_id"])
        held = (
            pd.DataFrame(
                {"pkey": sub["pkey"].to_numpy(), "node": sub[f"n{k}"].to_numpy(), "child": child}
            )
            .groupby(["pkey", "node", "child"], sort=False)
            .size()
            .rename("held")
            .reset_index()
        )
        cap = held["child"].map(under).fillna(1)
        held["free"] = held["held"].where(cap > held["held"])
        per = held.groupby(["pkey", "node"], sort=False).agg(
            most=("held", "max"), children=("held", "size"), least=("free", "min")
        )
        per = per.reset_index()
        total = per["node"].map(kids)
        least = per["least"].where(per["children"] >= total, 0)
        bad = per[(total >= 2) & (per["most"] - least >= 2)]
        found.append(bad.assign(depth=k))
    return pd.concat(found, ignore_index=True)


def _pd_exposure(df: Any, height: int, min_isr: int) -> list[Any]:
    live = df[df["is_live"]]
    n_live = live.groupby("pkey").size()
    out = []
    for k in range(1, height + 1):
        rows = live[live[f"n{k}"] >= 0]
        held = rows.groupby(["pkey", f"n{k}"], sort=False).size().rename("held").reset_index()
        left = held["pkey"].map(n_live) - held["held"]
        held["offline"] = left == 0
        held["under"] = (left >= 1) & (left < min_isr)
        out.append(held.groupby(f"n{k}")[["offline", "under"]].sum())
    left = live["pkey"].map(n_live) - 1
    hit = live.assign(offline=left == 0, under=(left >= 1) & (left < min_isr))
    out.append(hit.groupby(["cluster_id", "broker_id"], observed=True)[["offline", "under"]].sum())
    by_dir = ["cluster_id", "broker_id", "log_dir"]
    out.append(hit.groupby(by_dir, observed=True)[["offline", "under"]].sum())
    return out


def _pd_load(df: Any, bro: Any, dirs: Any, height: int) -> tuple[Any, Any]:
    import pandas as pd  # noqa: PLC0415

    keys = ["cluster_id", "broker_id", "log_dir"]
    df["leader"] = df["replica_index"] == 0
    fine = df.groupby(keys, observed=True).agg(
        replicas=("leader", "size"), leaders=("leader", "sum"), bytes=("size_bytes", "sum")
    )
    zero = {"replicas": 0, "leaders": 0, "bytes": 0}
    per_dir = dirs.astype({"log_dir": str}).merge(fine.reset_index(), on=keys, how="left")
    per_dir = per_dir.fillna(zero)
    per_broker = (
        bro[["cluster_id", "broker_id", *[f"n{k}" for k in range(height + 1)]]]
        .merge(
            fine.groupby(["cluster_id", "broker_id"], observed=True).sum().reset_index(),
            on=["cluster_id", "broker_id"],
            how="left",
        )
        .fillna(zero)
    )
    levels = {"log_dir": per_dir, "broker": per_broker}
    for k in range(1, height + 1):
        at = per_broker[per_broker[f"n{k}"] >= 0]
        levels[f"depth{k}"] = (
            at.groupby(["cluster_id", f"n{k}"], observed=True)[["replicas", "leaders", "bytes"]]
            .sum()
            .reset_index()
        )
    stats = []
    for level, frame in levels.items():
        s = frame.groupby("cluster_id", observed=True)[["replicas", "leaders", "bytes"]].agg(
            ["min", "max", "mean"]
        )
        stats.append(s.assign(level=level))
    return pd.concat([f.assign(level=n) for n, f in levels.items()], ignore_index=True), pd.concat(
        stats
    )


def pandas_run(fleet: Path, out: Path, min_isr: int) -> tuple[dict[str, float], dict[str, int]]:
    stages: dict[str, float] = {}

    def done(name: str, began: float) -> float:
        stages[name] = time.perf_counter() - began
        print(f"{name} {stages[name]:.2f} s ended {time.time():.2f}", file=sys.stderr, flush=True)
        return time.perf_counter()

    t = time.perf_counter()
    df, bro, dirs, height = _pd_read(fleet)
    t = done("read", t)
    spread = _pd_spread(df, bro, height)
    t = done("spread", t)
    exposure = _pd_exposure(df, height, min_isr)
    t = done("exposure", t)
    load, skew = _pd_load(df, bro, dirs, height)
    t = done("load", t)
    out.mkdir(parents=True, exist_ok=True)
    first = df.drop_duplicates("pkey").set_index("pkey")[["cluster_id", "topic", "partition"]]
    named = spread.join(first, on="pkey")
    named.astype({"cluster_id": str, "topic": str}).to_parquet(out / "spread_violations.parquet")
    load.astype({"cluster_id": str}).to_parquet(out / "load.parquet")
    skew.columns = ["_".join(c) if isinstance(c, tuple) else c for c in skew.columns]
    skew.reset_index().astype({"cluster_id": str}).to_parquet(out / "skew.parquet")
    for i, frame in enumerate(exposure):
        frame.reset_index().astype(str).to_parquet(out / f"exposure_{i}.parquet")
    n_live = df[df["is_live"]].groupby("pkey").size().reindex(range(int(df["pkey"].max()) + 1))
    racks, brokers = exposure[:height], exposure[height]
    check = {
        "partitions": int(df["pkey"].nunique()),
        "spread_rows": len(spread),
        "offline_now": int(n_live.isna().sum()),
        "rack_offline_if_lost": int(sum(f["offline"].sum() for f in racks)),
        "rack_under_min_isr_if_lost": int(sum(f["under"].sum() for f in racks)),
        "broker_under_min_isr_if_lost": int(brokers["under"].sum()),
    }
    (out / "summary.json").write_text(json.dumps(check, indent=2) + "\n")
    done("write", t)
    return stages, check


def pandas_child(fleet: Path, out: Path) -> dict[str, Any]:
    began = time.perf_counter()
    stages, check = pandas_run(fleet, out, MIN_ISR)
    stages["total"] = stages["audit_total"] = time.perf_counter() - began
    return {"stages": stages, "check": check}


# --- the parent --------------------------------------------------------------------------------

_GROUPS: Final = {
    "spark": {
        "startup": ("startup",),
        "ingest": ("ingest",),
        "read": ("tree", "read", "partitions"),
        "spread": ("placements", "spread"),
        "exposure+load": ("domains", "clusters"),
        "write": ("tables", "summary", "report"),
    },
    "pandas": {
        "startup": (),
        "ingest": (),
        "read": ("read",),
        "spread": ("spread",),
        "exposure+load": ("exposure", "load"),
        "write": ("write",),
    },
}
_COLUMNS: Final = (*_GROUPS["spark"], "audit_s", "audit_rows_per_s", "plan_s")


def _load_average() -> float:
    """The machine's 1-minute load average (other work shares these cores)."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def _row(engine: str, rows: int, result: dict[str, Any], peak: int) -> dict[str, Any]:
    stages = result["stages"]
    row: dict[str, Any] = {"engine": engine, "rows": rows}
    for name, parts in _GROUPS[engine].items():
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
    heads = {"exposure+load": "expo+load", "audit_rows_per_s": "rows/s"}
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
    print("audit_s: start-up, ingest and audit, to summary.json and report.html written;")
    print("rows/s: rows over audit_s; plan_s: run_plan (strategy keep) on the same tables.")
    for r in results:
        if "stages" in r:
            print(f"{r['engine']} {r['rows']:,}: seconds {r['stages']}")
            print(f"{r['engine']} {r['rows']:,}: peak MiB {r['peak_mib_by_stage']}")
            print(f"{r['engine']} {r['rows']:,}: check {r['check']}")


def _bench(engine: str, rows: int, fleet: Path, out: Path, plan: bool) -> dict[str, Any]:
    cap = int(_available_bytes() * MEMORY_SHARE)
    if engine == "pandas" and rows * PANDAS_BYTES_PER_ROW > cap:
        need = rows * PANDAS_BYTES_PER_ROW / 2**30
        reason = (
            f"needs about {need:.0f} GiB ({PANDAS_BYTES_PER_ROW} B a row), "
            f"{cap / 2**30:.0f} GiB may be used here"
        )
        return {"engine": engine, "rows": rows, "skipped": reason}
    args = ["--child", engine, "--fleet", str(fleet), "--out", str(out / f"{engine}-{rows}")]
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
    parser.add_argument("--rows", default="1000000,10000000", help="fleet sizes, comma-separated")
    parser.add_argument("--engines", default="spark,pandas")
    parser.add_argument("--no-plan", action="store_true", help="audit only (no run_plan)")
    parser.add_argument("--data", type=Path, default=Path("/tmp/rackwise-bench"))
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--child", choices=("spark", "pandas"), help=argparse.SUPPRESS)
    parser.add_argument("--fleet", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child == "spark":
            result = spark_child(args.fleet, args.out, plan=not args.no_plan)
        else:
            result = pandas_child(args.fleet, args.out)
        print(json.dumps(result))
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
    main()
