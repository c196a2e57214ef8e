#!/usr/bin/env bash
# `make run`: rackwise at work on this machine, with nothing outside it.
#
#   1. A stretch cluster of real processes on 127.0.0.1: a controller and 6 brokers over
#      3 data centres x 2 racks, placing with the multi-level placer (KIP-879).
#   2. A topic created through the wire protocol and described as kafka-topics does; a
#      CreateReplicaPlacement answer as reassignment JSON; 100,000 records produced to it and
#      consumed back with rackwise producer-perf-test and consumer-perf-test.
#   3. The fleet pipeline on local Spark: a synthetic fleet generated, audited and planned.
#
# Everything lands under RUN_DIR (default ./run). The cluster is stopped at the end; run again
# and it restarts with its data.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=.venv/bin
RUN_DIR=${RUN_DIR:-run}
CLUSTER=$RUN_DIR/cluster
RACKS=/dc1/r1,/dc1/r2,/dc2/r1,/dc2/r2,/dc3/r1,/dc3/r2

step() { printf '\n== %s\n' "$*"; }

step "A stretch cluster: 1 controller, 6 brokers in 3 data centres x 2 racks"
"$BIN/rackwise" cluster up --brokers 6 --racks "$RACKS" --placer multi-level --dir "$CLUSTER" \
    --override replica.selector.class=multi-level
trap '"$BIN/rackwise" cluster down --dir "$CLUSTER"' EXIT
BOOTSTRAP=$("$BIN/python" - "$CLUSTER/cluster.json" <<'PY'
import json
import sys

nodes = json.load(open(sys.argv[1]))["nodes"]
print(",".join("%s:%d" % (n["host"], n["port"]) for n in nodes if n["role"] == "broker"))
PY
)

step "A topic placed by the multi-level placer: every partition in three data centres"
"$BIN/rackwise" topics --bootstrap-server "$BOOTSTRAP" --create --if-not-exists \
    --topic orders --partitions 6 --replication-factor 3
"$BIN/rackwise" topics --bootstrap-server "$BOOTSTRAP" --describe --topic orders

step "CreateReplicaPlacement (KIP-879): what the cluster would do, as reassignment JSON"
"$BIN/rackwise" placement --bootstrap-server "$BOOTSTRAP" --partitions 3 --replication-factor 3

step "100,000 records of 1 KiB produced to 'orders' (RF 3, acks=all) and consumed back"
"$BIN/rackwise" producer-perf-test --topic orders --num-records 100000 --record-size 1024 \
    --throughput -1 --producer-props "bootstrap.servers=$BOOTSTRAP" acks=all
"$BIN/rackwise" consumer-perf-test --bootstrap-server "$BOOTSTRAP" --topic orders \
    --messages 100000 --timeout 30000

step "A fleet of 8 clusters, generated"
"$BIN/rackwise" pipeline generate --clusters 8 --brokers 24 --partitions 4000 \
    --topology dc=3,rack=2 --seed 7 --out "$RUN_DIR/fleet"

step "The fleet audited on local Spark"
"$BIN/rackwise" pipeline audit --fleet "$RUN_DIR/fleet" --out "$RUN_DIR/audit"

step "The fleet planned (moves timed at a throttle of 100 MB/s)"
"$BIN/rackwise" pipeline plan --fleet "$RUN_DIR/fleet" --throttle 100000000 --out "$RUN_DIR/plan"

step "Reports"
echo "audit: $RUN_DIR/audit/report.html"
echo "plan:  $RUN_DIR/plan/report.html"
echo "reassignment JSON per cluster: $RUN_DIR/plan/<cluster_id>/reassignment.json"
