#!/usr/bin/env bash
# Starts nats-server (JetStream), FerretDB (SQLite) and Redis on loopback, idempotently.
# Ports: NATS_PORT / MONGO_PORT / REDIS_PORT when set, else free ports chosen now.
# Writes pid files and $RUN_DIR/env (NATS_URL, MONGO_URL, REDIS_URL); stops nothing it did not start.
source "$(dirname "$0")/lib.sh"
"$ROOT/scripts/install-tools.sh"
mkdir -p "$RUN_DIR"
ENV_FILE="$RUN_DIR/env"
declare -A PORTS=()

start() { # start NAME PORTVAR CMD...
  local name=$1 var=$2; shift 2
  local pidfile="$RUN_DIR/$name.pid" portfile="$RUN_DIR/$name.port" port
  if owned "$pidfile" && [[ -f $portfile ]]; then
    port=$(cat "$portfile"); PORTS[$var]=$port; log "$name already running (pid $(cat "$pidfile"), port $port)"; return 0
  fi
  port=${!var:-}
  if [[ -z $port ]]; then port=$(free_port); elif port_open "$port"; then log "$var=$port is taken"; return 1; fi
  echo "$port" >"$portfile"
  PORTS[$var]=$port
  local cmd=("${@//\{PORT\}/$port}")
  setsid "${cmd[@]}" >"$RUN_DIR/$name.log" 2>&1 < /dev/null &
  echo $! >"$pidfile"
  record_start "$pidfile"
  wait_port "$port" 60 "$name" "$pidfile"
  log "$name started (pid $(cat "$pidfile"), 127.0.0.1:$port)"
}

mkdir -p "$RUN_DIR/nats" "$RUN_DIR/ferretdb/data" "$RUN_DIR/ferretdb/state"
# Authentication is on: keys and the configuration come from scripts/nats-auth.ts (docs/nats-identities.md).
# The configuration names its port, so it is written once the port is known (NATS_PORT or a free one).
AUTH_DIR="$RUN_DIR/nats-auth"
# NATS_CLUSTER=3: a 3-node JetStream cluster (nats-1..3, each its own store dir and server_name n<i>),
# the same accounts and identities on every node; NATS_URL lists every seed and NATS_REPLICAS=3.
NATS_CLUSTER=${NATS_CLUSTER:-1}
if [[ $NATS_CLUSTER == 1 ]]; then
  if ! owned "$RUN_DIR/nats.pid"; then
    NATS_PORT=${NATS_PORT:-$(free_port)}
    (cd "$ROOT" && node --import tsx scripts/nats-auth.ts config "$AUTH_DIR" 127.0.0.1 "$NATS_PORT" "$RUN_DIR/nats")
  fi
  start nats NATS_PORT "$TOOLS_BIN/nats-server" -c "$AUTH_DIR/nats.conf"
  NATS_SEEDS="nats://127.0.0.1:${PORTS[NATS_PORT]}"
else
  [[ $NATS_CLUSTER =~ ^[0-9]+$ && $NATS_CLUSTER -ge 3 && $((NATS_CLUSTER % 2)) == 1 ]] || { log "NATS_CLUSTER must be 1 or an odd number >= 3"; exit 1; }
  if ! owned "$RUN_DIR/nats-1.pid"; then
    read -r -a ports <<<"$(free_ports $((2 * NATS_CLUSTER)))"
    clients=("${ports[@]:0:NATS_CLUSTER}") routes=("${ports[@]:NATS_CLUSTER}")
    (IFS=,; cd "$ROOT" && node --import tsx scripts/nats-auth.ts cluster-config "$AUTH_DIR" 127.0.0.1 "$RUN_DIR/nats" "${clients[*]}" "${routes[*]}")
    for ((i = 1; i <= NATS_CLUSTER; i++)); do declare "NATS_PORT_$i=${clients[i - 1]}"; done
  fi
  NATS_SEEDS=""
  for ((i = 1; i <= NATS_CLUSTER; i++)); do
    start "nats-$i" "NATS_PORT_$i" "$TOOLS_BIN/nats-server" -c "$AUTH_DIR/nats-$i.conf"
    port_var="NATS_PORT_$i"; NATS_SEEDS+="${NATS_SEEDS:+,}nats://127.0.0.1:${PORTS[$port_var]}"
  done
  PORTS[NATS_PORT]=${PORTS[NATS_PORT_1]}
fi
# synchronous(normal): no fsync per commit (read models are rebuilt from JetStream; see platform/local-servers.ts).
start ferretdb MONGO_PORT "$TOOLS_BIN/ferretdb" --handler=sqlite --sqlite-url="file:$RUN_DIR/ferretdb/data/?_pragma=synchronous(normal)" \
  --listen-addr='127.0.0.1:{PORT}' --state-dir="$RUN_DIR/ferretdb/state" --debug-addr=- --telemetry=disable --log-level=warn
start redis REDIS_PORT redis-server --bind 127.0.0.1 --port '{PORT}' --save '' --appendonly no --protected-mode yes

cat >"$ENV_FILE" <<ENV
NATS_PORT=${PORTS[NATS_PORT]}
MONGO_PORT=${PORTS[MONGO_PORT]}
REDIS_PORT=${PORTS[REDIS_PORT]}
NATS_URL='$NATS_SEEDS'
NATS_REPLICAS=$NATS_CLUSTER
MONGO_URL='mongodb://127.0.0.1:${PORTS[MONGO_PORT]}/?directConnection=true&retryWrites=false'
REDIS_URL='redis://127.0.0.1:${PORTS[REDIS_PORT]}'
ENV
# NATS_TLS=1: nats-server takes TLS clients only; every client verifies it against the generated CA.
[[ ${NATS_TLS:-} == 1 ]] && echo "NATS_CA_FILE='$AUTH_DIR/tls/ca.pem'" >>"$ENV_FILE"
log "infrastructure is up; environment in $ENV_FILE:"
grep _URL "$ENV_FILE" | tr -d "'" | sed 's/^/  /' >&2
