#!/usr/bin/env bash
# End-to-end smoke test of docker-compose.yml on a real Docker engine.
#
#   bash tests/e2e/compose_smoke.sh      (from the repo root, as root or with sudo; a few minutes)
#
# Steps (the same as docs/docker.md): engine up (installed and started if missing) → local base
# image (no registry here) and local ZooKeeper image → wheelhouse → image → `up -d` → 3 agents
# registered → the hello framework's tasks FINISHED → kill an agent running tasks: its tasks
# reported LOST/UNREACHABLE and the cluster still runs hello → scale to 5 agents → `--profile ha
# up -d`, the HA cluster beside it: one leader and two standbys, its agents registered; kill the
# leader: another leads (higher epoch), the agents re-register, hello runs through the list of
# masters, the killed master comes back as a standby → `down -v`, nothing left running.
# Every wait is bounded and names what it waited for; the EXIT trap always tears down.
#
# Env: COMPOSE (command, default docker-compose, else `docker compose`), CORRAL_BASE_IMAGE
# (default corral-base:bookworm, built here if missing; python:3.11-slim where a registry is
# reachable), CORRAL_ZOOKEEPER_IMAGE (default corral-zookeeper:bookworm, built here if missing;
# zookeeper:3.8 where a registry is reachable), COMPOSE_PROJECT_NAME (default corralsmoke),
# KEEP_CLUSTER=1 to skip the teardown.
set -euo pipefail

cd "$(dirname "$0")/../.."
REPO=$(pwd)
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-corralsmoke}
export CORRAL_IMAGE=${CORRAL_IMAGE:-corral:smoke}
export CORRAL_BASE_IMAGE=${CORRAL_BASE_IMAGE:-corral-base:bookworm}
export CORRAL_ZOOKEEPER_IMAGE=${CORRAL_ZOOKEEPER_IMAGE:-corral-zookeeper:bookworm}
# A killed leader is replaced in seconds (its ZooKeeper session ends), not after the default 10 s.
export CORRAL_ZK_SESSION_TIMEOUT=${CORRAL_ZK_SESSION_TIMEOUT:-3}
# A killed agent is noticed in seconds (five missed heartbeats), not after the default 15 s.
export CORRAL_AGENT_HEARTBEAT=${CORRAL_AGENT_HEARTBEAT:-1}
export CORRAL_AGENT_TIMEOUT=${CORRAL_AGENT_TIMEOUT:-5}
QUERY="python3 $REPO/tests/e2e/compose_query.py"
MASTER=master:5050

START=$SECONDS
STEP_START=$SECONDS
STEP_NAME=""
TIMINGS=()
CLUSTER_UP=0
SLEEPER=""

# fds 3/4 are the real stderr/stdout: a message from inside a silenced check (wait_for) still
# shows, and the teardown restores them when a check exits the script.
exec 3>&2 4>&1
log() { printf '[compose-smoke %4ds] %s\n' "$((SECONDS - START))" "$*" >&3; }
fail() {
    log "FAILED: $*"
    exit 1
}
step() {
    if [ -n "$STEP_NAME" ]; then TIMINGS+=("$(printf '%-34s %4ds' "$STEP_NAME" "$((SECONDS - STEP_START))")"); fi
    STEP_NAME=$1
    STEP_START=$SECONDS
    log "== $1"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---- teardown: always, on success and on failure ------------------------------------------------
teardown() {
    local rc=$?
    trap - EXIT INT TERM
    exec 1>&4 2>&3
    if [ -n "${WHEELHOUSE_PID:-}" ]; then kill -- "-$WHEELHOUSE_PID" 2>/dev/null || true; fi
    if [ -n "${ZK_IMAGE_PID:-}" ]; then kill -- "-$ZK_IMAGE_PID" 2>/dev/null || true; fi
    if [ "$CLUSTER_UP" = 1 ]; then
        if [ "$rc" != 0 ] && [ -n "$SLEEPER" ]; then
            log "sleeper framework output:"
            docker logs --tail 20 "$SLEEPER" >&2 2>&1 || true
        fi
        if [ -n "$SLEEPER" ]; then docker rm -f "$SLEEPER" >/dev/null 2>&1 || true; fi
        if [ "$rc" != 0 ]; then
            log "diagnostics after failure:"
            compose_ha ps >&2 || true
            compose_ha logs --no-color --tail=40 >&2 || true
        fi
        if [ "${KEEP_CLUSTER:-0}" = 1 ]; then
            log "KEEP_CLUSTER=1: leaving project $COMPOSE_PROJECT_NAME running"
        else
            log "tearing down project $COMPOSE_PROJECT_NAME"
            compose_ha down -v --remove-orphans --timeout 5 >&2 2>&1 || true
            left=$(docker ps -aq --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME")
            if [ -n "$left" ]; then
                log "removing leftover containers: $left"
                # shellcheck disable=SC2086
                docker rm -f $left >/dev/null 2>&1 || true
                [ "$rc" != 0 ] || rc=1
                log "FAILED: containers were left after down"
            fi
        fi
    fi
    if [ "$rc" = 0 ]; then
        step done
        log "timings:"
        for t in "${TIMINGS[@]}"; do log "  $t"; done
        log "PASSED in $((SECONDS - START))s"
    fi
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM

# ---- helpers -------------------------------------------------------------------------------------
compose() { $COMPOSE "$@"; }
# The same with the `ha` profile's services (ZooKeeper, master-1..3, agent-ha, agent-ha-b) on.
compose_ha() { $COMPOSE --profile ha "$@"; }

# corral CLI inside the master container (on the private network, as users would). Through
# `docker exec` on the container's id (set once the cluster is up) rather than `compose exec`:
# the same command in the same container, without starting the compose tool (about 1.5 s with
# docker-compose v1) for each of the checks the waits below repeat.
MASTER_CID=""
CLI_ENV=()  # docker exec options for the CLI (the HA steps run it as the operator admin)
cli() { docker exec "${CLI_ENV[@]}" "$MASTER_CID" corral "$@" --master "$MASTER"; }

# wait_for TIMEOUT DESCRIPTION COMMAND...: retry COMMAND every second until it succeeds.
wait_for() {
    local timeout=$1 what=$2
    shift 2
    local deadline=$((SECONDS + timeout))
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            log "last output of the check: $("$@" 2>&1 | tail -n 5 || true)"
            fail "timed out after ${timeout}s waiting for $what"
        fi
        sleep 1
    done
}

agents() { cli get agents -o json | $QUERY agents; }
tasks() { cli get tasks -o json | $QUERY tasks; }
active_agents() { agents | awk -F'\t' '$2 == "ACTIVE"' | wc -l; }

# has_active_agents N: exactly N ACTIVE agents, with N distinct ids.
has_active_agents() {
    local want=$1 lines
    lines=$(agents) || return 1
    [ "$(awk -F'\t' '$2 == "ACTIVE"' <<<"$lines" | wc -l)" -eq "$want" ] || return 1
    [ "$(awk -F'\t' '$2 == "ACTIVE" {print $1}' <<<"$lines" | sort -u | wc -l)" -eq "$want" ]
}

# count_tasks STATE: tasks in that state (all frameworks).
count_tasks() { tasks | awk -F'\t' -v s="$1" '$4 == s' | wc -l; }

# sleeper_up N: N sleeper tasks RUNNING; fails the test at once if the sleeper container died.
sleeper_up() {
    if [ "$(docker inspect -f '{{.State.Running}}' "$SLEEPER" 2>/dev/null)" != true ]; then
        docker logs --tail 5 "$SLEEPER" >&3 2>&1 || true
        fail "the sleeper framework exited"
    fi
    sleeper_tasks_in "$1" RUNNING
}
sleeper_tasks() { tasks | awk -F'\t' '$1 ~ /^sleep-/'; }
# sleeper_tasks_in N STATE: exactly N sleeper tasks in STATE.
sleeper_tasks_in() { [ "$(sleeper_tasks | awk -F'\t' -v s="$2" '$4 == s' | wc -l)" -eq "$1" ]; }
agent_inactive() { agents | awk -F'\t' -v id="$1" '$1 == id && $2 == "INACTIVE" {f = 1} END {exit !f}'; }
# victim_tasks_lost AGENT N: the N sleeper tasks of AGENT are all LOST or UNREACHABLE.
victim_tasks_lost() {
    [ "$(sleeper_tasks | awk -F'\t' -v id="$1" '$2 == id && ($4 == "LOST" || $4 == "UNREACHABLE")' \
        | wc -l)" -eq "$2" ]
}

# run_hello: the example framework as a one-off container; fails the test unless it exits 0.
run_hello() {
    local out
    if ! out=$(compose run --rm -T --no-deps hello run hello --master "$MASTER" --tasks "$1" 2>&1); then
        printf '%s\n' "$out" | tail -n 20 >&2
        fail "hello framework did not finish its $1 tasks"
    fi
    printf '%s\n' "$out" | tail -n 1 >&2
}

# ---- 1. engine (the wheelhouse builds meanwhile: it needs only the host's Python) ---------------
WHEELHOUSE_LOG=$(mktemp /tmp/corral-smoke-wheelhouse.XXXXXX.log)
# Its own process group, so a failing run can stop pip too.
setsid bash scripts/build_wheelhouse.sh >"$WHEELHOUSE_LOG" 2>&1 &
WHEELHOUSE_PID=$!
step "docker engine"
bash scripts/ensure_docker.sh
if [ -z "${COMPOSE:-}" ]; then
    if command -v docker-compose >/dev/null 2>&1; then COMPOSE=docker-compose
    elif docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"
    else fail "no compose tool (docker-compose or docker compose)"; fi
fi
log "compose: $($COMPOSE version 2>/dev/null | head -n 1)"
# A previous run that was killed hard may have left its project behind.
compose_ha down -v --remove-orphans --timeout 5 >/dev/null 2>&1 || true

# ---- 2. images -----------------------------------------------------------------------------------
step "base image ($CORRAL_BASE_IMAGE)"
if ! docker image inspect "$CORRAL_BASE_IMAGE" >/dev/null 2>&1; then
    case "$CORRAL_BASE_IMAGE" in
        corral-base:*) bash scripts/build_base_image.sh "$CORRAL_BASE_IMAGE" ;;
        *) docker pull "$CORRAL_BASE_IMAGE" >&2 || fail "cannot pull $CORRAL_BASE_IMAGE" ;;
    esac
fi
# The `ha` profile's ZooKeeper: built from the base image (about a minute, once) in the background
# while the wheelhouse and Corral's image build.
ZK_IMAGE_LOG=""
if ! docker image inspect "$CORRAL_ZOOKEEPER_IMAGE" >/dev/null 2>&1; then
    case "$CORRAL_ZOOKEEPER_IMAGE" in
        corral-zookeeper:*)
            ZK_IMAGE_LOG=$(mktemp /tmp/corral-smoke-zookeeper.XXXXXX.log)
            BASE_IMAGE=$CORRAL_BASE_IMAGE setsid bash scripts/build_zookeeper_image.sh \
                "$CORRAL_ZOOKEEPER_IMAGE" >"$ZK_IMAGE_LOG" 2>&1 &
            ZK_IMAGE_PID=$!
            ;;
        *) docker pull "$CORRAL_ZOOKEEPER_IMAGE" >&2 || fail "cannot pull $CORRAL_ZOOKEEPER_IMAGE" ;;
    esac
fi
step "wheelhouse (parallel build)"
if ! wait "$WHEELHOUSE_PID"; then
    cat "$WHEELHOUSE_LOG" >&2
    fail "wheelhouse build failed"
fi
WHEELHOUSE_PID=""
cat "$WHEELHOUSE_LOG" >&2
rm -f "$WHEELHOUSE_LOG"
step "image build ($CORRAL_IMAGE)"
compose_ha config -q || fail "docker-compose.yml is not valid for $COMPOSE"
compose build -q master >&2 || fail "image build failed"
docker run --rm "$CORRAL_IMAGE" --help >/dev/null || fail "corral --help fails in the image"
if [ -n "$ZK_IMAGE_LOG" ]; then
    step "zookeeper image ($CORRAL_ZOOKEEPER_IMAGE, parallel build)"
    if ! wait "$ZK_IMAGE_PID"; then
        cat "$ZK_IMAGE_LOG" >&2
        fail "zookeeper image build failed"
    fi
    ZK_IMAGE_PID=""
    cat "$ZK_IMAGE_LOG" >&2
    rm -f "$ZK_IMAGE_LOG"
fi

# ---- 3. cluster up, 3 agents, hello FINISHED -----------------------------------------------------
step "compose up, 3 agents registered"
CORRAL_GRPC_PORT=${CORRAL_GRPC_PORT:-$(free_port)}
CORRAL_HTTP_PORT=${CORRAL_HTTP_PORT:-$(free_port)}
CORRAL_SERVING_PORT=${CORRAL_SERVING_PORT:-$(free_port)}
export CORRAL_GRPC_PORT CORRAL_HTTP_PORT CORRAL_SERVING_PORT
CLUSTER_UP=1
compose up -d --no-build >&2 || fail "compose up failed"
MASTER_CID=$(compose ps -q master | head -n 1)
[ -n "$MASTER_CID" ] || fail "no master container after compose up"
# HTTPS: /health needs no credential; the certificate is the cluster's own CA's, not checked
# from the host here (the services inside check each other's).
wait_for 60 "master /health on published port $CORRAL_HTTP_PORT" \
    python3 -c "import ssl,urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2, context=ssl._create_unverified_context())" \
    "https://127.0.0.1:$CORRAL_HTTP_PORT/health"
step "TLS: plain text and a client without a certificate are refused"
if docker exec "$MASTER_CID" corral get agents --master "$MASTER" --insecure --timeout 3 >/dev/null 2>&1; then
    fail "a plain-text client was answered by the master"
fi
code=$(python3 -c "import ssl,urllib.request,urllib.error,sys
try: urllib.request.urlopen(sys.argv[1], timeout=5, context=ssl._create_unverified_context())
except urllib.error.HTTPError as e: print(e.code)" "https://127.0.0.1:$CORRAL_HTTP_PORT/api/v1/state")
[ "$code" = 401 ] || fail "the state without a certificate or token answered $code, want 401"
wait_for 90 "3 agents registered and active" has_active_agents 3
log "agents: $(agents | tr '\t\n' ' ;')"

step "hello framework (compose service)"
# -a: v2 lists only running containers without it (hello may have exited already).
hello_cid=$(compose ps -a -q hello | head -n 1)
[ -n "$hello_cid" ] || fail "no hello container"
hello_rc=$(timeout 120 docker wait "$hello_cid") || fail "hello service did not exit within 120s"
[ "$hello_rc" = 0 ] || fail "hello service exited $hello_rc: $(docker logs --tail 20 "$hello_cid" 2>&1)"
finished=$(count_tasks FINISHED)
[ "$finished" -ge 10 ] || fail "master reports $finished FINISHED tasks, want >= 10"
log "master reports $finished FINISHED tasks"

# ---- 3b. the serving service: an app through its API -------------------------------------------
step "serving service: an app through its API"
# `corral app` in the master container (the operator credential) talks to https://serving:5090.
serving_app() { compose exec -T master corral app "$@"; }
app_succeeded() { serving_app status smoke 2>/dev/null | grep -q "succeeded"; }
SMOKE_APP=$(mktemp /tmp/corral-smoke-app.XXXXXX.json)
printf '{"id": "smoke", "command": "exec sleep 600", "instances": 2, "cpus": 0.1, "mem": 32}' \
    >"$SMOKE_APP"
apply_smoke() { serving_app apply -f - <"$SMOKE_APP"; }
wait_for 60 "the serving service to take an app" apply_smoke
rm -f "$SMOKE_APP"
wait_for 90 "app smoke's deployment succeeded" app_succeeded
log "$(serving_app list | tr -s ' ' | tr '\n' ';')"
serving_app delete smoke >&2 || fail "corral app delete smoke failed"

# ---- 4. kill an agent running tasks --------------------------------------------------------------
step "kill an agent, tasks reported"
log "starting the sleeper framework: 4 long tasks, at most 2 per agent"
SLEEPER=$(compose run -d --no-deps -v "$REPO/tests/e2e/sleeper.py:/opt/sleeper.py:ro" --entrypoint python3 \
    hello /opt/sleeper.py --master "$MASTER" --tasks 4 --per-agent 2 | tail -n 1) \
    || fail "could not start the sleeper framework"
wait_for 90 "4 sleeper tasks RUNNING" sleeper_up 4
victim=$(sleeper_tasks | awk -F'\t' '$4 == "RUNNING" {print $2}' | sort | uniq -c | sort -rn \
    | awk 'NR == 1 {print $2}')
zone=$(agents | awk -F'\t' -v id="$victim" '$1 == id {print $3}')
case "$zone" in
    a) service=agent ;;
    b) service=agent-b ;;
    c) service=agent-spot ;;
    *) fail "agent $victim (running sleeper tasks) has unknown zone '$zone'" ;;
esac
on_victim=$(sleeper_tasks | awk -F'\t' -v id="$victim" '$2 == id' | wc -l)
log "killing $service (agent $victim, zone $zone, $on_victim sleeper tasks)"
docker kill "$(compose ps -q "$service" | head -n 1)" >/dev/null || fail "docker kill $service failed"
wait_for 60 "agent $victim reported inactive" agent_inactive "$victim"
wait_for 60 "the $on_victim sleeper tasks of agent $victim reported LOST or UNREACHABLE" \
    victim_tasks_lost "$victim" "$on_victim"
sleeper_tasks_in $((4 - on_victim)) RUNNING || fail "sleeper tasks on other agents are no longer RUNNING"
log "tasks: $(sleeper_tasks | awk -F'\t' '{print $1 "=" $4}' | tr '\n' ' ')"
log "cluster still works: running hello again"
before=$(count_tasks FINISHED)
run_hello 10
after=$(count_tasks FINISHED)
[ "$after" -ge $((before + 10)) ] || fail "FINISHED tasks went from $before to $after, want +10"

# ---- 5. scale to 5 agents ------------------------------------------------------------------------
step "scale to 5 agents"
# Brings the killed agent back too (it re-registers) and adds two zone-a agents.
compose up -d --no-build --no-recreate --no-deps --scale agent=3 agent agent-b agent-spot >&2 || fail "compose up --scale failed"
wait_for 90 "5 agents registered and active with distinct ids" has_active_agents 5
log "agents: $(agents | tr '\t\n' ' ;')"

# ---- 6. the `ha` profile: one leader, two standbys; kill the leader ------------------------------
step "ha: compose --profile ha up, one leader, two standbys"
docker rm -f "$SLEEPER" >/dev/null 2>&1 || true
SLEEPER=""
# The profile's services, named: a bare `--profile ha up -d` would also converge the running
# cluster back to its file (one zone-a agent, hello run again). Up returns once ZooKeeper is
# healthy and the masters and agents are created.
HA_SERVICES=(zookeeper master-1 master-2 master-3 agent-ha agent-ha-b)
compose_ha up -d --no-build "${HA_SERVICES[@]}" >&2 || fail "compose --profile ha up failed"
declare -A HA_CID
for m in master-1 master-2 master-3; do
    HA_CID[$m]=$(compose_ha ps -q "$m" | head -n 1)
    [ -n "${HA_CID[$m]}" ] || fail "no $m container after compose --profile ha up"
done
# From here on the CLI checks ask the HA cluster, from its agent-ha container, given the list of
# masters (the CLI finds the leader among them); agent-ha finds it in ZooKeeper, agent-ha-b
# through the list.
MASTER=master-1:5050,master-2:5050,master-3:5050
MASTER_CID=$(compose_ha ps -q agent-ha | head -n 1)
[ -n "$MASTER_CID" ] || fail "no agent-ha container after compose --profile ha up"
# The agent container's own credential is an agent's; the CLI asks as the operator admin.
CLI_ENV=(-e CORRAL_TLS_DIR=/var/lib/corral/pki/admin)

# masters_health: NAME ROLE LEADER EPOCH of master-1..3, from their /health, asked from the
# agent-ha container in one exec (ROLE "down" for a master that does not answer).
HEALTH_PY='import json, ssl, sys, urllib.request
def health(host):
    try:
        # /health answers without a client certificate; the masters share one certificate,
        # which names master.corral, not master-N: no name check here.
        context = ssl._create_unverified_context()
        with urllib.request.urlopen(f"https://{host}:5080/health", timeout=2, context=context) as reply:
            return json.load(reply)
    except OSError:
        return None
print(json.dumps({host: health(host) for host in sys.argv[1:]}))'
masters_health() {
    docker exec "$MASTER_CID" python3 -c "$HEALTH_PY" master-1 master-2 master-3 | $QUERY health
}
# one_leader AMONG...: exactly one of those masters leads and each of the others is a standby
# naming it (sets LEADER, EPOCH and ROLES).
one_leader() {
    local lines among=" $* "
    lines=$(masters_health) || return 1
    ROLES=$(awk -F'\t' '{printf "%s=%s ", $1, $2}' <<<"$lines")
    LEADER=$(awk -F'\t' -v among="$among" 'index(among, " " $1 " ") && $2 == "leader" {print $1}' <<<"$lines")
    [ -n "$LEADER" ] && [ "$(wc -l <<<"$LEADER")" -eq 1 ] || return 1
    EPOCH=$(awk -F'\t' -v l="$LEADER" '$1 == l {print $4}' <<<"$lines")
    awk -F'\t' -v among="$among" -v l="$LEADER" '
        index(among, " " $1 " ") && $1 != l && !($2 == "standby" && $3 == l ":5050") {bad = 1}
        END {exit bad}' <<<"$lines"
}
active_ids() { agents | awk -F'\t' '$2 == "ACTIVE" {print $1}' | sort | tr '\n' ' '; }
same_agents_active() { has_active_agents 2 && [ "$(active_ids)" = "$HA_AGENTS" ]; }

LEADER=""
EPOCH=""
wait_for 90 "one leader and two standbys among master-1..3" one_leader master-1 master-2 master-3
log "roles: $ROLES(leader epoch $EPOCH)"
wait_for 90 "the 2 HA agents (agent-ha, agent-ha-b) registered and active" has_active_agents 2
HA_AGENTS=$(active_ids)
log "HA agents: $(agents | tr '\t\n' ' ;')"

step "ha: kill the leader, a standby takes over"
old=$LEADER
old_epoch=$EPOCH
mapfile -t others < <(printf '%s\n' master-1 master-2 master-3 | grep -vx "$old")
log "killing the leader $old (epoch $old_epoch)"
killed_at=$(date +%s.%N)
docker kill "${HA_CID[$old]}" >/dev/null || fail "docker kill $old failed"
wait_for 60 "a new leader among ${others[*]}" one_leader "${others[@]}"
led_at=$(date +%s.%N)
[ "$EPOCH" -gt "$old_epoch" ] || fail "new leader $LEADER has epoch $EPOCH, not above $old_epoch"
wait_for 60 "the same 2 agents active again with the new leader $LEADER" same_agents_active
back_at=$(date +%s.%N)
# Seen at the first check after it happened: each figure is at most about a second late.
since() { awk -v a="$killed_at" -v b="$1" 'BEGIN {printf "%.1f", b - a}'; }
log "new leader $LEADER (epoch $EPOCH) seen $(since "$led_at")s after the kill;" \
    "agents re-registered after $(since "$back_at")s"
new_leader=$LEADER
log "offers flow from the new leader: running hello through the list of masters"
run_hello 5
log "restarting $old: it must join as a standby"
docker start "${HA_CID[$old]}" >/dev/null || fail "docker start $old failed"
wait_for 60 "$old back as a standby" one_leader master-1 master-2 master-3
[ "$LEADER" = "$new_leader" ] || fail "the restarted $old changed the leader: $LEADER leads, not $new_leader"
log "roles: $ROLES(leader epoch $EPOCH)"

# ---- 7. teardown ---------------------------------------------------------------------------------
step "teardown"
compose_ha down -v --remove-orphans --timeout 5 >&2 || fail "compose down failed"
CLUSTER_UP=0
left=$(docker ps -aq --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME")
[ -z "$left" ] || fail "containers left after down: $left"
vols=$(docker volume ls -q --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME")
[ -z "$vols" ] || fail "volumes left after down -v: $vols"
