#!/usr/bin/env bash
# `make run`: brings up the infrastructure, then every control-plane service that exists under
# services/<name>/main.ts (process hosts by default), each as its own process with pid and log
# files under .run/services, and stays in the foreground: Ctrl-C stops everything it started.
# DROVER_RUN_DETACH=1 returns at once instead; `make stop` (run.sh --stop) stops exactly those
# services, then the infrastructure.
source "$(dirname "$0")/lib.sh"
# DROVER_SERVICES_DIR (and DROVER_RUN_DIR, see lib.sh) move the state elsewhere, e.g. for a test.
export DROVER_SERVICES_DIR="${DROVER_SERVICES_DIR:-$ROOT/.run/services}"
SVC_DIR=$DROVER_SERVICES_DIR
# start order: projections and deciders first, the API last
ORDER=(capacity forensics provisioner recovery admission scheduler api)

if [[ ${1:-} == --stop ]]; then
  # A step that fails ends the stop (set -e) and so Ctrl-C's exit status: say which (CI saw status 2 once).
  trap 'log "stop: \"$BASH_COMMAND\" (run.sh line $LINENO) exited $?"' ERR
  # Tells a foreground `make run` that the services are going on purpose (see the end of this file).
  [[ -d $SVC_DIR ]] && touch "$SVC_DIR/stopping"
  for pidfile in "$SVC_DIR"/*.pid; do
    [[ -f $pidfile ]] || continue
    pid=$(cat "$pidfile"); name=$(basename "$pidfile" .pid)
    # Only a process that is still the one make run started (pid and start time): a stale pid file's
    # pid may belong to anybody by now.
    if owned "$pidfile"; then
      # It may have exited by itself since (Ctrl-C reaches the whole group): gone is what we want.
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      # Wait for a clean exit (the provisioner takes its runtimes down) before the servers go.
      for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL -- "-$pid" 2>/dev/null
      log "$name stopped (pid $pid)"
    fi
    rm -f "$pidfile" "${pidfile%.pid}.start"
  done
  exec "$ROOT/scripts/infra-down.sh"
fi

"$ROOT/scripts/infra-up.sh"
set -a; source "$RUN_DIR/env"; set +a
mkdir -p "$SVC_DIR"
rm -f "$SVC_DIR/stopping"
export DROVER_CONFIG="${DROVER_CONFIG:-$ROOT/config/drover.local.json}"
# make run is a development run: DROVER_DEV=1 lets the services use the development command secret
# (unless DROVER_COMMAND_SECRET is set) and the plaintext tokens of config/drover.local.json.
# Production never sets it (docs/security.md "Secrets and tokens").
export DROVER_DEV="${DROVER_DEV:-1}"
[[ $DROVER_DEV == 1 ]] && log "development mode (DROVER_DEV=1): development command secret and plaintext tokens accepted; never in production"
# NATS: the setup identity makes the streams, the durable consumer and the outputs bucket; each
# service then connects as itself (NATS_CREDS), the provisioner also answering the runtimes' auth callout.
AUTH_DIR="$RUN_DIR/nats-auth"
# The same process writes each service's credentials to $AUTH_DIR/creds (one node start, not one per service).
CREDS_DIR="$AUTH_DIR/creds"
(cd "$ROOT" && node --import tsx scripts/nats-auth.ts setup "$AUTH_DIR" "$CREDS_DIR")
started=()
for svc in "${ORDER[@]}"; do
  main="$ROOT/services/$svc/main.ts"
  [[ -f $main ]] || continue
  pidfile="$SVC_DIR/$svc.pid"
  if owned "$pidfile"; then log "$svc already running (pid $(cat "$pidfile"))"; started+=("$svc"); continue; fi
  # A port file left by an earlier run would name a port nobody listens on any more.
  rm -f "$SVC_DIR/$svc.port"
  # node --import tsx (not the tsx wrapper) so the pid is the service itself and signals reach it.
  creds=$(<"$CREDS_DIR/$svc.creds")
  seed=""; [[ $svc == provisioner ]] && seed=$(<"$CREDS_DIR/callout-seed")
  # Recovery also holds the kicker (system account: disconnects a fenced runtime at once); keys made
  # before the kicker existed have none, and then a fenced runtime's connection ends at its expiry.
  kick=""; [[ $svc == recovery && -f $CREDS_DIR/kicker.creds ]] && kick=$(<"$CREDS_DIR/kicker.creds")
  # Node/V8 flags for measurements, read as platform/node-flags.ts reads them (default none):
  # DROVER_NODE_FLAGS_<SERVICE> if set (even empty), else DROVER_NODE_FLAGS. In bash, not a node per service.
  kind_flags=DROVER_NODE_FLAGS_${svc^^}
  read -ra flags <<<"${!kind_flags-${DROVER_NODE_FLAGS-}}"
  (cd "$ROOT" && NATS_CREDS=$creds DROVER_NATS_CALLOUT_SEED=$seed DROVER_NATS_KICK_CREDS=$kick exec setsid node "${flags[@]}" --import tsx "$main" >"$SVC_DIR/$svc.log" 2>&1 </dev/null) &
  echo $! >"$pidfile"
  record_start "$pidfile"
  started+=("$svc")
done
if ((${#started[@]} == 0)); then
  log "no control-plane service exists yet (services/*/main.ts); only the infrastructure is running"
else
  log "services: ${started[*]} (logs in $SVC_DIR)"
fi
# The api writes its port once it listens; give it a moment rather than print nothing.
if owned "$SVC_DIR/api.pid"; then
  for ((i = 0; i < 150; i++)); do [[ -f $SVC_DIR/api.port ]] && break; owned "$SVC_DIR/api.pid" || break; sleep 0.1; done
  [[ -f $SVC_DIR/api.port ]] || log "api did not report a port; see $SVC_DIR/api.log"
fi
if [[ -f $SVC_DIR/api.port ]]; then
  log "API:       http://127.0.0.1:$(cat "$SVC_DIR/api.port")/v1"
  op=$(node -e 'const c=require(process.argv[1]);const t=Object.entries(c.tokens??{}).find(([,v])=>v.role==="operator");if(t)console.log(t[0])' "$DROVER_CONFIG")
  # The token rides in the URL fragment, which the browser never sends to the server.
  log "dashboard: http://127.0.0.1:$(cat "$SVC_DIR/api.port")/${op:+#token=$op}"
fi
if [[ -f $SVC_DIR/api.port ]]; then
  token=$(node -e 'const c=require(process.argv[1]);const t=Object.entries(c.tokens??{}).find(([,v])=>v.role==="tenant");if(t)console.log(t[0]+" "+t[1].tenantId)' "$DROVER_CONFIG")
  if [[ -n $token ]]; then
    log "try it (tenant ${token#* }):"
    log "  curl -s -H 'authorization: Bearer ${token%% *}' -H 'content-type: application/json' \\"
    log "    -d '{\"dag\":{\"steps\":[{\"id\":\"a\",\"kind\":\"compute\",\"params\":{\"durationMs\":50}}]}}' http://127.0.0.1:$(cat "$SVC_DIR/api.port")/v1/runs"
  fi
fi
if [[ ${DROVER_RUN_DETACH:-0} == 1 ]]; then
  log "running detached; stop everything with: make stop"
  exit 0
fi
log "running; Ctrl-C stops everything make run started (or run make stop from another terminal)"
trap 'echo; "$ROOT/scripts/run.sh" --stop; exit 0' INT TERM
# Stay in the foreground until interrupted; report a service that dies meanwhile (once), and
# return when none is left. `make stop` (which leaves a stopping marker) stops the infrastructure
# itself; when the services all died on their own, this stops the infrastructure.
while ((${#started[@]} > 0)); do
  running=()
  for svc in "${started[@]}"; do
    if owned "$SVC_DIR/$svc.pid"; then running+=("$svc"); else log "$svc exited; see $SVC_DIR/$svc.log"; fi
  done
  started=("${running[@]}")
  ((${#started[@]} > 0)) && { sleep 2 & wait $!; }
done
trap - INT TERM
if [[ ! -f $SVC_DIR/stopping ]]; then
  log "no service is left running; stopping the infrastructure"
  exec "$ROOT/scripts/run.sh" --stop
fi
log "stopped from elsewhere (make stop)"
