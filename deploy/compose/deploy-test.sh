#!/usr/bin/env bash
# The compose deploy, run for real (`make deploy-test`, after `make images compose`; also part of
# `make test`). Every command is one a user would type (deploy/README.md lists them); it fails, never
# skips, when a step does not hold.
#
# 1. Secrets (secrets.sh), and the alert rules checked by promtool in the Prometheus image.
# 2. `compose up -d --wait`: every healthcheck passes (kafka-init has applied the ACLs of every
#    service's principal first); the consumer's principal is refused a write into the decision log.
# 3. A real-format access log of LINES lines (`onceflow logproducer sample`: nginx/Apache lines with
#    malformed ones among them), then the log producer (the access-log-file connector) tails it into
#    ip_count_source; both jobs read it in micro-batches of at most 10,000 records.
# 4. While the jobs run, one after another: `docker kill` a Kafka broker, a Spark worker, a participant
#    shard and the coordinator, each started again once the job has moved on (as an orchestrator
#    would); then `compose restart` of the whole stack.
# 5. The audit in the consumer container: every line of the log accounted for (events + dead letters),
#    every sink of the IP-count job and the consumer's store EXACT; the replay audit of the traffic
#    job EXACT.
# 6. Broken settings: a bad DSN and a missing token file each leave a container that never gets
#    healthy and whose log names the setting.
# 7. `compose down -v` (also when a step failed, after printing the services' logs).
set -euo pipefail

cd "$(dirname "$0")/../.."
COMPOSE_FILE=deploy/compose/docker-compose.yml
compose() { docker compose -f "$COMPOSE_FILE" "$@"; }
LINES=${DEPLOY_TEST_LINES:-100000}
SEED=${DEPLOY_TEST_SEED:-23}
# Host ports: whatever is free (the test talks to the services inside their containers).
export RESULTS_API_PORT="" PROMETHEUS_PORT="" SPARK_MAX_OFFSETS_PER_TRIGGER=${SPARK_MAX_OFFSETS_PER_TRIGGER:-10000}
START=$(date +%s)
PHASE_START=$START

say() { printf 'deploy-test [%4ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }
# The host's load with each phase: a slow run says whether something else was using the cores.
load() { printf 'load %s' "$(cut -d' ' -f1-3 /proc/loadavg)"; }
phase() {
  say "$1 done in $(( $(date +%s) - PHASE_START ))s ($(load))"
  PHASE_START=$(date +%s)
}
FAILURE=""
fail() {
  FAILURE=$*
  say "FAILED: $*"
  exit 1
}

on_exit() {
  local status=$?
  if [ "$status" -ne 0 ]; then
    # Every log in full to a file; here, the onceflow services' errors, then the state of every container.
    compose -f deploy/compose/test/broken-settings.yml logs --no-color --timestamps >.cache/deploy-test-logs.txt 2>&1 || true
    say "the services' errors (every log: .cache/deploy-test-logs.txt):"
    # (not librdkafka's connection lines, which every broker restart fills the logs with)
    grep -v -E '^(spark-|kafka-|postgres|prometheus)|\|[0-9]+\|[A-Z]+\|rdkafka|%[0-9]\|' .cache/deploy-test-logs.txt \
      | grep -E ' (ERROR|CRITICAL|FATAL) |Traceback|[A-Za-z]+(Error|Exception):|onceflow[a-z -]*: (error|invalid)|exited' \
      | tail -n 40 | cut -c1-400 || true
    say "the processes using the host's cores ($(load)):"
    ps -eo pcpu,etimes,args --sort=-pcpu | head -n 6 | cut -c1-160 || true
    compose -f deploy/compose/test/broken-settings.yml ps -a --format '{{.Service}}: {{.Status}}' || true
  fi
  say "compose down -v"
  compose -f deploy/compose/test/broken-settings.yml down -v --remove-orphans --timeout 20 >/dev/null 2>&1 \
    || compose -f deploy/compose/test/broken-settings.yml down -v --remove-orphans --timeout 20 \
    || { say "compose down -v failed (see above): remove the project 'onceflow' by hand"; status=1; }
  if [ "$status" -eq 0 ]; then say "PASSED in $(( $(date +%s) - START ))s"
  # The reason again, last: a CI log that keeps only its tail still says what failed.
  else say "FAILED after $(( $(date +%s) - START ))s: ${FAILURE:-a command exited $status (see above)}"; fi
  exit "$status"
}
trap on_exit EXIT
set -E
trap 'FAILURE=${FAILURE:-"line $LINENO: $BASH_COMMAND exited $?"}' ERR

docker info >/dev/null 2>&1 || fail "no Docker engine answers: run 'make docker' (it installs and starts one, as root)"
docker compose version >/dev/null 2>&1 || fail "no 'docker compose' (v2): run 'make compose'"

# Step 1
bash deploy/compose/secrets.sh
docker run --rm -v "$PWD/deploy/compose/prometheus:/etc/prometheus:ro" -w /etc/prometheus --entrypoint promtool \
  "${PROMETHEUS_IMAGE:-onceflow-prometheus:local}" test rules rules.test.yml
docker run --rm -v "$PWD/deploy/compose/prometheus:/etc/prometheus:ro" --entrypoint promtool \
  "${PROMETHEUS_IMAGE:-onceflow-prometheus:local}" check config /etc/prometheus/prometheus.yml >/dev/null
say "alert rules: promtool test rules and check config ok ($(nproc) cores, $(load))"
# Processes a test suite left behind (make test runs this after pytest) would slow every step: name them.
leftover=$(ps -eo pid,pcpu,args | grep -E 'pytest-of-|onceflow-pg-' | grep -v -E 'grep|pytest ' | cut -c1-160 || true)
[ -z "$leftover" ] || say "WARNING: processes left by the tests are still running:"$'\n'"$leftover"

# Step 2
compose down -v --remove-orphans >/dev/null 2>&1 || true
compose up -d --wait --wait-timeout 900 || fail "not every service got healthy"
phase "compose up (every healthcheck passing)"

# last_lines REPORT: a command's last lines on one line (not Java stack frames, warnings, Spark's
# progress bars, which are carriage-return lines, or librdkafka's connection lines)
last_lines() {
  tr '\r' '\n' <"$1" | grep -v -E '^\s+at |WARN |^\s*\[Stage [0-9]+|^\s*$|^%[0-9]\|' | tail -n 6 | cut -c1-200 | tr '\n' '|'
}
# in_service NAME SERVICE COMMAND...: COMMAND in SERVICE's container, its output in
# .cache/deploy-test-NAME.txt (the tail shown); if it fails, the failure names it, its exit status and
# its last lines, so that a CI log that keeps only its tail still says why. An exec that the Docker
# engine itself refused before COMMAND ran (its daemon or the OCI runtime says so) is tried once more,
# and the log says it was.
in_service() {
  local name=$1 service=$2 report=.cache/deploy-test-$1.txt status=0
  shift 2
  say "$name: $* (in $service)"
  compose exec -T "$service" "$@" >"$report" 2>&1 || status=$?
  if [ "$status" -ne 0 ] && grep -q -E '^Error response from daemon|OCI runtime exec failed' "$report"; then
    say "$name: the engine refused the exec ($(head -n 1 "$report" | cut -c1-200)); once more"
    status=0
    compose exec -T "$service" "$@" >"$report" 2>&1 || status=$?
  fi
  grep -v -E '^\s+at |WARN (Utils|NativeCodeLoader)' "$report" | tail -n 25 || true  # (an empty output is fine)
  [ "$status" -eq 0 ] || fail "$name: exited $status in $service; its last lines: $(last_lines "$report") (all: $report)"
}

# metric SERVICE NAME: the value of NAME (a gauge without labels but the job's) at SERVICE's /metrics
metric() {
  compose exec -T "$1" python -c "
import re, sys, urllib.request
text = urllib.request.urlopen('http://127.0.0.1:9466/metrics', timeout=10).read().decode()
values = [float(m.group(1)) for m in re.finditer(r'^$2(?:\{[^}]*\})? (\S+)$', text, re.M)]
print(int(max(values)) if values else -1)" 2>/dev/null || echo -1
}
# wait_for_batch N: until the IP-count job has completed micro-batch N (or 10 minutes passed)
wait_for_batch() {
  local deadline=$(( $(date +%s) + 600 )) batch
  while :; do
    batch=$(metric job-ipcount onceflow_spark_last_batch_id)
    [ "$batch" -ge "$1" ] && { say "ipcount completed batch $batch"; return 0; }
    [ "$(date +%s)" -lt "$deadline" ] || fail "the IP-count job did not reach batch $1 (last: $batch)"
    sleep 3
  done
}

# Least privilege: kafka-init applied each service's ACLs (`onceflow acls apply`) and nothing else is
# allowed. The consumer's principal, with its own login from its config, may not forge a decision.
refused=$(compose exec -T consumer python -c "
from confluent_kafka import Producer
from onceflow.consumer.settings import ConsumerSettings
from onceflow.core.settings import load_settings
kafka = load_settings(ConsumerSettings, '/etc/onceflow/compose/consumer.toml').kafka
outcome = []
producer = Producer(kafka.client_config(**{'message.timeout.ms': 20000}))
producer.produce('_onceflow_coordinator_log', b'forged', on_delivery=lambda err, _: outcome.append(err.name() if err else 'NO_ERROR'))
producer.flush(30)
print(outcome[0] if outcome else 'no delivery report')" 2>&1 | tail -n 1)
[ "$refused" = "TOPIC_AUTHORIZATION_FAILED" ] \
  || fail "the consumer's principal producing into _onceflow_coordinator_log got '$refused', not TOPIC_AUTHORIZATION_FAILED"
say "ACLs: the consumer's principal is refused the decision log ($refused)"

# Step 3
in_service sample connect-worker onceflow logproducer sample --lines "$LINES" --seed "$SEED" \
  --out /var/lib/onceflow/input/access.log
in_service create-connector connect-worker onceflow connect --token-file /run/secrets/grpc_token \
  create access-log-file --file /etc/onceflow/compose/access-log-file.json
phase "a real-format log of $LINES lines written, the log producer started"

# Step 4
# active_coordinator: the coordinator that reports SERVING (the standby reports NOT_SERVING)
active_coordinator() {
  local service
  for service in coordinator-1 coordinator-2; do
    if compose exec -T "$service" python -c "import grpc, sys; from grpc_health.v1 import health_pb2 as h, \
health_pb2_grpc as g; sys.exit(g.HealthStub(grpc.insecure_channel('127.0.0.1:7100')).Check(h.HealthCheckRequest(), \
timeout=4).status != 1)" >/dev/null 2>&1; then echo "$service"; return 0; fi
  done
  fail "no coordinator reports SERVING"
}
# kill_and_return SERVICE BATCH: once the IP-count job completed BATCH, docker kill SERVICE, and start it
# again DOWN_S later (as an orchestrator would); the others keep running meanwhile
kill_and_return() {
  local service=$1 batch=$2 container
  wait_for_batch "$batch"
  container=$(compose ps -q "$service")
  [ -n "$container" ] || fail "no container of $service"
  say "docker kill $service"
  docker kill "$container" >/dev/null
  sleep "${DEPLOY_TEST_DOWN_S:-15}"
  say "docker start $service"
  docker start "$container" >/dev/null
}
kill_and_return kafka-2 1
kill_and_return spark-worker-1 2
kill_and_return participant-1 3
active=$(active_coordinator)
say "the active coordinator is $active"
kill_and_return "$active" 4
wait_for_batch 5
say "docker compose restart (every service)"
compose restart >/dev/null
phase "kills of a broker, a Spark worker, a participant shard and the active coordinator, and a restart of all"

# Step 5
audit() {  # audit NAME SERVICE COMMAND...: an audit command in SERVICE's container, EXACT or fail
  in_service "$@"
  tail -n 1 ".cache/deploy-test-$1.txt" | grep -q "EXACT" \
    || fail "$1: the audit is not EXACT; its last lines: $(last_lines ".cache/deploy-test-$1.txt")"
}
audit audit consumer onceflow audit --input /var/lib/onceflow/input/access.log --config /etc/onceflow/compose/consumer.toml --wait 900
audit replay job-traffic onceflow job audit /etc/onceflow/compose/traffic.toml \
  --participant-config /etc/onceflow/compose/participant-0.toml --master 'local[2]'
phase "audits"

# Step 6
broken() {  # broken SERVICE COMMAND SETTING: never healthy, and its log has the error naming SETTING
  local service=$1 command=$2 setting=$3 deadline=$(( $(date +%s) + 120 )) container state error
  compose -f deploy/compose/test/broken-settings.yml up -d --no-deps "$service" >/dev/null 2>&1
  container=$(compose -f deploy/compose/test/broken-settings.yml ps -a -q "$service")
  while :; do
    state=$(docker inspect -f '{{.State.Status}} exit={{.State.ExitCode}} restarts={{.RestartCount}} health={{if .State.Health}}{{.State.Health.Status}}{{end}}' "$container")
    case "$state" in *health=healthy*) fail "$service got healthy with a broken $setting" ;; esac
    # The service's own error line: "onceflow <command>: invalid setting '<setting>' ..."
    error=$(docker logs "$container" 2>&1 | grep -m 1 "^onceflow $command: .*'$setting'" || true)
    if [ -n "$error" ]; then
      case "$state" in *restarts=0*exit=0*|running*restarts=0*) ;; *)
        say "$service: $state; its log: $(printf '%s' "$error" | cut -c1-240)"; return 0 ;; esac
    fi
    [ "$(date +%s)" -lt "$deadline" ] || fail "$service ($state) never logged an error naming $setting"
    sleep 2
  done
}
broken consumer-bad-dsn consumer store.dsn
broken coordinator-no-token coordinator server.auth.token_file
phase "broken settings"
