#!/usr/bin/env bash
# `make run`: rackwise at work on this machine, with nothing outside it.
#
#   1. `rackwise demo`: one topic placed by Kafka's rack-aware placer and by the multi-level
#      placer (KIP-879) on a stretch cluster, side by side.
#   2. A secured stretch cluster of real processes on 127.0.0.1: a controller and 6 brokers
#      over 3 data centres x 2 racks, placing with the multi-level placer, every listener
#      SASL_SSL (a private CA, SCRAM-SHA-512 for the admin, the StandardAuthorizer on); every
#      command below reaches it with the admin's client.properties (--command-config).
#   3. A topic created through the wire protocol and described as kafka-topics does; a
#      CreateReplicaPlacement answer as reassignment JSON; 100,000 records produced to it and
#      consumed back with rackwise producer-perf-test and consumer-perf-test.
#   4. A topic placed badly on purpose, the running cluster audited through its admin APIs,
#      and the plan carried out with rackwise rebalance under a throttle, audited again.
#   5. A data centre lost for real (scripts/rehearse.py): the cluster above stopped, a second
#      one of 3 controllers (one per data centre) and 6 brokers started, the audit's prediction
#      for /dc3 read from it, every /dc3 process killed under an acks=all producer and a group
#      consumer, and what the clients see printed beside the prediction; torn down after.
#   6. The fleet pipeline: a synthetic fleet generated, audited and planned.
#
# Everything lands under RUN_DIR (default ./run; `RUN_DIR=/tmp/x make run` puts it elsewhere).
# The cluster is stopped after step 4, brokers first; run again and it restarts with its data.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=.venv/bin
RUN_DIR=${RUN_DIR:-run}
CLUSTER=$RUN_DIR/stretch
CONFIG=$CLUSTER/client.properties
RACKS=/dc1/r1,/dc1/r2,/dc2/r1,/dc2/r2,/dc3/r1,/dc3/r2
JVM_NOTICE=$RUN_DIR/.jvm-notice-shown

step() { printf '\n== %s\n' "$*"; }

# Spark's JVM announces its incubator module ("WARNING: Using incubator modules: ...") each
# time it starts; pass a command's stderr through this so that the notice shows once a run.
jvm_notice_once() {
    local line
    while IFS= read -r line; do
        if [[ $line == *"Using incubator modules"* ]]; then
            [[ -e $JVM_NOTICE ]] && continue
            : >"$JVM_NOTICE"
        fi
        printf '%s\n' "$line"
    done
}

# A command whose stderr goes through jvm_notice_once (stdout untouched, exit status kept).
spark() { { "$@" 2>&1 1>&3 | jvm_notice_once >&2; } 3>&1; }

mkdir -p "$RUN_DIR"
rm -f "$JVM_NOTICE"

step "Rack-aware vs multi-level placement of one topic on a stretch cluster (rackwise demo)"
"$BIN/rackwise" demo

step "A secured stretch cluster: 1 controller, 6 brokers in 3 DCs x 2 racks, 2 log dirs, SASL_SSL"
"$BIN/rackwise" cluster up --brokers 6 --racks "$RACKS" --placer multi-level --dir "$CLUSTER" \
    --log-dirs 2 --override replica.selector.class=multi-level --security sasl_ssl
stop_cluster() {
    step "The cluster stopped: the brokers, then the controller"
    "$BIN/rackwise" cluster down --dir "$CLUSTER"
}
trap stop_cluster EXIT
BOOTSTRAP=$("$BIN/python" - "$CLUSTER/cluster.json" <<'PY'
import json
import sys

nodes = json.load(open(sys.argv[1]))["nodes"]
print(",".join("%s:%d" % (n["host"], n["port"]) for n in nodes if n["role"] == "broker"))
PY
)

step "A topic placed by the multi-level placer: every partition in three data centres"
"$BIN/rackwise" topics --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --create \
    --if-not-exists --topic orders --partitions 6 --replication-factor 3
"$BIN/rackwise" topics --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --describe \
    --topic orders

step "CreateReplicaPlacement (KIP-879): what the cluster would do, as reassignment JSON"
"$BIN/rackwise" placement --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" \
    --partitions 3 --replication-factor 3

step "100,000 records of 1 KiB produced to 'orders' (RF 3, acks=all) and consumed back"
"$BIN/rackwise" producer-perf-test --topic orders --num-records 100000 --record-size 1024 \
    --throughput -1 --producer-props "bootstrap.servers=$BOOTSTRAP" acks=all \
    --command-config "$CONFIG"
"$BIN/rackwise" consumer-perf-test --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" \
    --topic orders --messages 100000 --timeout 30000

step "Broker 1's log directories, as kafka-log-dirs.sh prints them"
"$BIN/rackwise" log-dirs --describe --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" \
    --broker-list 1 --topic-list orders

step "A topic placed badly on purpose: partitions 0-3 with two replicas in /dc1"
"$BIN/rackwise" topics --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" --create \
    --if-not-exists --topic skewed --replica-assignment 1:2:3,2:1:4,1:2:5,2:1:6,1:3:5,2:4:6
"$BIN/rackwise" producer-perf-test --topic skewed --num-records 20000 --record-size 1024 \
    --throughput -1 --producer-props "bootstrap.servers=$BOOTSTRAP" acks=all \
    --command-config "$CONFIG"

step "The running cluster audited through its admin APIs"
"$BIN/rackwise" pipeline audit --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" \
    --out "$RUN_DIR/live-audit"

step "The plan carried out in safe batches under a 10 MB/s throttle, then audited again"
"$BIN/rackwise" rebalance --bootstrap-server "$BOOTSTRAP" --command-config "$CONFIG" \
    --strategy multi-level --throttle 10000000 --execute

stop_cluster
trap - EXIT

step "A data centre lost: the audit's prediction for /dc3 against what the clients see"
"$BIN/python" scripts/rehearse.py

step "A fleet of 8 clusters, generated"
spark "$BIN/rackwise" pipeline generate --clusters 8 --brokers 24 --partitions 4000 \
    --topology dc=3,rack=2 --seed 7 --out "$RUN_DIR/fleet"

step "The fleet audited"
spark "$BIN/rackwise" pipeline audit --fleet "$RUN_DIR/fleet" --out "$RUN_DIR/audit"

step "The fleet planned (moves timed at a throttle of 100 MB/s)"
spark "$BIN/rackwise" pipeline plan --fleet "$RUN_DIR/fleet" --throttle 100000000 \
    --out "$RUN_DIR/plan"

step "Reports"
echo "audit: $RUN_DIR/audit/report.html"
echo "plan:  $RUN_DIR/plan/report.html"
echo "reassignment JSON per cluster: $RUN_DIR/plan/<cluster_id>/reassignment.json"
